// The server's transport credentials: insecure, TLS, or mutual TLS. Every PEM file is read and
// parsed here, at startup, so that a wrong path or file stops the server with a message naming
// the file, instead of failing each client's handshake later.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ServerCredentials } from '@grpc/grpc-js';

export interface TlsFiles {
  /** PEM certificate (chain) of the server. */
  certFile: string;
  /** PEM private key of that certificate. */
  keyFile: string;
  /** PEM CA certificate(s) a client's certificate must be signed by; unset: no client certificate asked. */
  clientCaFile?: string;
}

/** A TLS file that cannot be used, with what to do about it. */
export class TlsConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsConfigError';
  }
}

/**
 * The TLS files named by the settings, or undefined when none is set; a key without a
 * certificate, or a client CA without either, is refused.
 */
export function tlsFilesOf(settings: {
  tlsCert: string;
  tlsKey: string;
  tlsClientCa: string;
}): TlsFiles | undefined {
  const { tlsCert, tlsKey, tlsClientCa } = settings;
  if (!tlsCert && !tlsKey && !tlsClientCa) return undefined;
  if (!tlsCert || !tlsKey) {
    throw new TlsConfigError(
      'TLS needs both --tls-cert and --tls-key (SHAMELESS_TLS_CERT, SHAMELESS_TLS_KEY); ' +
        `only ${tlsCert ? '--tls-cert' : tlsKey ? '--tls-key' : '--tls-client-ca'} is set`,
    );
  }
  return { certFile: tlsCert, keyFile: tlsKey, clientCaFile: tlsClientCa || undefined };
}

export function serverCredentials(tls: TlsFiles | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  const cert = readPem(tls.certFile, 'certificate (--tls-cert)');
  const key = readPem(tls.keyFile, 'private key (--tls-key)');
  const certificate = parse(
    tls.certFile,
    'certificate (--tls-cert)',
    () => new X509Certificate(cert),
  );
  const privateKey = parse(tls.keyFile, 'private key (--tls-key)', () => createPrivateKey(key));
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new TlsConfigError(
      `the private key ${tls.keyFile} does not belong to the certificate ${tls.certFile}; ` +
        'give the key the certificate was issued for',
    );
  }
  let clientCa: Buffer | null = null;
  if (tls.clientCaFile) {
    const caFile = tls.clientCaFile;
    clientCa = readPem(caFile, 'client CA (--tls-client-ca)');
    parse(caFile, 'client CA (--tls-client-ca)', () => new X509Certificate(clientCa!));
  }
  return ServerCredentials.createSsl(
    clientCa,
    [{ cert_chain: cert, private_key: key }],
    clientCa !== null,
  );
}

function readPem(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new TlsConfigError(
      `cannot read the TLS ${what} file ${file} (${code}); check the path and that this user may read it`,
    );
  }
}

function parse<T>(file: string, what: string, parser: () => T): T {
  try {
    return parser();
  } catch {
    throw new TlsConfigError(
      `the TLS ${what} file ${file} does not hold a valid PEM ${what.split(' (')[0]}; ` +
        'give a PEM file ("-----BEGIN ...-----"), e.g. one made with openssl',
    );
  }
}
