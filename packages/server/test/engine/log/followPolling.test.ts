// Each followers learn of writes made through other servers from max ids that one poller per
// process reads for all of them (maxIdPoller.ts): idle followers cost MySQL one poller's
// queries however many they are, writes through another server still reach them, a write
// through this one reaches them at once whatever a poll in flight says, and a partition or
// table whose poll fails ends only the follows it concerns.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Socket } from 'node:net';
import { expect } from 'chai';
import { type ClientReadableStream, type ServiceError, status } from '@grpc/grpc-js';
import { type Cell, type EachResponse, WriteMode } from '@shameless/proto';
import {
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startTcpProxy,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { type CallScope, UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { Engine } from '../../../src/engine/engine.js';
import type { EachEvent } from '../../../src/engine/log/shardLog.js';
import { silentLogger } from '../../../src/engine/base/logger.js';
import { createMysqlPool, parseMysqlUrl } from '../../../src/engine/mysql/mysqlPool.js';
import { Partition, PartitionSet } from '../../../src/engine/mysql/partitions.js';
import type { StatementReader } from '../../../src/engine/mysql/sql/statement.js';
import type { StoreApi } from '../../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';
import { useProxiedStore } from '../../support/proxiedStore.js';

/** The fixture's --follow-poll-ms. */
const POLL_MS = 50;
/** What each table's max id read looks like on the wire, once per table a statement reads. */
const MAX_ID_READ = Buffer.from('COALESCE(MAX(`id`), 0) AS max_id');

/** Counts max id reads in what clients send through a proxy, across chunk boundaries. */
function maxIdReadCounter() {
  const carried = new WeakMap<Socket, Buffer>();
  const counter = {
    reads: 0,
    observe(chunk: Buffer, client: Socket) {
      const text = Buffer.concat([carried.get(client) ?? Buffer.alloc(0), chunk]);
      for (let at = text.indexOf(MAX_ID_READ); at >= 0; at = text.indexOf(MAX_ID_READ, at + 1)) {
        counter.reads += 1;
      }
      carried.set(client, text.subarray(Math.max(0, text.length - MAX_ID_READ.length + 1)));
    },
  };
  return counter;
}

const contentShard = (uuid: string, shardsCount: number) =>
  parseInt(uuid.slice(0, 4), 16) % shardsCount;

/** A rate whose content lives in `shard`: its uuid and the id of its base cell. */
async function rateInShard(api: StoreApi, shard: number, shardsCount = 4) {
  for (let hotelId = 1; hotelId < 1000; hotelId++) {
    const put = await api.put({
      model: 'rate',
      values: pack({
        hotel_id: hotelId,
        room_type: 'double',
        check_in_date: randomUUID(),
        gateway: 'g',
        discount_type: 'd',
      }),
      requestId: requestId(),
    });
    if (contentShard(put.uuid, shardsCount) === shard) return { uuid: put.uuid, id: put.base!.id };
  }
  throw new Error(`no rate landed in shard ${shard}`);
}

const writeMeta = (api: StoreApi, uuid: string, body: Record<string, unknown>) =>
  api
    .writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack(body),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    })
    .then((written) => written.cell!);

/** An Each follow stream, and what it received. */
interface Follower {
  readonly stream: ClientReadableStream<EachResponse>;
  readonly cells: Cell[];
  heartbeats: number;
  /** Resolves at its first heartbeat: it has read its shards and waits for news. */
  readonly waiting: Promise<void>;
  /** How the stream ended: its error, or 'end'. */
  readonly ended: Promise<ServiceError | 'end'>;
  /** Resolves with the milliseconds from now until the cell with `id` arrived. */
  /**
   * Resolves with the ms until the cell of `shard` with `id` arrived (ids are unique within a
   * shard only: a follower of several shards sees the same id in each).
   */
  arrival(cell: { shard: number; id: bigint }, withinMs: number): Promise<number>;
}

function follow(
  api: StoreApi,
  shards: number[],
  cursors: Record<number, bigint> = {},
  heartbeatIntervalMs = 200,
): Follower {
  const stream = api.client.each({
    model: 'rate',
    shards,
    cursors,
    follow: true,
    batchSize: 100,
    heartbeatIntervalMs,
  });
  let onHeartbeat: () => void;
  const waiting = new Promise<void>((resolve) => (onHeartbeat = resolve));
  const follower: Follower = {
    stream,
    cells: [],
    heartbeats: 0,
    waiting,
    ended: new Promise((resolve) => {
      stream.on('error', (error: ServiceError) => resolve(error));
      stream.on('end', () => resolve('end'));
    }),
    async arrival({ shard, id }, withinMs) {
      const started = Date.now();
      while (!follower.cells.some((cell) => cell.shard === shard && cell.id === id)) {
        if (Date.now() - started > withinMs) {
          throw new Error(`cell ${id} of shard ${shard} did not arrive within ${withinMs} ms`);
        }
        await sleep(5);
      }
      return Date.now() - started;
    },
  };
  stream.on('data', (message: EachResponse) => {
    if (message.event?.$case === 'batch') follower.cells.push(...message.event.batch.cells);
    if (message.event?.$case === 'heartbeat') {
      follower.heartbeats += 1;
      onHeartbeat();
    }
  });
  return follower;
}

