// The test certificates make a real TLS handshake on loopback: the server proves 127.0.0.1 to a
// client trusting the CA, the client proves itself with its certificate, and a client trusting
// another CA is refused.
import { expect } from 'chai';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import { makeTestCertificates, type TestCertificates } from '../src/certificates.js';

describe('test certificates', function () {
  this.timeout(30_000);
  let certs: TestCertificates;
  before(async () => {
    certs = await makeTestCertificates();
  });
  after(() => certs?.remove());

  const handshake = async (trust: Buffer, withClientCert: boolean) => {
    const server = createServer({
      cert: certs.serverCert,
      key: certs.serverKey,
      ca: certs.ca,
      requestCert: true,
      rejectUnauthorized: true,
    });
    const peers: boolean[] = [];
    server.on('secureConnection', (socket) => {
      peers.push(socket.authorized);
      socket.end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const socket = connect({
        host: '127.0.0.1',
        port,
        ca: trust,
        ...(withClientCert ? { cert: certs.clientCert, key: certs.clientKey } : {}),
      });
      socket.on('data', () => undefined);
      await once(socket, 'secureConnect');
      socket.destroy();
      return peers;
    } finally {
      server.close();
    }
  };

  it('makes a server certificate for 127.0.0.1 and a client certificate, both from the CA', async () => {
    const peers = await handshake(certs.ca, true);
    expect(certs.paths.serverCert).to.match(/server\.pem$/);
    expect(peers.every((authorized) => authorized)).to.equal(true);
  });

  it('is refused by a client that trusts another CA', async () => {
    let failure: unknown;
    try {
      await handshake(certs.otherCa, true);
    } catch (error) {
      failure = error;
    }
    expect(String(failure)).to.match(/self.signed|unable to verify|certificate/i);
  });
});
