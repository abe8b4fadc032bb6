import { createServer } from 'node:net';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { freePort, startTcpProxy, type TcpProxy } from '../src/index.js';
import {
  connectClient,
  listenOnLoopback,
  startEchoServer,
  waitUntil,
  type EchoServer,
} from './support/sockets.js';

/** Long enough for bytes to cross loopback many times over, short enough to keep tests quick. */
const QUIET_PERIOD_MS = 150;

describe('startTcpProxy', () => {
  let echo: EchoServer;
  let proxy: TcpProxy;

  beforeEach(async () => {
    echo = await startEchoServer();
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
  });

  afterEach(async () => {
    await proxy.close();
    await echo.close();
  });

  it('forwards bytes both ways and counts them', async () => {
    expect(proxy.address).to.equal(`127.0.0.1:${proxy.port}`);
    const client = await connectClient(proxy.port);

    client.socket.write('hello');
    await waitUntil(() => client.received() === 'hello', 'the echo came back');

    expect(echo.received()).to.equal('hello');
    expect(proxy.connectionCount).to.equal(1);
    expect(proxy.stats).to.include({
      connectionsAccepted: 1,
      bytesClientToServer: 5,
      bytesServerToClient: 5,
      chunksDelayed: 0,
      chunksDropped: 0,
    });
  });

  it('listens on the requested port', async () => {
    const port = await freePort();
    const fixedPortProxy = await startTcpProxy({
      target: { host: '127.0.0.1', port: echo.port },
      listenPort: port,
    });
    try {
      expect(fixedPortProxy.port).to.equal(port);
      const client = await connectClient(port);
      client.socket.write('fixed');
      await waitUntil(() => client.received() === 'fixed', 'the echo came back');
    } finally {
      await fixedPortProxy.close();
    }
  });

  it('keeps bytes in order when some chunks in each direction are held back', async () => {
    // Every other chunk is delayed, so later chunks regularly arrive while earlier ones wait.
    let draws = 0;
    const alternating = () => (draws++ % 2 === 0 ? 0 : 0.99);
    proxy.setFaults({
      delayClientToServer: { probability: 0.5, ms: 15, random: alternating },
      delayServerToClient: { probability: 0.5, ms: 25, random: alternating },
    });
    const client = await connectClient(proxy.port);

    const messages = Array.from({ length: 40 }, (_, index) => `message-${index};`);
    for (const message of messages) {
      client.socket.write(message);
      // Separate event-loop turns make separate TCP segments, hence separate chunks.
      await nextTurn();
    }
    const expected = messages.join('');
    await waitUntil(() => client.received().length === expected.length, 'all bytes came back');

    expect(client.received()).to.equal(expected);
    expect(echo.received()).to.equal(expected);
    expect(proxy.stats.chunksDelayed).to.be.greaterThan(2);
  });

  it('holds client-to-server chunks back for the configured time', async () => {
    proxy.setFaults({ delayClientToServer: { probability: 1, ms: 200 } });
    const client = await connectClient(proxy.port);

    const sentAt = Date.now();
    client.socket.write('slow request');
    await sleep(100);
    expect(echo.received(), 'reached the server before the delay was over').to.equal('');
    await waitUntil(() => client.received() === 'slow request', 'the echo came back');

    expect(Date.now() - sentAt).to.be.at.least(195);
    expect(proxy.stats.chunksDelayed).to.equal(1);
  });

  it('holds server-to-client chunks back while requests go straight through', async () => {
    proxy.setFaults({ delayServerToClient: { probability: 1, ms: 200 } });
    const client = await connectClient(proxy.port);

    const sentAt = Date.now();
    client.socket.write('slow response');
    await waitUntil(() => echo.received() === 'slow response', 'the request reached the server');
    expect(Date.now() - sentAt, 'the request was held back').to.be.below(150);
    await waitUntil(() => client.received() === 'slow response', 'the echo came back');

    expect(Date.now() - sentAt).to.be.at.least(195);
  });

  it('never delays when the random draw is above the probability', async () => {
    proxy.setFaults({ delayServerToClient: { probability: 0.3, ms: 5_000, random: () => 0.3 } });
    const client = await connectClient(proxy.port);

    client.socket.write('fast');
    await waitUntil(() => client.received() === 'fast', 'the echo came back', 1_000);

    expect(proxy.stats.chunksDelayed).to.equal(0);
  });

  it('drops responses while requests still reach the server', async () => {
    const client = await connectClient(proxy.port);
    proxy.setFaults({ dropServerToClient: true });

    client.socket.write('committed');
    await waitUntil(() => echo.received() === 'committed', 'the request reached the server');
    await sleep(QUIET_PERIOD_MS);
    expect(client.received(), 'the response got through').to.equal('');
    expect(proxy.stats.chunksDropped).to.be.at.least(1);
    expect(client.isClosed()).to.equal(false);

    // Faults apply to connections that are already open.
    proxy.setFaults({});
    client.socket.write('heard');
    await waitUntil(() => client.received() === 'heard', 'the next response came back');
  });

  it('resets new connections while refusing, without reaching the target', async () => {
    proxy.setFaults({ refuseConnections: true });

    const refused = await connectClient(proxy.port);
    const errorCode = await refused.closed;

    expect(errorCode).to.equal('ECONNRESET');
    expect(refused.received()).to.equal('');
    expect(echo.accepted).to.have.length(0);
    expect(proxy.stats).to.include({ connectionsAccepted: 1, connectionsRefused: 1 });

    proxy.setFaults({});
    const accepted = await connectClient(proxy.port);
    accepted.socket.write('back up');
    await waitUntil(() => accepted.received() === 'back up', 'the echo came back');
  });

  it('swallows everything on new connections during a blackhole, keeping them open', async () => {
    proxy.setFaults({ blackhole: true });
    const client = await connectClient(proxy.port);

    client.socket.write('anyone there?');
    await sleep(QUIET_PERIOD_MS);

    expect(echo.accepted, 'a connection to the target was opened').to.have.length(0);
    expect(client.received()).to.equal('');
    expect(client.isClosed()).to.equal(false);
    expect(proxy.connectionCount).to.equal(1);
    expect(proxy.stats.chunksDropped).to.be.at.least(1);
  });

  it('stops forwarding on open connections during a blackhole', async () => {
    const client = await connectClient(proxy.port);
    client.socket.write('before');
    await waitUntil(() => client.received() === 'before', 'the echo came back');

    proxy.setFaults({ blackhole: true });
    client.socket.write('during');
    await sleep(QUIET_PERIOD_MS);

    expect(echo.received()).to.equal('before');
    expect(client.received()).to.equal('before');
    expect(client.isClosed()).to.equal(false);
  });

  it('resetAll() abruptly closes both sides of every connection', async () => {
    const first = await connectClient(proxy.port);
    const second = await connectClient(proxy.port);
    await waitUntil(() => echo.accepted.length === 2, 'the target saw both connections');
    expect(proxy.connectionCount).to.equal(2);

    proxy.resetAll();

    expect(await first.closed).to.equal('ECONNRESET');
    expect(await second.closed).to.equal('ECONNRESET');
    await waitUntil(
      () => echo.accepted.every((socket) => socket.destroyed),
      'the target side closed too',
    );
    await waitUntil(() => proxy.connectionCount === 0, 'the proxy forgot the connections');
  });

  it('passes a reset from the client on to the target', async () => {
    const client = await connectClient(proxy.port);
    await waitUntil(() => echo.accepted.length === 1, 'the target saw the connection');
    const targetSide = echo.accepted[0];
    let targetError: string | undefined;
    targetSide?.on('error', (error: NodeJS.ErrnoException) => (targetError = error.code));

    client.socket.resetAndDestroy();

    await waitUntil(() => targetSide?.destroyed === true, 'the target side closed');
    expect(targetError).to.equal('ECONNRESET');
  });

  it('close() stops listening and closes open connections', async () => {
    const client = await connectClient(proxy.port);

    await proxy.close();

    expect(await client.closed).to.equal('ECONNRESET');
    const afterClose = await connectClient(proxy.port);
    expect(await afterClose.closed).to.equal('ECONNREFUSED');
  });

  it('rejects a delay probability outside 0..1', () => {
    expect(() => proxy.setFaults({ delayServerToClient: { probability: 1.5, ms: 10 } })).to.throw(
      RangeError,
      /probability/,
    );
    expect(proxy.faults).to.deep.equal({});
  });
});

describe('startTcpProxy with a target that closes or is down', () => {
  it('delivers the last bytes and the clean close of a target that hangs up', async () => {
    const target = createServer((socket) => socket.end('goodbye'));
    const targetPort = await listenOnLoopback(target);
    const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: targetPort } });
    try {
      const client = await connectClient(proxy.port);

      expect(await client.closed).to.equal(undefined);
      expect(client.received()).to.equal('goodbye');
      await waitUntil(() => proxy.connectionCount === 0, 'the proxy forgot the connection');
    } finally {
      await proxy.close();
      await new Promise((resolve) => target.close(resolve));
    }
  });

  it('resets the client when nothing listens on the target port', async () => {
    const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: await freePort() } });
    try {
      const client = await connectClient(proxy.port);

      expect(await client.closed).to.equal('ECONNRESET');
      expect(proxy.stats.connectionsAccepted).to.equal(1);
    } finally {
      await proxy.close();
    }
  });
});
