// The partition map in the store (SPEC §7, moving shards): a store that never moved routes by
// the gem's ranges, as before; a shard moved by hand here (its tables copied to a new
// partition, the next map published, its old tables renamed away: what the mover does at
// cut-over) is served at its new place by every server — a stale one through the fence (the
// renamed tables' absence) at its next statement, followers from their cursors, servers
// started later with the old list or the new one — and a listed partition the map lacks is
// refused.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { type ServiceError, status } from '@grpc/grpc-js';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { Operator, WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import { type StoreConfig, StoreConfigError, openStore } from '../../../src/engine/openStore.js';
import type { Engine } from '../../../src/engine/engine.js';
import { planStore } from '../../../src/engine/storePlan.js';
import type { EachEvent } from '../../../src/engine/log/shardLog.js';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { silentLogger } from '../../../src/engine/base/logger.js';
import { contentShard } from '../../../src/engine/model/sharding.js';
import { PartitionMap } from '../../../src/engine/model/partitionMap.js';
import { insertPartitionMap } from '../../../src/engine/mysql/sql/partitionMap.js';
import { type StoreApi, connectHealth } from '../../support/grpcCalls.js';
import { int, str } from '../../support/indexValues.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../../support/storeFixture.js';

const SHARDS = 4;
/** A URL as DescribeStore shows it: without user or password. */
const bare = (url: string) => url.replace(/\/\/[^@/]*@/, '//');
const MOVED = 3;
const MAP_TABLE = 'test_shameless_partition_map';

/** A rate of hotel `hotelId` whose content is in shard `shard` (beside its index row). */
async function rateInShard(api: StoreApi, hotelId: number, shard: number) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const date = randomUUID();
    const put = await api.put({
      model: 'rate',
      values: pack({
        hotel_id: hotelId,
        room_type: 'double',
        check_in_date: date,
        gateway: 'g',
        discount_type: 'd',
      }),
      requestId: requestId(),
    });
    if (contentShard(put.uuid, SHARDS) === shard) return { uuid: put.uuid, date };
  }
  throw new Error(`no rate landed in shard ${shard}`);
}

const writeMeta = (api: StoreApi, uuid: string, n: number) =>
  api
    .writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ n }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    })
    .then((written) => written.cell!);

