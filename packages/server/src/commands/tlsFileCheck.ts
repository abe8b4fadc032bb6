// The client's TLS files checked before any call, each against the flag it came from: Node
// refuses a file that is not what its flag wants with OpenSSL's bare words ("PEM routines::no
// start line"), which name neither the file nor the flag, as a failed call with exit 1.
import { createSecureContext } from 'node:tls';
import type { TlsFiles } from './tlsCredentials.js';
import { UsageError } from './usageError.js';

/** Throws a UsageError naming --tls-cert or --tls-key when Node could not load them. */
export function checkTlsFiles(files: TlsFiles): void {
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
