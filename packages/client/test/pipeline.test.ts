// The SDK over the Pipeline RPC, against a real server over the local MariaDB: calls travel as
// messages of one stream per server and are answered, or fail with typed errors, exactly as
// calls of their own; what the stream cannot carry goes on its own; a connection lost with calls
// out loses nothing acknowledged; aborts, deadlines and size limits hold per call, and an abort
// reaches the server even after the store was closed.

import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { setTimeout as sleep } from 'node:timers/promises';
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import { contentTableName, type ServerOptions } from '@shameless/server';
import { startTcpProxy, type TcpProxy } from '@shameless/testkit';
import {
  CancelledError,
  DeadlineExceededError,
  InvalidArgumentError,
  NotFoundError,
  ResourceExhaustedError,
  connect,
  createTransport,
  type Model,
  type Store,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { rejection, startStoreFixture, type StoreFixture } from './support/storeFixture.js';
import { READ, startServer } from './transport/support/servers.js';

type Rate = Model<typeof RATE_SCHEMA>;
type ServerMiddleware = NonNullable<ServerOptions['middleware']>[number];

/** Resolves once `condition()` holds; fails after `ms`, a bound far beyond the time it takes. */
async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const giveUpAt = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > giveUpAt) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(20);
  }
}

/** Holds a write lock on `table`, from a connection of its own, until released. */
async function lockTable(databaseUrl: string, table: string): Promise<() => Promise<void>> {
  const connection = await mysql.createConnection(databaseUrl);
  await connection.query(`LOCK TABLES \`${table}\` WRITE`);
  return async () => {
    await connection.query('UNLOCK TABLES');
    await connection.end();
  };
}

