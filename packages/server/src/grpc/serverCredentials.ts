// The server's transport credentials: insecure, TLS, or mutual TLS. Every PEM file is read and
// parsed here, at startup, so that a wrong path or file stops the server with a message naming
// the file, instead of failing each client's handshake later.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ServerCredentials } from '@grpc/grpc-js';
import { caFileProblem } from '@shameless/proto';

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

/** Each PEM file as the messages name it. */
const PEM_FILES = {
  cert: { what: 'certificate', flag: '--tls-cert' },
  key: { what: 'private key', flag: '--tls-key' },
  clientCa: { what: 'client CA certificate', flag: '--tls-client-ca' },
} as const;
type PemFile = (typeof PEM_FILES)[keyof typeof PEM_FILES];

export function serverCredentials(tls: TlsFiles | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  const cert = readPem(tls.certFile, PEM_FILES.cert);
  const key = readPem(tls.keyFile, PEM_FILES.key);
  const certificate = parsePem(tls.certFile, PEM_FILES.cert, () => new X509Certificate(cert));
  const privateKey = parsePem(tls.keyFile, PEM_FILES.key, () => createPrivateKey(key));
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new TlsConfigError(
      `the private key ${tls.keyFile} does not belong to the certificate ${tls.certFile}; ` +
        'give the key the certificate was issued for',
    );
  }
  const clientCaFile = tls.clientCaFile;
  const clientCa = clientCaFile ? readPem(clientCaFile, PEM_FILES.clientCa) : null;
  const clientCaProblem = clientCa && caFileProblem(clientCa, 'client');
  if (clientCaProblem) {
    throw new TlsConfigError(
      `the TLS ${PEM_FILES.clientCa.what} file ${clientCaFile} (${PEM_FILES.clientCa.flag}) ${clientCaProblem}`,
    );
  }
  return ServerCredentials.createSsl(
    clientCa,
    [{ cert_chain: cert, private_key: key }],
    clientCa !== null,
  );
}

function readPem(file: string, pem: PemFile): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new TlsConfigError(
      `cannot read the TLS ${pem.what} file ${file} (${pem.flag}: ${code}); check the path and that this user may read it`,
    );
  }
}

function parsePem<T>(file: string, pem: PemFile, parse: () => T): T {
  try {
    return parse();
  } catch {
    throw new TlsConfigError(
      `the TLS ${pem.what} file ${file} (${pem.flag}) does not hold a valid PEM ${pem.what}; ` +
        'give a PEM file ("-----BEGIN ...-----"), e.g. one made with openssl',
    );
  }
}
