// Server-streaming calls end to end: createTransport over real grpc-js clients against real
// grpc-js servers on loopback ports with scripted Where/Each handlers.

import { expect } from 'chai';
import { status, type ServerWritableStream } from '@grpc/grpc-js';
import type { EachRequest, EachResponse, WhereRequest, WhereResponse } from '@shameless/proto';
import {
  CancelledError,
  DeadlineExceededError,
  NotFoundError,
  UnavailableError,
  createTransport,
  type Transport,
  type TransportOptions,
} from '../../src/index.js';
import {
  cell,
  deadlineMs,
  deferred,
  pause,
  startServer,
  statusError,
  within,
  type TestServer,
} from './support/servers.js';

const where: WhereRequest = {
  model: 'rate',
  index: '',
  conditions: [],
  cells: [],
  order: 0,
  limit: 0,
  pageToken: '',
};
const each: EachRequest = {
  model: 'rate',
  shards: [],
  cursors: {},
  follow: true,
  batchSize: 0,
  heartbeatIntervalMs: 0,
};

function page(...uuids: string[]): WhereResponse {
  return { records: uuids.map((uuid) => ({ uuid, cells: [cell(uuid)] })), nextPageToken: '' };
}

function batch(cursor: number, bytes = 1): EachResponse {
  const id = BigInt(cursor);
  const c = { ...cell(`u-${cursor}`), id, body: Buffer.alloc(bytes, 0x80) };
  return { event: { $case: 'batch', batch: { shard: 0, cells: [c], cursor: id } } };
}

/** Writes `count` messages (or forever), waiting for 'drain' whenever write() says the buffer is full. */
async function writeWithBackpressure(
  call: ServerWritableStream<EachRequest, EachResponse>,
  count: number,
  make: (i: number) => EachResponse,
  progress: { written: number; stopped: boolean },
): Promise<void> {
  call.on('cancelled', () => (progress.stopped = true));
  for (let i = 1; i <= count && !progress.stopped; i++) {
    const more = call.write(make(i));
    progress.written = i;
    if (!more) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          call.off('drain', done);
          call.off('cancelled', done);
          resolve();
        };
        call.on('drain', done);
        call.on('cancelled', done);
      });
    }
  }
  if (!progress.stopped) call.end();
}

