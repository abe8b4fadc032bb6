// TLS, mutual TLS and bearer tokens end to end: createTransport over real grpc-js clients
// against real grpc-js servers on loopback with certificates made for the test
// (makeTestCertificates), asserting the metadata each server saw on every attempt.

import { expect } from 'chai';
import { ServerCredentials, status, type ServerErrorResponse } from '@grpc/grpc-js';
import { makeTestCertificates, type TestCertificates } from '@shameless/testkit';
import {
  CancelledError,
  DeadlineExceededError,
  PermissionDeniedError,
  UnauthenticatedError,
  UnavailableError,
  createTransport,
} from '../../src/index.js';
import {
  cell,
  metadataValue,
  pause,
  serversAndTransports,
  statusError,
  GET_CELL,
  READ,
} from './support/servers.js';

const TOKEN = 'tok_3f9a1c7e5b';

describe('credentials: TLS, mutual TLS, bearer token', function () {
  this.timeout(15_000);
  let certs: TestCertificates;
  const { serve, connect } = serversAndTransports({
    retry: { baseMs: 1, maxMs: 5 },
    hedge: false,
    waitForConnection: false,
  });

  before(async () => {
    certs = await makeTestCertificates();
  });
  after(async () => {
    await certs?.remove();
  });

  /** TLS server credentials; `requireClientCert`: mutual TLS against the test CA. */
  const tlsServer = (requireClientCert: boolean) =>
    ServerCredentials.createSsl(
      requireClientCert ? certs.ca : null,
      [{ private_key: certs.serverKey, cert_chain: certs.serverCert }],
      requireClientCert,
    );

  /**
   * A server that records the authorization of every GetCell; `failure(n)` may fail the n-th
   * call (from 1), and `delayMs` holds each answer back.
   */
  const recordingServer = async (
    credentials: ServerCredentials,
    failure: (n: number) => ServerErrorResponse | undefined = () => undefined,
    delayMs = 0,
  ) => {
    const authorizations: (string | undefined)[] = [];
    const server = await serve(
      {
        getCell: (call, callback) => {
          authorizations.push(metadataValue(call.metadata, 'authorization'));
          const error = failure(authorizations.length);
          void pause(delayMs).then(() =>
            error === undefined ? callback(null, { cell: cell('u-1') }) : callback(error),
          );
        },
      },
      credentials,
    );
    return { server, authorizations };
  };

  it('over TLS, every attempt (retries included) carries the bearer token', async () => {
    const { server, authorizations } = await recordingServer(tlsServer(false), (n) =>
      n < 3 ? statusError(status.UNAVAILABLE, 'partition 0 is down') : undefined,
    );
    const transport = connect([server.address], { tls: { ca: certs.ca }, token: TOKEN });
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('u-1');
    expect(authorizations).to.deep.equal(Array(3).fill(`Bearer ${TOKEN}`));
  });

  it('a hedged call carries the token on both attempts, to both servers', async () => {
    const slow = await recordingServer(tlsServer(false), undefined, 2000);
    const fast = await recordingServer(tlsServer(false));
    // The slow one first: round robin sends the first attempt there, the hedge to the other.
    const transport = connect([slow.server.address, fast.server.address], {
      tls: { ca: certs.ca },
      token: async () => TOKEN,
      hedge: { delayMs: 20 },
    });
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('u-1');
    expect(transport.stats()).to.include({ hedges: 1, hedgesWon: 1 });
    expect(slow.authorizations).to.deep.equal([`Bearer ${TOKEN}`]);
    expect(fast.authorizations).to.deep.equal([`Bearer ${TOKEN}`]);
  });

  it('a token function is asked on every attempt: a rotated token is sent from then on', async () => {
    const { server, authorizations } = await recordingServer(tlsServer(false));
    let current = 'tok_before';
    const transport = connect([server.address], { tls: { ca: certs.ca }, token: () => current });
    await transport.unary('getCell', GET_CELL, READ);
    current = 'tok_after';
    await transport.unary('getCell', GET_CELL, READ);
    expect(authorizations).to.deep.equal(['Bearer tok_before', 'Bearer tok_after']);
  });

  it('a token function that hangs holds a call no longer than its deadline, nor past an abort', async () => {
    const { server, authorizations } = await recordingServer(tlsServer(false));
    const transport = connect([server.address], {
      tls: { ca: certs.ca },
      token: () => new Promise<string>(() => {}),
    });
    const started = performance.now();
    const late = await transport.unary('getCell', GET_CELL, { ...READ, deadlineMs: 200 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(late).to.be.instanceOf(DeadlineExceededError);
    expect(performance.now() - started).to.be.lessThan(1500);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await transport
      .unary('getCell', GET_CELL, { ...READ, signal: controller.signal })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(aborted).to.be.instanceOf(CancelledError);
    expect(authorizations).to.deep.equal([]);
  });

  it('mutual TLS: a client certificate is accepted, no certificate is refused', async () => {
    const { server, authorizations } = await recordingServer(tlsServer(true));
    const withCert = connect([server.address], {
      tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey },
      token: TOKEN,
    });
    await withCert.unary('getCell', GET_CELL, READ);
    expect(authorizations).to.deep.equal([`Bearer ${TOKEN}`]);

    const withoutCert = connect([server.address], { tls: { ca: certs.ca }, token: TOKEN });
    const refused = await withoutCert.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(UnavailableError);
    expect(authorizations, 'the handler never ran').to.have.length(1);
  });

  it("a server's self-signed certificate stands in for a CA", async () => {
    const { server, authorizations } = await recordingServer(
      ServerCredentials.createSsl(
        null,
        [{ private_key: certs.selfSignedKey, cert_chain: certs.selfSignedCert }],
        false,
      ),
    );
    const transport = connect([server.address], {
      tls: { ca: certs.selfSignedCert },
      token: TOKEN,
    });
    await transport.unary('getCell', GET_CELL, READ);
    expect(authorizations).to.deep.equal([`Bearer ${TOKEN}`]);
  });

  it('a plaintext client, or one trusting another CA, does not reach a TLS server', async () => {
    const { server, authorizations } = await recordingServer(tlsServer(false));
    const plaintext = connect([server.address], { token: TOKEN });
    expect(
      await plaintext.unary('getCell', GET_CELL, READ).catch((e: unknown) => e),
    ).to.be.instanceOf(UnavailableError);
    const otherCa = connect([server.address], { tls: { ca: certs.otherCa }, token: TOKEN });
    expect(
      await otherCa.unary('getCell', GET_CELL, READ).catch((e: unknown) => e),
    ).to.be.instanceOf(UnavailableError);
    expect(authorizations).to.have.length(0);
  });

  for (const [code, ErrorClass] of [
    [status.UNAUTHENTICATED, UnauthenticatedError],
    [status.PERMISSION_DENIED, PermissionDeniedError],
  ] as const) {
    it(`${ErrorClass.name}: typed, not retried, and the token is in no message`, async () => {
      const { server, authorizations } = await recordingServer(tlsServer(false), () =>
        statusError(code, code === status.UNAUTHENTICATED ? 'unknown token' : 'needs role writer'),
      );
      const transport = connect([server.address], { tls: { ca: certs.ca }, token: TOKEN });
      const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ErrorClass);
      expect((error as UnauthenticatedError).retryable).to.equal(false);
      expect(authorizations).to.have.length(1);
      expect(transport.stats()).to.include({ attempts: 1, retries: 0 });
      expect(String((error as Error).message)).to.not.include(TOKEN);
      expect(String((error as Error).stack)).to.not.include(TOKEN);
    });
  }

  it('refuses a client certificate without its key', () => {
    expect(() =>
      createTransport({
        endpoints: ['127.0.0.1:1'],
        tls: { ca: certs.ca, cert: certs.clientCert },
      }),
    ).to.throw(TypeError, /tls\.cert and tls\.key/);
  });
});
