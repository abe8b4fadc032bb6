// Which addresses the server may listen on without protection. With neither TLS nor tokens any
// client that can connect may read, write and define models: acceptable on loopback (a
// developer's machine), refused elsewhere unless the operator says --insecure.

export interface Protection {
  /** host:port, as --listen takes it. */
  listen: string;
  tls: boolean;
  tokens: boolean;
  insecure: boolean;
}

/** The listen address names a non-loopback interface while nothing protects the server. */
export class BindRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BindRuleError';
  }
}

/**
 * Throws BindRuleError for an unprotected non-loopback address without --insecure; otherwise
 * returns the warning to log once when the server is unprotected, or undefined.
 */
export function checkBindRule(protection: Protection): string | undefined {
  if (protection.tls || protection.tokens) return undefined;
  if (!isLoopback(protection.listen) && !protection.insecure) {
    throw new BindRuleError(
      `refusing to listen on ${protection.listen} without TLS or tokens: anyone who reaches it could ` +
        'read, write and define models. Protect it with --tls-cert/--tls-key and/or --tokens-file, ' +
        'listen on 127.0.0.1, or pass --insecure to serve it unprotected anyway',
    );
  }
  return 'serving without TLS or tokens: every client that can connect may read, write and define models';
}

/** Whether only this machine can reach the address (loopback host or a Unix socket). */
export function isLoopback(listen: string): boolean {
  if (/^unix(-abstract)?:/.test(listen)) return true;
  const address = listen.replace(/^(dns|ipv4|ipv6):(\/\/\/)?/, '');
  const colon = address.lastIndexOf(':');
  const host = address.startsWith('[')
    ? address.slice(1, address.indexOf(']'))
    : colon < 0
      ? address
      : address.slice(0, colon);
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