describe('server streams over real gRPC', function () {
  this.timeout(10_000);
  const servers: TestServer[] = [];
  const transports: Transport[] = [];
  const serve = async (handlers: Parameters<typeof startServer>[0]) => {
    const server = await startServer(handlers);
    servers.push(server);
    return server;
  };
  const connect = (endpoints: string[], options: Partial<TransportOptions> = {}) => {
    const transport = createTransport({ endpoints, retry: { baseMs: 1, maxMs: 5 }, ...options });
    transports.push(transport);
    return transport;
  };
  afterEach(() => {
    for (const transport of transports.splice(0)) transport.close();
    for (const server of servers.splice(0)) server.stop();
  });

  it('yields every message in order, with the generated types', async () => {
    const server = await serve({
      where: (call) => {
        call.write(page('a', 'b'));
        call.write(page('c'));
        call.end();
      },
    });
    const transport = connect([server.address]);
    const uuids: string[] = [];
    for await (const response of transport.serverStream('where', where)) {
      for (const record of response.records) uuids.push(record.uuid);
    }
    expect(uuids).to.deep.equal(['a', 'b', 'c']);
    expect(transport.stats()).to.include({ calls: 1, attempts: 1, failures: 0 });
  });

  it('sends nothing until iterated', async () => {
    let calls = 0;
    const server = await serve({
      where: (call) => {
        calls++;
        call.end();
      },
    });
    const transport = connect([server.address]);
    const stream = transport.serverStream('where', where);
    await pause(50);
    expect(calls).to.equal(0);
    for await (const _ of stream) expect.fail('no messages expected');
    expect(calls).to.equal(1);
  });

  it('break cancels the server stream', async () => {
    const cancelled = deferred();
    const progress = { written: 0, stopped: false };
    const server = await serve({
      each: (call) => {
        call.on('cancelled', () => cancelled.resolve());
        void writeWithBackpressure(call, Number.POSITIVE_INFINITY, (i) => batch(i), progress);
      },
    });
    const transport = connect([server.address]);
    const cursors: bigint[] = [];
    for await (const response of transport.serverStream('each', each, { deadlineMs: Infinity })) {
      if (response.event?.$case === 'batch') cursors.push(response.event.batch.cursor);
      if (cursors.length === 3) break;
    }
    expect(cursors).to.deep.equal([1n, 2n, 3n]);
    await within(cancelled.promise, 3000, 'the server to see the stream cancelled');
    expect(transport.stats().failures).to.equal(0);
  });

  it('pauses the server while the consumer is slow (backpressure)', async () => {
    const total = 1000;
    const progress = { written: 0, stopped: false };
    const server = await serve({
      each: (call) => void writeWithBackpressure(call, total, (i) => batch(i, 16 * 1024), progress),
    });
    const transport = connect([server.address]);
    const stream = transport.serverStream('each', each, { deadlineMs: 8000 });
    const first = await stream.next();
    expect(first.done).to.equal(false);
    await pause(300); // a slow consumer: 16 MB would be written by now without flow control
    const writtenWhilePaused = progress.written;
    expect(writtenWhilePaused).to.be.below(total / 2);
    let received = 1;
    for await (const _ of stream) received++;
    expect(received).to.equal(total);
  });

  it('retries a transient failure before the first message', async () => {
    let calls = 0;
    const server = await serve({
      where: (call) => {
        calls++;
        if (calls === 1) {
          call.emit('error', statusError(status.UNAVAILABLE, 'partition 0 is down'));
          return;
        }
        call.write(page('a'));
        call.end();
      },
    });
    const transport = connect([server.address]);
    const uuids: string[] = [];
    for await (const response of transport.serverStream('where', where)) {
      uuids.push(...response.records.map((r) => r.uuid));
    }
    expect(uuids).to.deep.equal(['a']);
    expect(calls).to.equal(2);
    expect(transport.stats()).to.include({ attempts: 2, retries: 1, failures: 0 });
  });

  it('surfaces a failure after the first message without retrying', async () => {
    let calls = 0;
    const server = await serve({
      where: (call) => {
        calls++;
        call.write(page('a'));
        setTimeout(() => call.emit('error', statusError(status.UNAVAILABLE, 'lost it')), 20);
      },
    });
    const transport = connect([server.address]);
    const uuids: string[] = [];
    let caught: unknown;
    try {
      for await (const response of transport.serverStream('where', where)) {
        uuids.push(...response.records.map((r) => r.uuid));
      }
    } catch (err) {
      caught = err;
    }
    expect(uuids).to.deep.equal(['a']);
    expect(caught).to.be.instanceOf(UnavailableError);
    expect(calls).to.equal(1);
    expect(transport.stats()).to.include({ attempts: 1, retries: 0, failures: 1 });
  });

  it('maps a definite error and does not retry it', async () => {
    let calls = 0;
    const server = await serve({
      where: (call) => {
        calls++;
        call.emit('error', statusError(status.NOT_FOUND, 'model "rate" is not defined'));
      },
    });
    const transport = connect([server.address]);
    let caught: unknown;
    try {
      for await (const _ of transport.serverStream('where', where)) expect.fail('no messages');
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(NotFoundError);
    expect((caught as NotFoundError).details).to.equal('model "rate" is not defined');
    expect(calls).to.equal(1);
  });

  it('an AbortSignal cancels the stream', async () => {
    const cancelled = deferred();
    const progress = { written: 0, stopped: false };
    const server = await serve({
      each: (call) => {
        call.on('cancelled', () => cancelled.resolve());
        void writeWithBackpressure(call, 1, (i) => batch(i), progress); // then stays open
      },
    });
    const transport = connect([server.address]);
    const controller = new AbortController();
    const received: EachResponse[] = [];
    let caught: unknown;
    try {
      const stream = transport.serverStream('each', each, {
        deadlineMs: Infinity,
        signal: controller.signal,
      });
      for await (const response of stream) {
        received.push(response);
        controller.abort();
      }
    } catch (err) {
      caught = err;
    }
    expect(received).to.have.length(1);
    expect(caught).to.be.instanceOf(CancelledError);
    await within(cancelled.promise, 3000, 'the server to see the stream cancelled');
  });

  it('applies the deadline to the stream; Infinity sends none', async () => {
    const deadlines: number[] = [];
    const server = await serve({
      each: (call) => {
        deadlines.push(deadlineMs(call));
        call.write(batch(1));
        if (deadlines.length === 2) call.end(); // the second stream ends normally
      },
    });
    const transport = connect([server.address]);
    let caught: unknown;
    try {
      for await (const _ of transport.serverStream('each', each, { deadlineMs: 200 })) {
        // keep waiting: the server never ends this one
      }
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(DeadlineExceededError);
    for await (const _ of transport.serverStream('each', each, { deadlineMs: Infinity })) {
      // drains the one message
    }
    expect(deadlines[1]).to.equal(Number.POSITIVE_INFINITY);
  });
});
