// The client commands' TLS flags against a real server behind a real TLS endpoint: a node:tls
// listener (ALPN h2, as gRPC over TLS negotiates) that requires a client certificate and
// forwards the decrypted HTTP/2 to the server's plaintext port.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Server as TlsServer, createServer } from 'node:tls';
import { connect } from 'node:net';
import { makeTestCertificates, type TestCertificates } from '@shameless/testkit';
import { expect } from 'chai';
import { runCommand } from '../support/serverProcess.js';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

describe('shameless client commands over TLS', function () {
  let store: StoreFixture;
  let certificates: TestCertificates;
  let front: TlsServer;
  let address: string;

  /**
   * A TLS endpoint in front of the store's plaintext port, serving `cert`, that requires a
   * client certificate signed by the test CA; answers its address (by name).
   */
  const startFront = async (cert: Buffer, key: Buffer): Promise<TlsServer> => {
    const [host, port] = store.address.split(':') as [string, string];
    const server = createServer(
      {
        cert,
        key,
        ca: certificates.ca,
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      },
      (socket) => {
        const upstream = connect(Number(port), host);
        socket.pipe(upstream).pipe(socket);
        const close = () => {
          socket.destroy();
          upstream.destroy();
        };
        socket.on('error', close);
        upstream.on('error', close);
      },
    );
    server.on('tlsClientError', () => {}); // a refused handshake is what some tests expect
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server;
  };
  const addressOf = (server: TlsServer) =>
    `localhost:${(server.address() as { port: number }).port}`;

  before(async () => {
    store = await startStoreFixture();
    certificates = await makeTestCertificates();
    front = await startFront(certificates.serverCert, certificates.serverKey);
    address = addressOf(front);
  });
  after(async () => {
    front?.close();
    await certificates?.remove();
    await store?.close();
  });

  /** `describe` over mutual TLS, trusting `ca` for the server. */
  const describeTrusting = (ca: string, at = address) =>
    runCommand([
      'describe',
      '--address',
      at,
      '--tls-ca',
      ca,
      '--tls-cert',
      certificates.paths.clientCert,
      '--tls-key',
      certificates.paths.clientKey,
    ]);

  /** The misleading hint of a refused handshake: it reads as if the server were down. */
  const SERVER_DOWN = /is a server running|partitions may be down/;

  it('describe works with --tls-ca and a client certificate (mutual TLS)', async () => {
    const result = await describeTrusting(certificates.paths.ca);
    expect(result.code, result.stderr).to.equal(0);
    expect(JSON.parse(result.stdout).shardsCount).to.equal(4);
  });

  it("the TLS files also come from the environment, under names apart from serve's", async () => {
    const { paths } = certificates;
    const result = await runCommand(['describe'], {
      env: {
        SHAMELESS_ADDRESS: address,
        SHAMELESS_CLIENT_TLS_CA: paths.ca,
        SHAMELESS_CLIENT_TLS_CERT: paths.clientCert,
        SHAMELESS_CLIENT_TLS_KEY: paths.clientKey,
        // What a shell that also runs `shameless serve` exports: the server's own pair.
        SHAMELESS_TLS_CERT: paths.serverCert,
        SHAMELESS_TLS_KEY: paths.serverKey,
      },
    });
    expect(result.code, result.stderr).to.equal(0);
  });

  it('calls an IP address without a TLS server name, so Node prints no DEP0123 warning', async () => {
    const ip = address.replace(/^localhost:/, '127.0.0.1:');
    const result = await describeTrusting(certificates.paths.ca, ip);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stderr).not.to.include('DEP0123');
  });

  it('a --tls-ca that holds no CA certificate is refused before any call: the file named, what to give, exit 2', async () => {
    const { dir, paths } = certificates;
    const text = join(dir, 'not-a-certificate.pem');
    writeFileSync(text, 'not a certificate\n');
    const unparsable = join(dir, 'unparsable.pem');
    writeFileSync(unparsable, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    const cases: [string, string][] = [
      // The server's own certificate where the CA that signed it goes.
      [
        paths.serverCert,
        'holds no CA certificate: CN=localhost, issued by CN=shameless test CA, is not a CA',
      ],
      [paths.serverKey, 'holds no PEM certificate ("-----BEGIN CERTIFICATE-----") (it holds a'],
      [text, 'holds no PEM certificate'],
      [unparsable, 'holds a PEM certificate that does not parse (number 1 in the file)'],
    ];
    for (const [ca, problem] of cases) {
      const result = await describeTrusting(ca);
      expect(result.code, result.stderr).to.equal(2);
      expect(result.stderr).to.include(`shameless: --tls-ca: ${ca} ${problem}`);
      expect(result.stderr).to.include(
        "give the PEM file of the CA that issued the server's certificate",
      );
      expect(result.stderr).not.to.match(/UNAVAILABLE|\n\s+at /);
    }
  });

  it("a self-signed server certificate, trusted as it is with --tls-ca, is no CA's and still works", async () => {
    const { paths, selfSignedCert, selfSignedKey } = certificates;
    const selfSigned = await startFront(selfSignedCert, selfSignedKey);
    try {
      const result = await describeTrusting(paths.selfSignedCert, addressOf(selfSigned));
      expect(result.code, result.stderr).to.equal(0);
    } finally {
      selfSigned.close();
    }
  });

  it('a server signed by a CA the client does not trust is refused: UNAVAILABLE, a hint at --tls-ca, exit 1', async () => {
    const result = await describeTrusting(certificates.paths.otherCa);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/^shameless: UNAVAILABLE: /);
    expect(result.stderr).to.include(
      "hint: the server's certificate is not trusted: pass --tls-ca",
    );
    expect(result.stderr).not.to.match(SERVER_DOWN);
    expect(result.stderr).not.to.match(/\n\s+at /);
  });

  it('without a client certificate: the refusal in plain words, a hint at --tls-cert, no OpenSSL string', async () => {
    const result = await runCommand([
      'describe',
      '--address',
      address,
      '--tls-ca',
      certificates.paths.ca,
    ]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('TLS handshake failed: tlsv13 alert certificate required');
    expect(result.stderr).not.to.match(/SSL routines|openssl|\.c:\d+/);
    expect(result.stderr).to.include(
      'hint: the server requires a client certificate: pass --tls-cert',
    );
    expect(result.stderr).not.to.match(SERVER_DOWN);
  });

  it('a client certificate the server refuses: a hint at --tls-cert and its --tls-client-ca', async () => {
    const { paths } = certificates;
    // A server certificate, not a client one: the endpoint hangs up after the handshake.
    const result = await runCommand([
      'describe',
      '--address',
      address,
      '--tls-ca',
      paths.ca,
      '--tls-cert',
      paths.serverCert,
      '--tls-key',
      paths.serverKey,
    ]);
    expect(result.code).to.equal(1);
    expect(result.stderr, result.stderr).to.match(/hint: .*--tls-cert .*--tls-client-ca/);
    expect(result.stderr).not.to.match(SERVER_DOWN);
  });

  it('a client certificate or key file that is not one, or not a pair: the flag named, exit 2', async () => {
    const { paths } = certificates;
    const cases: [string, string, string][] = [
      // Swapped: the key file where the certificate goes.
      [paths.clientKey, paths.clientCert, '--tls-cert: '],
      [paths.clientCert, paths.clientCert, '--tls-key: '],
      [paths.clientCert, paths.serverKey, '--tls-key is not the private key of --tls-cert'],
    ];
    for (const [cert, key, message] of cases) {
      const result = await runCommand([
        'describe',
        '--address',
        address,
        '--tls-ca',
        paths.ca,
        '--tls-cert',
        cert,
        '--tls-key',
        key,
      ]);
      expect(result.code, result.stderr).to.equal(2);
      expect(result.stderr).to.include(message);
      expect(result.stderr).not.to.match(/routines|error:[0-9A-F]{8}/);
      expect(result.stderr).not.to.match(/\n\s+at /);
    }
  });

  it('TLS to a server without TLS: a hint to leave out the TLS flags', async () => {
    const result = await runCommand([
      'describe',
      '--address',
      store.address,
      '--tls-ca',
      certificates.paths.ca,
    ]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include(`hint: the server at ${store.address} does not speak TLS`);
    expect(result.stderr).not.to.match(/SSL routines|\.c:\d+/);
  });

  it('without TLS flags the TLS endpoint is not reached: UNAVAILABLE, a hint at --tls, exit 1', async () => {
    const result = await runCommand(['describe', '--address', address]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/^shameless: UNAVAILABLE: /);
    expect(result.stderr).to.include('if it serves TLS, pass --tls');
    expect(result.stderr).not.to.match(SERVER_DOWN);
  });
});
