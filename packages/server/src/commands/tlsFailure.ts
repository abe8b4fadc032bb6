// TLS handshake failures, recognised in the details of an UNAVAILABLE: grpc-js passes on Node's
// or OpenSSL's own words there, so a refused handshake would otherwise read as a server that is
// down. OpenSSL's come as a raw error string (thread, code, source file and line), cut here to
// its reason.

const OPENSSL_ERROR =
  /(?:Error: )?[0-9A-F]+:error:[0-9A-F]+:SSL routines:[^:]*:([^:]+):[^:\s]*:\d+:(?:SSL alert number \d+)?\s*/g;

/** `details` with each OpenSSL error string replaced by "TLS handshake failed: <reason>". */
export function withoutOpensslNoise(details: string): string {
  return details.replace(OPENSSL_ERROR, (match, reason: string, offset: number) => {
    const next = details[offset + match.length];
    return `TLS handshake failed: ${reason.trim()}${next === undefined || next === '.' ? '' : ' '}`;
  });
}

const CLIENT_FILES =
  '--tls-cert and --tls-key (SHAMELESS_CLIENT_TLS_CERT, SHAMELESS_CLIENT_TLS_KEY)';
const TRUST = '--tls-ca (SHAMELESS_CLIENT_TLS_CA)';

const CAUSES: readonly { pattern: RegExp; hint: (address: string) => string }[] = [
  {
    pattern: /alert certificate required/,
    hint: () =>
      `the server requires a client certificate: pass ${CLIENT_FILES}, ` +
      'signed by the CA of its --tls-client-ca',
  },
  {
    pattern:
      /alert (bad certificate|unsupported certificate|certificate unknown|unknown ca|certificate expired|certificate revoked)/,
    hint: () =>
      `the server refused the client certificate: ${CLIENT_FILES} must name a client certificate ` +
      'signed by the CA of its --tls-client-ca',
  },
  {
    pattern: /wrong version number|packet length too long|http request/,
    hint: (address) =>
      `the server at ${address} does not speak TLS: leave out --tls, --tls-ca, --tls-cert and --tls-key`,
  },
  {
    pattern: /does not match certificate's altnames/,
    hint: (address) =>
      `the server's certificate does not name the host of --address ${address}: call it by a name ` +
      'or address its certificate lists',
  },
  {
    pattern:
      /self[- ]signed certificate|unable to (verify|get local issuer)|certificate has expired|certificate is not yet valid/,
    hint: () => `the server's certificate is not trusted: pass ${TRUST} with the CA that signed it`,
  },
];

/**
 * The hint for an UNAVAILABLE whose details show a TLS handshake going wrong, or undefined when
 * they do not (no server, a partition down).
 */
export function tlsFailureHint(details: string, address: string, tls: boolean): string | undefined {
  const cause = CAUSES.find(({ pattern }) => pattern.test(details));
  if (cause) return cause.hint(address);
  if (/TLS handshake failed|ERR_TLS_|ERR_SSL_/.test(details)) {
    return (
      `the TLS handshake with ${address} failed: check ${TRUST}, and ${CLIENT_FILES} ` +
      "against the server's --tls-cert and --tls-client-ca"
    );
  }
  // The connection closed (grpc-js: "Failed to connect") or was reset before the server's first
  // HTTP/2 frame: a TLS server hanging up on plaintext, or on a client certificate it refused
  // after the handshake; which of the two words comes depends on timing.
  if (/Failed to connect|ECONNRESET/.test(details)) {
    return tls
      ? `the server at ${address} closed the connection after the TLS handshake: it may refuse the ` +
          `client certificate, or want one; pass ${CLIENT_FILES} of a client certificate signed by ` +
          'the CA of its --tls-client-ca'
      : `the server at ${address} closed the connection before answering: if it serves TLS, pass --tls ` +
          `(system CAs) or ${TRUST}`;
  }
  return undefined;
}
