// The client's TLS files checked before any call, each against the flag it came from: Node
// refuses a file that is not what its flag wants with OpenSSL's bare words ("PEM routines::no
// start line"), which name neither the file nor the flag, as a failed call with exit 1; and it
// takes a --tls-ca that holds no CA certificate without a word, to fail every handshake.
import { createSecureContext } from 'node:tls';
import { type TlsFiles, caFileProblem } from '@shameless/proto';
import { UsageError } from './usageError.js';

/**
 * Throws a UsageError naming --tls-ca when it holds no CA certificate, and --tls-cert or
 * --tls-key when Node could not load them.
 */
export function checkTlsFiles(files: TlsFiles, caFile?: string): void {
  const caProblem = files.ca && caFileProblem(files.ca, 'server');
  if (caProblem) throw new UsageError(`--tls-ca: ${caFile ?? 'the file'} ${caProblem}`);
  if (files.cert) loads({ cert: files.cert }, '--tls-cert: not a PEM certificate');
  if (files.key) loads({ key: files.key }, '--tls-key: not a PEM private key');
  if (files.cert && files.key) {
    loads(
      { cert: files.cert, key: files.key },
      '--tls-key is not the private key of --tls-cert: give the key the certificate was made with',
    );
  }
}

function loads(files: TlsFiles, problem: string): void {
  try {
    createSecureContext(files);
  } catch (error) {
    const reason = (error as { reason?: string }).reason ?? (error as Error).message;
    throw new UsageError(`${problem} (OpenSSL: ${reason})`);
  }
}