describe('following: one poll of max ids per process', function () {
  this.timeout(60_000);

  describe('many idle followers of the same shards', () => {
    let databases: TestDatabases;
    let proxy: TcpProxy;
    let store: StoreFixture;
    const counter = maxIdReadCounter();

    before(async () => {
      databases = await createTestDatabases(1);
      const url = new URL(databases.urls[0]!);
      proxy = await startTcpProxy({
        target: { host: url.hostname, port: Number(url.port) },
        observeClientToServer: (chunk, client) => counter.observe(chunk, client),
      });
      url.host = proxy.address;
      store = await startStoreFixture({ partitionUrls: [url.toString()] });
      await store.api.defineModel({ model: RATE_MODEL });
    });
    after(async () => {
      await store?.close();
      await proxy?.close();
      await databases?.drop();
    });

    it('cost one poller’s max id reads, not one per follower, heartbeat on time, and stop the polling when they go', async () => {
      const FOLLOWERS = 20;
      const SHARDS = [0, 1];
      const WATCHED_MS = 2000;
      const followers = Array.from({ length: FOLLOWERS }, () => follow(store.api, SHARDS));
      await Promise.all(followers.map((follower) => follower.waiting));

      const readsBefore = counter.reads;
      const heartbeatsBefore = followers.map((follower) => follower.heartbeats);
      const started = Date.now();
      await sleep(WATCHED_MS);
      const reads = counter.reads - readsBefore;
      const watched = Date.now() - started;
      // One statement per poll reads both tables, and polls start POLL_MS apart at the least
      // (a loaded machine only delays them). Each follower reading its own would make
      // FOLLOWERS times as many.
      const onePoller = SHARDS.length * (Math.ceil(watched / POLL_MS) + 2);
      expect(reads, `${reads} max id reads in ${watched} ms`).to.be.within(1, onePoller);
      followers.forEach((follower, i) => {
        // Every 200 ms: 10 in the time watched; a loaded machine may delay some.
        expect(follower.heartbeats - heartbeatsBefore[i]!).to.be.at.least(5);
      });

      for (const follower of followers) follower.stream.cancel();
      for (const follower of followers) {
        expect(((await follower.ended) as ServiceError).code).to.equal(status.CANCELLED);
      }
      // The server hears the cancels, and a poll in flight ends.
      await sleep(1000);
      const readsAfter = counter.reads;
      await sleep(20 * POLL_MS);
      expect(counter.reads - readsAfter, 'max id reads with no follower left').to.equal(0);
    });

    it('delivers a write made through another server within about a poll interval', async () => {
      const other = await startStoreFixture({ partitionUrls: databases.urls });
      try {
        const rate = await rateInShard(store.api, 2);
        const follower = follow(store.api, [2, 3], { 2: rate.id });
        await follower.waiting;
        // From each write's acknowledgement to its arrival.
        const latencies: number[] = [];
        for (let n = 0; n < 5; n++) {
          const written = await writeMeta(other.api, rate.uuid, { n });
          latencies.push(await follower.arrival(written, 5000));
        }
        follower.stream.cancel();
        await follower.ended;
        const metas = follower.cells.filter((cell) => cell.uuid === rate.uuid);
        expect(metas.map((cell) => cell.refKey)).to.deep.equal([0, 1, 2, 3, 4]);
        // Up to a poll interval and the follower's read: 50 ms polls give 0-60 ms here; the
        // median below 1 s allows for a loaded machine.
        const median = [...latencies].sort((a, b) => a - b)[2]!;
        expect(median, `latencies ${latencies.join(', ')} ms`).to.be.below(1000);
      } finally {
        await other.close();
      }
    });

    it('delivers a write made with plain SQL (the gem, another process) to a follower', async () => {
      const rate = await rateInShard(store.api, 3);
      const follower = follow(store.api, [3], { 3: rate.id });
      await follower.waiting;
      const sql = await mysql.createConnection(databases.urls[0]!);
      try {
        const [inserted] = await sql.query<mysql.ResultSetHeader>(
          'INSERT INTO `test_rate_000003` (`uuid`, `column_name`, `ref_key`, `body`, `created_at`) VALUES (?, ?, ?, ?, NOW(6))',
          [rate.uuid, 'meta', 0, pack({ from: 'sql' })],
        );
        await follower.arrival({ shard: 3, id: BigInt(inserted.insertId) }, 5000);
      } finally {
        await sql.end();
        follower.stream.cancel();
        await follower.ended;
      }
    });
  });

  it('reads a shard written through this server at once, whatever a max id read in flight says', async () => {
    const store = await startStoreFixture();
    const location = parseMysqlUrl(store.partitionUrls[0]!);
    const pool = createMysqlPool(location, { connectionLimit: 4, connectTimeoutMs: 2000 });
    // The first max id read that MySQL answers after `armed` is held back from the poller
    // until `release`: the write below commits while it is out, and it says nothing moved.
    let armed = false;
    let onHeld: () => void;
    const held = new Promise<void>((resolve) => (onHeld = resolve));
    let release: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    class HoldingPartition extends Partition {
      override read<T>(
        scope: CallScope,
        work: (reader: StatementReader) => Promise<T>,
        apart = false,
      ): Promise<T> {
        return super.read(
          scope,
          (reader) =>
            work({
              async read(statements) {
                const results = await reader.read(statements);
                if (armed && statements.some((s) => s.sql.includes('AS max_id'))) {
                  armed = false;
                  onHeld();
                  await released;
                }
                return results;
              },
            }),
          apart,
        );
      }
    }
    const engine = new Engine(
      store.engine.layout,
      new PartitionSet([new HoldingPartition(0, location, pool)], store.engine.layout.shardsCount),
      silentLogger,
      { followPollIntervalMs: POLL_MS, maxCellBytes: 1024 * 1024 },
    );
    const following = new AbortController();
    try {
      await store.api.defineModel({ model: RATE_MODEL });
      await engine.models.refresh(UNBOUNDED);
      const rate = await rateInShard(store.api, 1);
      const events = await engine.each(
        UNBOUNDED,
        'rate',
        {
          shards: [1],
          cursors: new Map([[1, Number(rate.id)]]),
          follow: true,
          batchSize: 100,
          heartbeatIntervalMs: 60_000,
        },
        following.signal,
      );
      const received: number[] = [];
      const consumed = (async () => {
        for await (const event of events as AsyncGenerator<EachEvent>) {
          if (event.kind === 'batch') received.push(...event.cells.map((cell) => Number(cell.id)));
        }
      })();
      const write = (n: number) =>
        engine.writeCell(UNBOUNDED, {
          model: 'rate',
          uuid: rate.uuid,
          cell: 'meta',
          body: pack({ n }),
          mode: 'replace',
          requestId: requestId(),
        });
      const arrival = async (id: number) => {
        const deadline = Date.now() + 3000;
        while (!received.includes(id)) {
          if (Date.now() > deadline) throw new Error(`cell ${id} was not delivered`);
          await sleep(5);
        }
      };
      // Caught up and polling.
      await sleep(3 * POLL_MS);
      armed = true;
      await held;
      const first = await write(1);
      // Delivered with the stale read still out: the next poll would only start after it.
      await arrival(Number(first.cell.id));
      release!();
      await sleep(3 * POLL_MS);
      const second = await write(2);
      await arrival(Number(second.cell.id));
      expect(received).to.deep.equal([Number(first.cell.id), Number(second.cell.id)]);
      following.abort();
      await consumed;
    } finally {
      following.abort();
      release!();
      await engine.close();
      await store.close();
    }
  });

  describe('a poll that fails', () => {
    let other: StoreFixture;
    // Registered first, so that it runs before the proxied store's databases are dropped.
    after(() => other?.close());
    // Shards 0 and 1 on partition 0, 2 and 3 on partition 1 (through the proxy).
    const setup = useProxiedStore({ shardsCount: 4 });
    before(async () => {
      await setup.store.api.defineModel({ model: RATE_MODEL });
      other = await startStoreFixture({ shardsCount: 4, partitionUrls: [...setup.directUrls] });
    });

    it('ends the follows of its table or partition, as their own read would, and no other', async () => {
      const { store, proxy, directUrls } = setup;
      const rate = await rateInShard(store.api, 0);
      const survivor = follow(store.api, [0], { 0: rate.id });
      const ofDroppedTable = follow(store.api, [1]);
      const ofDownPartition = follow(store.api, [2]);
      const ofBoth = follow(store.api, [0, 3]);
      await Promise.all(
        [survivor, ofDroppedTable, ofDownPartition, ofBoth].map((follower) => follower.waiting),
      );

      // A table of partition 0 goes: the poll that reads it with shard 0's fails.
      const sql = await mysql.createConnection(directUrls[0]!);
      await sql.query('DROP TABLE `test_rate_000001`').finally(() => sql.end());
      const dropped = (await ofDroppedTable.ended) as ServiceError;
      expect(dropped.code, dropped.details).to.equal(status.INTERNAL);
      const before = await writeMeta(other.api, rate.uuid, { n: 1 });
      await survivor.arrival(before, 5000);
      await ofBoth.arrival(before, 5000);

      // Partition 1 goes down.
      proxy.setFaults({ refuseConnections: true });
      proxy.resetAll();
      const down = (await ofDownPartition.ended) as ServiceError;
      expect(down.code, down.details).to.equal(status.UNAVAILABLE);
      expect(((await ofBoth.ended) as ServiceError).code).to.equal(status.UNAVAILABLE);
      const after = await writeMeta(other.api, rate.uuid, { n: 2 });
      await survivor.arrival(after, 5000);
      proxy.setFaults({});

      survivor.stream.cancel();
      expect(((await survivor.ended) as ServiceError).code).to.equal(status.CANCELLED);
    });
  });
});
