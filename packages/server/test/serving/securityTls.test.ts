// TLS and mutual TLS, through real servers on loopback with certificates made for the test:
// the server speaks only TLS, checks client certificates when given a client CA, and refuses
// unusable PEM files at startup with a message naming the file.
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { tlsCredentials } from '@shameless/proto';
import { type TestCertificates, makeTestCertificates } from '@shameless/testkit';
import { TlsConfigError, serverCredentials, tlsFilesOf } from '../../src/grpc/serverCredentials.js';
import { type ConnectOptions, connectStore } from '../support/grpcCalls.js';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

/** The status of a DescribeStore call from a new client connecting so. */
async function statusConnecting(address: string, options: ConnectOptions): Promise<status> {
  const api = connectStore(address, options);
  try {
    await api.describeStore({});
    return status.OK;
  } catch (error) {
    return (error as { code: status }).code;
  } finally {
    api.close();
  }
}

describe('security: TLS and mutual TLS', function () {
  this.timeout(60_000);
  let certs: TestCertificates;
  before(async () => {
    certs = await makeTestCertificates();
  });
  after(() => certs?.remove());

  /** A store served with the test's server certificate; mutual: client certificates required. */
  const startTlsStore = (mutual: boolean) =>
    startStoreFixture({
      serverCredentials: serverCredentials({
        certFile: certs.paths.serverCert,
        keyFile: certs.paths.serverKey,
        clientCaFile: mutual ? certs.paths.ca : undefined,
      }),
    });
  // The credentials the client commands and the SDK use: no TLS server name for an IP address.
  const trusting = (ca: Buffer) => ({ credentials: tlsCredentials({ ca }) });

  describe('a TLS server', () => {
    let store: StoreFixture;
    before(async () => {
      store = await startTlsStore(false);
    });
    after(() => store?.close());

    it('serves a client that trusts its CA', async () => {
      expect(await statusConnecting(store.address, trusting(certs.ca))).to.equal(status.OK);
    });

    it('refuses a client speaking plaintext', async () => {
      expect(await statusConnecting(store.address, {})).to.equal(status.UNAVAILABLE);
    });

    it('is refused by a client that trusts another CA', async () => {
      expect(await statusConnecting(store.address, trusting(certs.otherCa))).to.equal(
        status.UNAVAILABLE,
      );
    });
  });

  describe('a mutual TLS server', () => {
    let store: StoreFixture;
    before(async () => {
      store = await startTlsStore(true);
    });
    after(() => store?.close());

    it('serves a client with a certificate signed by the client CA', async () => {
      const withCertificate = {
        credentials: tlsCredentials({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey }),
      };
      expect(await statusConnecting(store.address, withCertificate)).to.equal(status.OK);
    });

    it('refuses a TLS client without a certificate', async () => {
      expect(await statusConnecting(store.address, trusting(certs.ca))).to.equal(
        status.UNAVAILABLE,
      );
    });

    it('refuses a plaintext client', async () => {
      expect(await statusConnecting(store.address, {})).to.equal(status.UNAVAILABLE);
    });
  });

  describe('PEM files that cannot be used', () => {
    const credentialsError = (files: Parameters<typeof serverCredentials>[0]): Error => {
      try {
        serverCredentials(files);
      } catch (error) {
        expect(error).to.be.instanceOf(TlsConfigError);
        return error as Error;
      }
      throw new Error('expected the TLS files to be refused');
    };

    it('names a missing file and says what to check', () => {
      const missing = join(certs.dir, 'missing.pem');
      const error = credentialsError({ certFile: missing, keyFile: certs.paths.serverKey });
      expect(error.message).to.contain(missing).and.contain('--tls-cert').and.contain('ENOENT');
    });

    it('names a file that holds no PEM certificate or key', () => {
      const garbage = join(certs.dir, 'garbage.pem');
      writeFileSync(garbage, 'not a certificate\n');
      expect(
        credentialsError({ certFile: garbage, keyFile: certs.paths.serverKey }).message,
      ).to.match(/garbage\.pem \(--tls-cert\) does not hold a valid PEM certificate/);
      expect(
        credentialsError({ certFile: certs.paths.serverCert, keyFile: garbage }).message,
      ).to.match(/garbage\.pem \(--tls-key\) does not hold a valid PEM private key/);
      expect(
        credentialsError({
          certFile: certs.paths.serverCert,
          keyFile: certs.paths.serverKey,
          clientCaFile: garbage,
        }).message,
      ).to.match(/client CA certificate file .*garbage\.pem \(--tls-client-ca\)/);
    });

    it('refuses a client CA file that holds no CA certificate, saying what to give', () => {
      const withClientCa = (clientCaFile: string) =>
        credentialsError({
          certFile: certs.paths.serverCert,
          keyFile: certs.paths.serverKey,
          clientCaFile,
        }).message;
      // A client's certificate where the CA that signed it goes.
      expect(withClientCa(certs.paths.clientCert)).to.equal(
        `the TLS client CA certificate file ${certs.paths.clientCert} (--tls-client-ca) holds no CA ` +
          'certificate: CN=shameless test client, issued by CN=shameless test CA, is not a CA (it ' +
          "cannot vouch for another certificate); give the PEM file of the CA that issued the client's " +
          'certificate (for this one, CN=shameless test CA)',
      );
      expect(
        () =>
          serverCredentials({
            certFile: certs.paths.serverCert,
            keyFile: certs.paths.serverKey,
            clientCaFile: certs.paths.selfSignedCert,
          }),
        'a self-signed certificate, trusted as it is',
      ).not.to.throw();
      expect(withClientCa(certs.paths.clientKey)).to.match(
        /\(--tls-client-ca\) holds no PEM certificate .*\(it holds a PRIVATE KEY\)/,
      );
    });

    it('refuses a key that does not belong to the certificate', () => {
      const error = credentialsError({
        certFile: certs.paths.serverCert,
        keyFile: certs.paths.clientKey,
      });
      expect(error.message).to.contain('does not belong to the certificate');
    });

    it('needs both a certificate and a key', () => {
      expect(tlsFilesOf({ tlsCert: '', tlsKey: '', tlsClientCa: '' })).to.equal(undefined);
      expect(() => tlsFilesOf({ tlsCert: 'a.pem', tlsKey: '', tlsClientCa: '' })).to.throw(
        TlsConfigError,
        /needs both --tls-cert and --tls-key.*only --tls-cert/,
      );
      expect(() => tlsFilesOf({ tlsCert: '', tlsKey: '', tlsClientCa: 'ca.pem' })).to.throw(
        /only --tls-client-ca/,
      );
    });
  });
});
