// Throwaway X.509 material for TLS tests, made with the openssl CLI (Debian ships it; nothing is
// downloaded): a CA, a server certificate for 127.0.0.1 and localhost, and a client certificate,
// all signed by that CA, plus a second CA that signed none of them.
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
  };
  readonly ca: Buffer;
  readonly serverCert: Buffer;
  readonly serverKey: Buffer;
  readonly clientCert: Buffer;
  readonly clientKey: Buffer;
  /** A CA that signed nothing here: a client trusting only it must refuse the server. */
  readonly otherCa: Buffer;
  /** Removes the directory. */
  remove(): Promise<void>;
}

const DAYS = '2';

export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'shameless-certs-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });

  const selfSignedCa = (name: string, subject: string) =>
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
    );
  await selfSignedCa('ca', '/CN=shameless test CA');
  await selfSignedCa('other-ca', '/CN=an unrelated CA');

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
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
