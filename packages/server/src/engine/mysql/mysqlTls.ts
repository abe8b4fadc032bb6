// TLS to a partition's MySQL server, asked for in its URL as MySQL's own clients name it
// (`--ssl-mode`, `--ssl-ca`, `--ssl-cert`, `--ssl-key`): a managed database (RDS, Cloud SQL, a
// server with require_secure_transport or users created REQUIRE SSL) refuses a client that
// does not ask for TLS. Without these parameters the connection is plaintext, as before.
import { readFileSync } from 'node:fs';
import { caFileProblem } from '@shameless/proto';
import type { SslOptions } from 'mysql2';

/**
 * required: encrypted, the server's certificate not checked; verify-ca: signed by a CA this
 * server trusts; verify-identity: that, and naming the host dialled.
 */
export type SslMode = 'required' | 'verify-ca' | 'verify-identity';

export interface MysqlTls {
  readonly mode: SslMode;
  /** PEM file of the CA that signed the server's certificate; the system's CAs when absent. */
  readonly caFile?: string;
  /** PEM client certificate and its key, for a server that asks for one. */
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** The URL parameters this module reads, besides the pool's own. */
export const TLS_PARAMETERS = ['ssl-mode', 'ssl-ca', 'ssl-cert', 'ssl-key'] as const;

const MODES: readonly string[] = ['disabled', 'required', 'verify-ca', 'verify-identity'];

/**
 * The TLS a URL's parameters ask for, or undefined for none. Throws an Error saying what is
 * wrong (without the URL: the caller names it, its password hidden).
 */
export function tlsOfParameters(parameters: URLSearchParams): MysqlTls | undefined {
  const given = parameters.get('ssl-mode');
  // MySQL's clients spell them VERIFY_CA; either spelling is taken.
  const mode = given?.toLowerCase().replaceAll('_', '-');
  if (mode !== undefined && !MODES.includes(mode)) {
    throw new Error(`ssl-mode=${given} is not one of ${MODES.join(', ')}`);
  }
  const caFile = parameters.get('ssl-ca') || undefined;
  const certFile = parameters.get('ssl-cert') || undefined;
  const keyFile = parameters.get('ssl-key') || undefined;
  const files = caFile ?? certFile ?? keyFile;
  if (mode === 'disabled' || (mode === undefined && files === undefined)) {
    if (files !== undefined)
      throw new Error('ssl-mode=disabled takes no ssl-ca, ssl-cert or ssl-key');
    return undefined;
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new Error(
      'ssl-cert and ssl-key go together: give both for a client certificate, or neither',
    );
  }
  if (mode === 'required' && caFile !== undefined) {
    throw new Error(
      'ssl-mode=required does not check the certificate, so ssl-ca would not be used: ' +
        'give ssl-mode=verify-ca or verify-identity with it',
    );
  }
  return {
    mode: (mode ?? 'verify-identity') as SslMode,
    ...(caFile === undefined ? {} : { caFile }),
    ...(certFile === undefined ? {} : { certFile }),
    ...(keyFile === undefined ? {} : { keyFile }),
  };
}

/**
 * mysql2's TLS options for `tls`, its files read now. Throws an Error naming the parameter and
 * the file when one cannot be read, or when ssl-ca holds no CA certificate (Node would take it,
 * and every handshake would fail).
 */
export function sslOptionsOf(tls: MysqlTls): SslOptions {
  const ca = tls.caFile === undefined ? undefined : readPem('ssl-ca', tls.caFile);
  const caProblem = ca && caFileProblem(ca, 'server');
  if (caProblem) throw new Error(`ssl-ca: ${tls.caFile} ${caProblem}`);
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(tls.certFile === undefined ? {} : { cert: readPem('ssl-cert', tls.certFile) }),
    ...(tls.keyFile === undefined ? {} : { key: readPem('ssl-key', tls.keyFile) }),
    rejectUnauthorized: tls.mode !== 'required',
    verifyIdentity: tls.mode === 'verify-identity',
  };
}

function readPem(parameter: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = (error as { code?: string }).code ?? (error as Error).message;
    throw new Error(`${parameter}: cannot read ${path} (${code})`);
  }
}
