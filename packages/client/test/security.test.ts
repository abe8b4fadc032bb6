// The SDK against real `shameless serve` processes with mutual TLS and role tokens (issue 13):
// the options of connect() reach the server's security layers, roles are enforced end to end,
// and hedged reads across two such servers carry the same credentials. Unit tests of each
// credentials layer against scripted servers: test/transport/middleware/credentials.test.ts.

import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  createTestDatabases,
  makeTestCertificates,
  type TestCertificates,
  type TestDatabases,
} from '@shameless/testkit';
import {
  InvalidArgumentError,
  PermissionDeniedError,
  UnauthenticatedError,
  UnavailableError,
  connect,
  type ConnectOptions,
} from '../src/index.js';
import { startConnectProxy } from './support/connectProxy.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { startServeProcess, type ServeProcess } from './support/serveProcess.js';
import { rejection } from './support/storeFixture.js';

const TOKENS = { admin: 'admin-token-1', writer: 'writer-token-2', reader: 'reader-token-3' };
const TLS_CONNECT_PROCESS = join(
  dirname(fileURLToPath(import.meta.url)),
  'support/tlsConnectProcess.js',
);

describe('the SDK with mutual TLS and tokens, against real servers', function () {
  this.timeout(60_000);
  let certs: TestCertificates;
  let databases: TestDatabases;
  const servers: ServeProcess[] = [];
  let endpoints: string[];

  before(async () => {
    certs = await makeTestCertificates();
    databases = await createTestDatabases(1);
    const tokensFile = join(certs.dir, 'tokens.json');
    const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');
    await writeFile(
      tokensFile,
      JSON.stringify({
        tokens: Object.entries(TOKENS).map(([role, token]) => ({
          name: role,
          role,
          sha256: sha256(token),
        })),
      }),
    );
    const args = [
      ...['--partition', databases.urls[0] as string, '--shards-count', '2'],
      ...['--tls-cert', certs.paths.serverCert, '--tls-key', certs.paths.serverKey],
      ...['--tls-client-ca', certs.paths.ca, '--tokens-file', tokensFile],
    ];
    // One after the other: the first one lays out the fresh database.
    for (let i = 0; i < 2; i++) servers.push(await startServeProcess(args));
    endpoints = servers.map((server) => server.address);
  });
  after(async () => {
    await Promise.all(servers.map((server) => server.kill('SIGKILL')));
    await databases?.drop();
    await certs?.remove();
  });

  const mutualTls = () => ({ ca: certs.ca, cert: certs.clientCert, key: certs.clientKey });
  const open = (options: Partial<ConnectOptions>) =>
    connect({ endpoints, deadlineMs: 5000, tls: mutualTls(), ...options });

  it('an admin defines, a writer puts, a reader finds; smaller roles are refused by name', async () => {
    const admin = await open({ token: TOKENS.admin });
    await admin.defineModel(RATE_SCHEMA);
    await admin.close();

    // A writer and a reader may not define models; they use the one the admin defined.
    const writer = await open({ token: () => Promise.resolve(TOKENS.writer) });
    const Rate = await writer.defineModel(RATE_SCHEMA);
    const uuid = (await Rate.put(rateValues(1, 'tls', '2026-01-01', { price: 7 }))).uuid;
    const other = await rejection(writer.defineModel({ ...RATE_SCHEMA, name: 'not_defined_yet' }));
    expect(other).to.be.instanceOf(PermissionDeniedError);
    expect(other.message).to.match(/admin/).and.not.include(TOKENS.writer);
    await writer.close();

    const reader = await open({ token: TOKENS.reader });
    const ReadRate = await reader.defineModel(RATE_SCHEMA);
    const found = await ReadRate.find(uuid);
    expect(found?.get('price')).to.equal(7);
    const refused = await rejection(ReadRate.put(rateValues(1, 'tls', '2026-01-02')));
    expect(refused).to.be.instanceOf(PermissionDeniedError);
    expect(refused.message)
      .to.match(/writer/)
      .and.not.include(TOKENS.reader);
    await reader.close();
  });

  it('no token, or an unknown one, is UNAUTHENTICATED at connect', async () => {
    for (const token of [undefined, 'not-a-token']) {
      // connect() reads the store's description, so it is refused at once.
      const error = await rejection(open({ token }));
      expect(error, String(token)).to.be.instanceOf(UnauthenticatedError);
      expect(error.message).to.not.include('not-a-token');
    }
  });

  it('without a client certificate the connection is refused', async () => {
    const error = await rejection(
      open({ token: TOKENS.reader, tls: { ca: certs.ca }, retry: { maxAttempts: 1 } }),
    );
    expect(error).to.be.instanceOf(UnavailableError);
  });

  it('a tls.ca that holds no CA certificate is refused at connect, saying what to give', async () => {
    const giveCa = "give the PEM file of the CA that issued the server's certificate";
    const refusals: [Buffer | string, string][] = [
      [
        certs.serverKey,
        'tls.ca holds no PEM certificate ("-----BEGIN CERTIFICATE-----") (it holds a PRIVATE KEY)',
      ],
      // The server's own certificate instead of the CA that signed it.
      [
        certs.serverCert,
        'tls.ca holds no CA certificate: CN=localhost, issued by CN=shameless test CA, is not a CA',
      ],
      ['not a certificate at all\n', 'tls.ca holds no PEM certificate'],
    ];
    for (const [ca, problem] of refusals) {
      const tls = { ...mutualTls(), ca };
      const error = await rejection(open({ token: TOKENS.reader, tls, retry: false }));
      expect(error, problem).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.include(problem).and.include(giveCa);
    }
  });

  it('a tls.ca bundle that holds the CA among others is taken, and calls go through', async () => {
    const bundle = `${certs.otherCa.toString()}${certs.ca.toString()}`;
    const store = await open({ token: TOKENS.reader, tls: { ...mutualTls(), ca: bundle } });
    expect((await store.describe()).shardsCount).to.equal(2);
    await store.close();
  });

  it('a token that rotates goes with each call made after, over the same Pipeline stream', async () => {
    let token = TOKENS.writer;
    const store = await open({ token: () => token, coalesce: false });
    const Rate = await store.defineModel(RATE_SCHEMA);
    await Rate.put(rateValues(2, 'rotated', '2026-01-01'));
    token = TOKENS.reader;
    const refused = await rejection(Rate.put(rateValues(2, 'rotated', '2026-01-02')));
    expect(refused).to.be.instanceOf(PermissionDeniedError);
    expect(refused.message).to.match(/the token "reader"/);
    token = TOKENS.writer;
    await Rate.put(rateValues(2, 'rotated', '2026-01-03'));
    const stats = store.transport.stats();
    expect(stats.pipelinedAttempts, 'every call over the Pipeline').to.equal(stats.attempts);
    await store.close();
  });

  describe('the name a connection sends and checks the certificate against', () => {
    /** The SDK in a process of its own (Node prints a deprecation warning once a process). */
    const connectFromProcess = (endpoint: string, env: NodeJS.ProcessEnv = {}) =>
      promisify(execFile)(
        process.execPath,
        [
          TLS_CONNECT_PROCESS,
          endpoint,
          certs.paths.ca,
          certs.paths.clientCert,
          certs.paths.clientKey,
        ],
        {
          timeout: 15_000,
          env: {
            ...process.env,
            // No proxy but the one a test gives, and no host kept from it.
            ...{ grpc_proxy: undefined, https_proxy: undefined, http_proxy: undefined },
            ...{ no_grpc_proxy: undefined, no_proxy: undefined },
            SHAMELESS_TEST_TOKEN: TOKENS.reader,
            ...env,
          },
        },
      );
    const portOf = (endpoint: string) => endpoint.split(':').pop()!;

    it('an IP address goes without a TLS server name, so Node prints no DEP0123 warning', async () => {
      const ip = `127.0.0.1:${portOf(endpoints[0]!)}`;
      const { stdout, stderr } = await connectFromProcess(ip);
      expect(stdout).to.equal('connected: 2 shards\n');
      expect(stderr).to.not.include('DEP0123');
    });

    it("through an HTTP proxy, the certificate is checked against the server's name, not the proxy's", async () => {
      // The proxy listens on 127.0.0.2, which the server's certificate does not name.
      const proxy = await startConnectProxy('127.0.0.2');
      try {
        const target = `localhost:${portOf(endpoints[0]!)}`;
        const { stdout } = await connectFromProcess(target, { grpc_proxy: proxy.url });
        expect(stdout).to.equal('connected: 2 shards\n');
        expect(proxy.targets).to.include(target);
      } finally {
        await proxy.close();
      }
    });

    it('grpc.ssl_target_name_override is the name the certificate must hold', async () => {
      const ip = `127.0.0.1:${portOf(endpoints[0]!)}`;
      const overridden = (name: string) => ({
        endpoints: [ip],
        token: TOKENS.reader,
        retry: false as const,
        channelOptions: { 'grpc.ssl_target_name_override': name },
      });
      const named = await open(overridden('localhost'));
      expect(named.shardsCount).to.equal(2);
      await named.close();
      const error = await rejection(open(overridden('elsewhere.example')));
      expect(error).to.be.instanceOf(UnavailableError);
      expect(error.message).to.include('elsewhere.example');
    });
  });

  it('hedged reads over two TLS servers carry the token on every attempt', async () => {
    const reader = await open({ token: TOKENS.reader });
    const Rate = await reader.defineModel(RATE_SCHEMA);
    const [first] = await Rate.where({ hotel_id: 1 }).toArray();
    expect(first, 'the record the first test put').to.not.equal(undefined);
    await reader.close();

    // The first server stops answering (SIGSTOP: its port still takes connections, it answers
    // nothing). A new client's round robin starts at the endpoint listed first and a hedge goes
    // to an endpoint its call is not waiting on, so a read's first attempt waits on the stopped
    // server and only its hedge, to the other one, can answer: that server took the hedge's
    // token. Not left to chance, as a race between two live servers would be.
    const [stopped, running] = servers as [ServeProcess, ServeProcess];
    stopped.process.kill('SIGSTOP');
    try {
      const store = await open({
        endpoints: [stopped.address, running.address],
        token: TOKENS.reader,
        hedge: { delayMs: 0 },
        coalesce: false,
      });
      for (let i = 0; i < 10; i++) {
        const { cell } = await store.transport.unary(
          'getCell',
          { model: 'rate', uuid: first!.uuid, cell: 'base', refKey: undefined },
          { idempotent: true, hedgeable: true },
        );
        expect(cell?.body.length, `read ${i}`).to.be.greaterThan(0);
      }
      const stats = store.transport.stats();
      // connect()'s DescribeStore and the first read at least were answered by a hedge.
      expect(stats.hedgesWon, 'hedges that answered first').to.be.greaterThan(0);
      expect(stats.failures, 'failed calls').to.equal(0);
      await store.close();
    } finally {
      stopped.process.kill('SIGCONT');
    }
  });

  it('a consumer group member over mutual TLS carries its token; roles apply to the group calls', async () => {
    let token = TOKENS.reader;
    const store = await open({ token: () => token });
    const Rate = await store.defineModel(RATE_SCHEMA);
    const uuids: string[] = [];
    const consumer = Rate.consume({ group: 'tls', from: 'earliest' }, (cell) => {
      uuids.push(cell.uuid);
    });
    await waitUntil(() => consumer.shards.length === 2 && uuids.length > 0, 'the member at work');
    const group = await store.describeConsumerGroup(Rate, 'tls');
    expect(group.members.map((member) => member.memberId)).to.deep.equal([consumer.memberId]);
    const reset = await rejection(store.resetConsumerGroup(Rate, 'tls', 'earliest'));
    expect(reset).to.be.instanceOf(PermissionDeniedError);
    expect(reset.message).to.match(/admin/);
    await consumer.close();

    // A member whose token no longer holds is refused for good: joining again cannot mend it.
    token = 'revoked-token';
    const refused = Rate.consume({ group: 'tls' }, () => {});
    const stopped = await rejection(refused.closed);
    expect(stopped).to.be.instanceOf(UnauthenticatedError);
    expect(stopped.message).to.not.include('revoked-token');
    await store.close();
  });
});

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  for (const startedAt = Date.now(); !check();) {
    if (Date.now() - startedAt > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
