// Throwaway X.509 material for TLS tests, made with the openssl CLI (Debian ships it; nothing is
// downloaded): a CA, a server certificate for 127.0.0.1 and localhost, and a client certificate,
// all signed by that CA, plus a second CA that signed none of them, and a self-signed server
// certificate that is no CA's (trusted as it is, the way a pinned certificate is).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCertificates {
  /** The directory the PEM files are in, for tests that pass file paths (`--tls-cert`). */
  readonly dir: string;
  readonly paths: {
    ca: string;
    serverCert: string;
    serverKey: string;
    clientCert: string;
    clientKey: string;
    otherCa: string;
    selfSignedCert: string;
    selfSignedKey: string;
  };
  readonly ca: Buffer;
  readonly serverCert: Buffer;
  readonly serverKey: Buffer;
  readonly clientCert: Buffer;
  readonly clientKey: Buffer;
  /** A CA that signed nothing here: a client trusting only it must refuse the server. */
  readonly otherCa: Buffer;
  /** A server certificate for 127.0.0.1 and localhost that signed itself and is not a CA. */
  readonly selfSignedCert: Buffer;
  readonly selfSignedKey: Buffer;
  /** Removes the directory. */
  remove(): Promise<void>;
}

const DAYS = '2';

export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'shameless-certs-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });

  const selfSigned = (name: string, subject: string, ...extensions: string[]) =>
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      DAYS,
      '-subj',
      subject,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      ...extensions.flatMap((extension) => ['-addext', extension]),
    );
  await selfSigned('ca', '/CN=shameless test CA');
  await selfSigned('other-ca', '/CN=an unrelated CA');
  await selfSigned(
    'self-signed',
    '/CN=localhost',
    'basicConstraints=critical,CA:FALSE',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  );

  const signed = async (name: string, subject: string, extensions: string) => {
    await writeFile(at(`${name}.ext`), extensions);
    await openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      subject,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    await openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      DAYS,
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    );
  };
  await signed(
    'server',
    '/CN=localhost',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  await signed('client', '/CN=shameless test client', 'extendedKeyUsage=clientAuth\n');

  const paths = {
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    otherCa: at('other-ca.pem'),
    selfSignedCert: at('self-signed.pem'),
    selfSignedKey: at('self-signed.key'),
  };
  return {
    dir,
    paths,
    ca: await readFile(paths.ca),
    serverCert: await readFile(paths.serverCert),
    serverKey: await readFile(paths.serverKey),
    clientCert: await readFile(paths.clientCert),
    clientKey: await readFile(paths.clientKey),
    otherCa: await readFile(paths.otherCa),
    selfSignedCert: await readFile(paths.selfSignedCert),
    selfSignedKey: await readFile(paths.selfSignedKey),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