describe('Partition map: a shard moved by hand', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let p0: string, p1: string, target: string, stranger: string;
  let names: string[];
  /** Up to date: probes every 100 ms; it publishes the move. */
  let current: StoreFixture;
  /** Stale: they probe once an hour, so only the fence tells them of the move. */
  let staleWriter: StoreFixture;
  let staleReader: StoreFixture;
  const engines: Engine[] = [];
  let sql: mysql.Connection;

  const config = (partitionUrls: string[], healthCheckIntervalMs = 3_600_000): StoreConfig => ({
    namespace: 'test',
    shardsCount: SHARDS,
    partitionUrls,
    poolSize: 4,
    connectTimeoutMs: 1000,
    startupTimeoutMs: 0,
    followPollIntervalMs: 50,
    healthCheckIntervalMs,
  });
  const open = async (partitionUrls: string[], healthCheckIntervalMs?: number) => {
    const engine = await openStore(config(partitionUrls, healthCheckIntervalMs), silentLogger);
    engines.push(engine);
    return engine;
  };
  const count = async (database: string, table: string) => {
    const [rows] = await sql.query(`SELECT COUNT(*) AS n FROM \`${database}\`.\`${table}\``);
    return Number((rows as { n: number }[])[0]!.n);
  };
  const ids = async (database: string, table: string) => {
    const [rows] = await sql.query(`SELECT id FROM \`${database}\`.\`${table}\` ORDER BY id`);
    return (rows as { id: number }[]).map((row) => Number(row.id));
  };

  before(async () => {
    databases = await createTestDatabases(4);
    names = databases.names;
    [p0, p1, target, stranger] = databases.urls as [string, string, string, string];
    const fixture = (healthCheckIntervalMs: number) =>
      startStoreFixture({ shardsCount: SHARDS, partitionUrls: [p0, p1], healthCheckIntervalMs });
    current = await fixture(100);
    await current.api.defineModel({ model: RATE_MODEL });
    staleWriter = await fixture(3_600_000);
    staleReader = await fixture(3_600_000);
    const server = new URL(p0);
    server.pathname = '';
    sql = await mysql.createConnection(server.toString());
  });
  after(async () => {
    await sql?.end();
    for (const engine of engines) await engine.close();
    await Promise.all([current, staleWriter, staleReader].map((store) => store?.close()));
    await databases?.drop();
  });

  it('a store that never moved routes by the gem’s ranges at version 0, with an empty map on every partition', async () => {
    const described = await current.api.describeStore({});
    expect(described.partitionMapVersion).to.equal(0);
    expect(described.partitions.map((partition) => partition.shards)).to.deep.equal([
      [0, 1],
      [2, 3],
    ]);
    expect(described.partitions[1]!.location).to.equal(bare(p1));
    expect(await count(names[0]!, MAP_TABLE)).to.equal(0);
    expect(await count(names[1]!, MAP_TABLE)).to.equal(0);
    expect(current.engine.partitionMapVersion()).to.equal(0);
  });

  it('moves shard 3; a stale server writes, reads and follows it at its new place', async () => {
    const content = `test_rate_${String(MOVED).padStart(6, '0')}`;
    // Before the move: a record in shard 3, written and read through the stale servers (so
    // that they have routed there), the log as it stands, and a follower of the shard.
    const rate = await rateInShard(staleWriter.api, 3, MOVED);
    await writeMeta(staleWriter.api, rate.uuid, 1);
    await staleReader.api.getCell({ model: 'rate', uuid: rate.uuid, cell: 'meta' });
    // One stale server per operation, so that each meets the fence itself; the writer of
    // many cells has written the record's meta, so that its next write is a one-trip write
    // (it knows the cell's latest version).
    const [batchWriter, batchPutter, batchReader, whereReader, logReader, definer] =
      (await Promise.all(Array.from({ length: 6 }, () => open([p0, p1])))) as [
        Engine,
        Engine,
        Engine,
        Engine,
        Engine,
        Engine,
      ];
    await batchWriter.writeCell(UNBOUNDED, {
      model: 'rate',
      uuid: rate.uuid,
      cell: 'meta',
      body: pack({ n: 0 }),
      mode: 'replace',
      requestId: requestId(),
    });
    const before = await ids(names[1]!, content);
    // A server that only watches: its health probe reads the map's version.
    const watcher = await open([p0, p1], 100);
    // The follower on a server of its own: its polls of the old table would tell its server.
    const followerEngine = await open([p0, p1]);
    const following = new AbortController();
    const events = await followerEngine.each(
      UNBOUNDED,
      'rate',
      {
        shards: [MOVED],
        cursors: new Map([[MOVED, before[before.length - 1]!]]),
        follow: true,
        batchSize: 100,
        heartbeatIntervalMs: 60_000,
      },
      following.signal,
    );
    const followed: number[] = [];
    const reading = (async () => {
      for await (const event of events as AsyncGenerator<EachEvent>) {
        if (event.kind === 'batch') followed.push(...event.cells.map((cell) => Number(cell.id)));
      }
    })();

    // The move, by hand: the shard's tables copied to the target with the store's own tables
    // there, the next map published, then the old tables renamed away (the fence).
    const [listed] = await sql.query(`SHOW TABLES FROM \`${names[1]}\` LIKE '%\\_00000${MOVED}'`);
    const tables = (listed as Record<string, string>[]).map((row) => Object.values(row)[0]!);
    expect(tables).to.include(content).and.have.length(3);
    const [from, to] = [names[1]!, names[2]!];
    for (const table of [...tables, 'test_shameless_store', 'test_shameless_log_locks']) {
      await sql.query(`CREATE TABLE \`${to}\`.\`${table}\` LIKE \`${from}\`.\`${table}\``);
    }
    for (const table of tables) {
      await sql.query(`INSERT INTO \`${to}\`.\`${table}\` SELECT * FROM \`${from}\`.\`${table}\``);
    }
    await sql.query(
      `INSERT INTO \`${to}\`.test_shameless_store SELECT id, namespace, shards_count, 3, 2, created_at FROM \`${from}\`.test_shameless_store`,
    );
    await sql.query(
      `INSERT INTO \`${to}\`.test_shameless_log_locks SELECT * FROM \`${from}\`.test_shameless_log_locks WHERE table_name = ?`,
      [content],
    );
    const next = current.engine.partitionMap.moved([MOVED], 2, target);
    await current.engine.publishPartitionMap(next);
    for (const table of tables) {
      await sql.query(
        `ALTER TABLE \`${from}\`.\`${table}\` RENAME TO \`${from}\`.\`${table}_moved\``,
      );
    }
    expect(current.engine.partitionMap.version).to.equal(1);
    expect(staleWriter.engine.partitionMapVersion()).to.equal(0);
    expect(staleReader.engine.partitionMapVersion()).to.equal(0);
    for (const engine of [batchWriter, batchPutter, batchReader, whereReader, logReader]) {
      expect(engine.partitionMapVersion()).to.equal(0);
    }
    // Published on every partition of the map, the new one too.
    for (const name of names.slice(0, 3)) expect(await count(name, MAP_TABLE)).to.equal(1);
    // Publishing it again changes nothing (a publish that failed part way is run again); another
    // map of the same version is refused (a concurrent mover).
    await current.engine.publishPartitionMap(next);
    for (const name of names.slice(0, 3)) expect(await count(name, MAP_TABLE)).to.equal(1);
    const rival = PartitionMap.initial([p0, p1], SHARDS).moved([2], 2, target);
    await current.engine.publishPartitionMap(rival).then(
      () => expect.fail('published another version 1'),
      (error: Error) => expect(error.message).to.match(/cannot follow version 1/),
    );
    // And the store itself refuses it, to a mover that has not read version 1 yet.
    const inserted = await current.engine
      .partition(1)
      .run(UNBOUNDED, (pool) => insertPartitionMap(pool, MAP_TABLE, rival.toRecord()));
    expect(inserted).to.equal(false);

    // The publishing server's health service has the new partition.
    const health = connectHealth(current.address);
    try {
      expect(await health.check('shameless.v1.Store/partition/2')).to.equal('SERVING');
    } finally {
      health.close();
    }

    // The watcher learns of it within a probe or two, without a statement of its own.
    const watchedBy = Date.now() + 3000;
    while (watcher.partitionMapVersion() < 1 && Date.now() < watchedBy) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(watcher.partitionMapVersion()).to.equal(1);
    expect(watcher.findShard({ uuid: rate.uuid }).partition).to.equal(2);

    // The stale writer: its write to the moved shard lands on the target.
    const atTarget = await count(to, content);
    const written = await writeMeta(staleWriter.api, rate.uuid, 2);
    expect(written.shard).to.equal(MOVED);
    expect(await count(to, content)).to.equal(atTarget + 1);
    expect(await count(from, `${content}_moved`)).to.equal(before.length);
    expect(staleWriter.engine.partitionMapVersion()).to.equal(1);
    // And a create there (its index rows and content on the target too).
    const created = await rateInShard(staleWriter.api, 7, MOVED);
    expect(await count(to, content)).to.be.greaterThan(atTarget + 1);
    expect(await count(from, `${content}_moved`)).to.equal(before.length);

    // The stale reader: its first read of the moved shard, its log and its index.
    const cell = await staleReader.api.getCell({ model: 'rate', uuid: rate.uuid, cell: 'meta' });
    expect(unpack(cell.cell!.body)).to.deep.equal({ n: 2 });
    expect(staleReader.engine.partitionMapVersion()).to.equal(1);
    const page = await staleReader.api.fetchLatestCells({
      model: 'rate',
      shard: MOVED,
      cursor: 0n,
      limit: 1000,
    });
    const after = await ids(to, content);
    expect(page.cells.map((c) => Number(c.id))).to.deep.equal(after);
    expect(after.slice(0, before.length)).to.deep.equal(before);
    const found = await staleReader.api.where({
      conditions: [
        { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(7)] },
        { field: 'room_type', op: Operator.OPERATOR_EQ, values: [str('double')] },
        { field: 'check_in_date', op: Operator.OPERATOR_EQ, values: [str(created.date)] },
      ],
    });
    expect(
      found.flatMap((response) => response.records.map((record) => record.uuid)),
    ).to.deep.equal([created.uuid]);

    // Each operation on a stale server of its own: each lands on, or reads, the target.
    const manyWritten = await batchWriter.writeCells(UNBOUNDED, [
      {
        model: 'rate',
        uuid: rate.uuid,
        cell: 'meta',
        body: pack({ n: 3 }),
        mode: 'replace',
        requestId: requestId(),
      },
    ]);
    expect(manyWritten[0]!.ok).to.equal(true);
    const putMany = await batchPutter.putMany(UNBOUNDED, [
      {
        model: 'rate',
        values: pack({
          hotel_id: 15,
          room_type: 'double',
          check_in_date: randomUUID(),
          gateway: 'g',
          discount_type: 'd',
        }),
        requestId: requestId(),
      },
    ]);
    expect(putMany[0]!.ok).to.equal(true);
    const [latest] = await batchReader.getCells(UNBOUNDED, 'rate', [
      { uuid: rate.uuid, cell: 'meta' },
    ]);
    expect(unpack(latest!.body)).to.deep.equal({ n: 3 });
    const [page0] = await whereReader.whereMany(UNBOUNDED, [
      {
        model: 'rate',
        index: '',
        conditions: [
          { field: 'hotel_id', op: 'eq', values: [7] },
          { field: 'room_type', op: 'eq', values: ['double'] },
          { field: 'check_in_date', op: 'eq', values: [created.date] },
        ],
        cells: [],
        descending: false,
        limit: 0,
        pageToken: '',
      },
    ]);
    expect(page0!.records.map((record) => record.uuid)).to.deep.equal([created.uuid]);
    const logged: number[] = [];
    for await (const event of await logReader.each(
      UNBOUNDED,
      'rate',
      {
        shards: [MOVED],
        cursors: new Map(),
        follow: false,
        batchSize: 1000,
        heartbeatIntervalMs: 0,
      },
      new AbortController().signal,
    )) {
      if (event.kind === 'batch') logged.push(...event.cells.map((c) => Number(c.id)));
    }
    const now = await ids(to, content);
    expect(logged).to.deep.equal(now);
    for (const engine of [batchWriter, batchPutter, batchReader, whereReader, logReader]) {
      expect(engine.partitionMapVersion()).to.equal(1);
    }
    expect(await count(from, `${content}_moved`)).to.equal(before.length);

    // A model defined through a stale server has its tables where the map puts each shard.
    await definer.defineModel(UNBOUNDED, {
      name: 'late',
      primaryIndex: { name: 'primary', fields: [{ name: 'n', type: 'integer' }], shardOn: 'n' },
      secondaryIndices: [],
      cells: [],
    });
    const [lateTables] = await sql.query(`SHOW TABLES FROM \`${to}\` LIKE 'test\\_late\\_%'`);
    expect(
      (lateTables as Record<string, string>[]).map((row) => Object.values(row)[0]),
    ).to.have.members(['test_late_000003', 'test_late_primary_index_000003']);
    const [oldPlace] = await sql.query(`SHOW TABLES FROM \`${from}\` LIKE 'test\\_late\\_%'`);
    expect(
      (oldPlace as Record<string, string>[]).map((row) => Object.values(row)[0]),
    ).to.have.members(['test_late_000002', 'test_late_primary_index_000002']);

    // The follower went on from its cursor at the new place: every cell after it, once.
    const deadline = Date.now() + 5000;
    const expected = now.filter((id) => id > before[before.length - 1]!);
    while (followed.length < expected.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    following.abort();
    await reading.catch(() => undefined);
    expect(followed).to.deep.equal(expected);

    // A table gone with no newer map (a move between its publish and a server's read, at
    // worst): tried again for a moment, then UNAVAILABLE saying so, never the SQL error.
    await sql.query(`ALTER TABLE \`${to}\`.\`${content}\` RENAME TO \`${to}\`.\`${content}_away\``);
    try {
      const refused = await staleReader.api
        .fetchLatestCells({ model: 'rate', shard: MOVED, cursor: 0n, limit: 10 })
        .then(
          () => expect.fail('read a table that is not there'),
          (error: ServiceError) => error,
        );
      expect(refused.code, refused.details).to.equal(status.UNAVAILABLE);
      expect(refused.details).to.match(/being moved to another partition; retry/);
    } finally {
      await sql.query(
        `ALTER TABLE \`${to}\`.\`${content}_away\` RENAME TO \`${to}\`.\`${content}\``,
      );
    }
  });

  it('starts with the map: from the original list, from the new one in any order, and refuses a partition the map lacks', async () => {
    const rate = await rateInShard(current.api, 11, MOVED);
    for (const list of [[p0, p1], [target, p0, p1], [p1]]) {
      const engine = await open(list);
      expect(engine.partitionMapVersion(), list.join(' ')).to.equal(1);
      expect(engine.findShard({ uuid: rate.uuid })).to.deep.equal({ shard: MOVED, partition: 2 });
      const description = await engine.describe(UNBOUNDED);
      expect(description.partitions.map((partition) => partition.shards)).to.deep.equal([
        [0, 1],
        [2],
        [3],
      ]);
      expect(description.partitions.map((partition) => partition.location)).to.deep.equal(
        [p0, p1, target].map(bare),
      );
      const cell = await engine.getCell(UNBOUNDED, 'rate', rate.uuid, '', undefined);
      expect(cell.shard).to.equal(MOVED);
    }
    // The dry run does not follow a map yet: it says so, and plans nothing.
    const plan = await planStore({ ...config([p0, p1]), connectTimeoutMs: 1000 }, []);
    expect(plan.changes).to.deep.equal([]);
    expect(plan.checks.filter((check) => !check.ok).map((check) => check.text)).to.satisfy(
      (texts: string[]) =>
        texts.length === 1 &&
        /holds partition map version 1: this store has moved shards/.test(texts[0]!),
    );
    const refused = await openStore(config([p0, p1, stranger]), silentLogger).then(
      (engine) => {
        engines.push(engine);
        return expect.fail('started with a partition the map lacks');
      },
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(StoreConfigError);
    const message = (refused as Error).message;
    expect(message).to.include(`partition 2 (${stranger})`);
    expect(message).to.include("is not a partition of the store's partition map (version 1)");
    expect(message).to.include(`partition 2: ${target}`);
  });
});