describe('the SDK over a Pipeline', function () {
  this.timeout(60_000);
  let fixture: StoreFixture;
  let Rate: Rate;
  /** On the server: the calls that started, and those cancelled (as `method`). */
  const started: string[] = [];
  const cancelled: string[] = [];
  const watchCalls: ServerMiddleware = (request, context, next) => {
    started.push(context.method);
    context.cancellation.signal.addEventListener('abort', () => cancelled.push(context.method), {
      once: true,
    });
    return next(request, context);
  };

  before(async () => {
    fixture = await startStoreFixture({ proxiedPartitions: [0], serverMiddleware: [watchCalls] });
    Rate = await fixture.store.defineModel(RATE_SCHEMA);
  });
  after(() => fixture?.close());
  afterEach(() => fixture.partitionProxies[0]!.setFaults({}));

  /** The same work against `store`: what each call answered, or the error it failed with. */
  async function session(store: Store, hotelId: number) {
    const model = await store.defineModel(RATE_SCHEMA);
    const put = await model.put(rateValues(hotelId, 'double', '2026-05-01', { price: 10 }));
    await put.meta.update({ note: 'quiet' });
    const found = await model.find(put.uuid, { cells: ['meta'] });
    const page = await model.where({ hotel_id: hotelId }).toArray();
    const failures = await Promise.all([
      rejection(
        store.transport.unary(
          'getCell',
          { model: 'nope', uuid: put.uuid, cell: '', refKey: undefined },
          READ,
        ),
      ),
      rejection(model.writeCells([{ uuid: 'not-a-uuid', cell: 'meta', body: { x: 1 } }])),
    ]);
    return {
      price: found?.get('price'),
      note: found?.meta.get('note'),
      page: page.map((record) => record.get('check_in_date')),
      failures: failures.map((error) => ({
        type: error.constructor.name,
        message: error.message,
        field: (error as InvalidArgumentError).metadata?.get('shameless-field'),
      })),
    };
  }

  it('sends every call over one stream, answered and refused as calls of their own are', async () => {
    const alone = await fixture.connectAnother({ pipeline: false });
    const pipelined = fixture.store;
    const before = pipelined.transport.stats();
    const overPipeline = await session(pipelined, 1);
    const stats = pipelined.transport.stats();
    const onTheirOwn = await session(alone, 2);
    expect(overPipeline).to.deep.equal(onTheirOwn);
    expect(overPipeline.failures.map((failure) => failure.type)).to.deep.equal([
      'NotFoundError',
      'InvalidArgumentError',
    ]);
    expect(overPipeline.failures[1]!.field).to.deep.equal(['writes[0].uuid']);
    expect(stats.pipelinedAttempts - before.pipelinedAttempts).to.equal(
      stats.attempts - before.attempts,
    );
    expect(alone.transport.stats().pipelinedAttempts).to.equal(0);
  });

  it('a call aborted while out fails at once with CancelledError; the stream goes on', async () => {
    const put = await Rate.put(rateValues(3, 'double', '2026-05-01'));
    // Every answer of the partition comes 800 ms late.
    fixture.partitionProxies[0]!.setFaults({ delayServerToClient: { probability: 1, ms: 800 } });
    const controller = new AbortController();
    const started = performance.now();
    const aborted = rejection(Rate.find(put.uuid, { signal: controller.signal }));
    await sleep(100);
    controller.abort();
    expect(await aborted).to.be.instanceOf(CancelledError);
    expect(performance.now() - started).to.be.lessThan(700);
    fixture.partitionProxies[0]!.setFaults({});
    expect((await Rate.find(put.uuid))?.get('room_type')).to.equal('double');
  });

  it('a call aborted after the store was closed is still cancelled on the server', async () => {
    const store = await fixture.connectAnother();
    const model = await store.defineModel(RATE_SCHEMA);
    const record = await model.put(rateValues(5, 'double', '2026-05-01'));
    const { shard } = await store.findShard({ uuid: record.uuid });
    // The write waits for the lock: it stays out on the client and runs on the server.
    const unlock = await lockTable(fixture.databaseUrl, contentTableName('sdk', 'rate', shard));
    try {
      started.length = 0;
      cancelled.length = 0;
      const controller = new AbortController();
      const write = rejection(
        record.meta.update({ note: 'late' }, { signal: controller.signal, deadlineMs: 30_000 }),
      );
      await until(() => started.includes('WriteCell'), 'the server runs the write');
      // Closing ends the Pipeline stream once its calls are over: the write is one of them.
      await store.close();
      controller.abort();
      expect(await write).to.be.instanceOf(CancelledError);
      await until(() => cancelled.includes('WriteCell'), 'the server is told of the abort');
    } finally {
      await unlock();
    }
  });

  it('a call past its deadline fails with DeadlineExceededError', async () => {
    const put = await Rate.put(rateValues(4, 'double', '2026-05-01'));
    fixture.partitionProxies[0]!.setFaults({ delayServerToClient: { probability: 1, ms: 800 } });
    const error = await rejection(Rate.find(put.uuid, { deadlineMs: 200 }));
    expect(error).to.be.instanceOf(DeadlineExceededError);
  });

  it('an answer larger than the channel takes fails that call alone, not retried', async () => {
    const small = await connect({
      endpoints: [fixture.address],
      coalesce: false,
      channelOptions: { 'grpc.max_receive_message_length': 4096 },
    });
    try {
      const Small = await small.defineModel(RATE_SCHEMA);
      const large = await Rate.put(
        rateValues(5, 'large', '2026-05-01', { blob: 'x'.repeat(8000) }),
      );
      const tiny = await Rate.put(rateValues(5, 'tiny', '2026-05-01'));
      const before = small.transport.stats();
      const [refused, found] = await Promise.all([
        rejection(Small.find(large.uuid)),
        Small.find(tiny.uuid),
      ]);
      expect(refused).to.be.instanceOf(ResourceExhaustedError);
      expect(refused.message).to.match(/larger than max \(\d+ vs\. 4096\)/);
      expect((refused as ResourceExhaustedError).retryable).to.equal(false);
      expect(found?.get('room_type')).to.equal('tiny');
      expect(small.transport.stats().retries - before.retries).to.equal(0);
    } finally {
      await small.close();
    }
  });

  it('a request larger than the server reads goes as a call of its own', async () => {
    const smallServer = await startStoreFixture({ serverMaxMessageBytes: 4096 });
    try {
      const Small = await smallServer.store.defineModel(RATE_SCHEMA);
      const error = await rejection(
        Small.put(rateValues(6, 'large', '2026-05-01', { blob: 'y'.repeat(8000) })),
      );
      // grpc-js's refusal of a unary call's request, as a server without Pipeline gives it.
      expect(error).to.be.instanceOf(ResourceExhaustedError);
      expect(error.message).to.match(/Received message larger than max \(\d+ vs 4096\)/);
      const put = await Small.put(rateValues(6, 'small', '2026-05-01'));
      expect(put.get('room_type')).to.equal('small');
      const stats = smallServer.store.transport.stats();
      expect(stats.pipelinedAttempts).to.be.greaterThan(0).and.lessThan(stats.attempts);
    } finally {
      await smallServer.close();
    }
  });

  describe('a lost connection with calls out', () => {
    let proxy: TcpProxy;
    let store: Store;
    before(async () => {
      const [host, port] = fixture.address.split(':');
      proxy = await startTcpProxy({ target: { host: host!, port: Number(port) } });
      store = await connect({ endpoints: [proxy.address] });
    });
    after(async () => {
      await store?.close();
      await proxy?.close();
    });

    it('retries what is safe to repeat; every acknowledged write is stored exactly once', async () => {
      const ProxiedRate = await store.defineModel(RATE_SCHEMA);
      const record = await ProxiedRate.put(rateValues(7, 'double', '2026-05-01'));
      const meta = record.meta;
      // Answers come late, so that the reset finds writes on the wire and in the database.
      proxy.setFaults({ delayServerToClient: { probability: 1, ms: 150 } });
      const writes = Array.from({ length: 24 }, (_, i) =>
        ProxiedRate.writeCells([{ uuid: record.uuid, cell: 'meta', body: { i } }]),
      );
      await sleep(60);
      proxy.resetAll();
      proxy.setFaults({});
      const results = await Promise.all(writes);
      expect(store.transport.stats().retries, 'writes sent again').to.be.greaterThan(0);
      const refKeys = results.map((result) => {
        const [outcome] = result;
        if (!outcome?.ok) throw new Error(`a write failed: ${JSON.stringify(outcome)}`);
        return outcome.cell.refKey;
      });
      // Each acknowledged write has its own version, and no version is there twice.
      expect(new Set(refKeys).size).to.equal(24);
      await meta.reload();
      expect(meta.refKey).to.equal(23);
    });
  });

  describe('a server without Pipeline', () => {
    it('gets calls of their own, and is not asked for the stream on every call', async () => {
      let streamsOpened = 0;
      const server = await startServer({
        findShard: (_call, callback) => callback(null, { shard: 1, partition: 0 }),
        pipeline: (call: ServerDuplexStream<unknown, unknown>) => {
          streamsOpened++;
          call.emit('error', { code: status.UNIMPLEMENTED, details: 'no Pipeline here' });
        },
      });
      const transport = createTransport({ endpoints: [server.address] });
      try {
        for (let i = 0; i < 20; i++) {
          const found = await transport.unary(
            'findShard',
            { key: { $case: 'value', value: BigInt(i) } },
            READ,
          );
          expect(found.shard).to.equal(1);
        }
        expect(streamsOpened).to.equal(1);
        expect(transport.stats().pipelinedAttempts).to.equal(0);
      } finally {
        transport.close();
        server.stop();
      }
    });
  });

  describe('a server that never opens the stream', () => {
    it('fails each call at its deadline, as a hung server does', async () => {
      const server = await startServer({
        // Neither headers nor an end: the stream never opens.
        pipeline: () => {},
      });
      const transport = createTransport({ endpoints: [server.address], retry: false });
      try {
        const error = await rejection(
          transport.unary(
            'findShard',
            { key: { $case: 'value', value: 1n } },
            { ...READ, deadlineMs: 300 },
          ),
        );
        expect(error).to.be.instanceOf(DeadlineExceededError);
      } finally {
        transport.close();
        server.stop();
      }
    });
  });

  it('NotFoundError keeps its type and message over the stream', async () => {
    const error = await rejection(
      fixture.store.transport.unary(
        'getCell',
        {
          model: 'rate',
          uuid: '00000000-0000-4000-8000-000000000000',
          cell: '',
          refKey: undefined,
        },
        READ,
      ),
    );
    expect(error).to.be.instanceOf(NotFoundError);
    expect(error.message).to.match(/no version/);
  });
});
