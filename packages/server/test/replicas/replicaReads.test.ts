// Issue 53's read targets against a real primary and a real replica (GTID replication): two
// servers (A and B, each an engine with the replica, as two `shameless serve --replica` would
// be) over one partition. A session read through B after a write through A sees that write, every
// time; reads that allow a replica run there (Com_select on each server says so); a call that
// says nothing reads the primary; bad consistency metadata is refused naming its key; and a store
// whose tables the gem made is served from the replica with the primary's answers.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { type Cell, Replica_State, type WhereRequest, WriteMode } from '@shameless/proto';
import {
  type MariaDbServer,
  type ReplicatedMariaDb,
  startReplicatedMariaDb,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { collect, rejection } from '../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { gemTablesSql } from '../support/gemTables.js';
import { contentShardOf, forEachConcurrently, range } from '../consistency/support.js';
import {
  CONSISTENCY,
  MAX_STALENESS,
  SESSION_TOKEN,
  type StatementDeltas,
  boundedRead,
  callWith,
  countStatements,
  metadataOf,
  probeBound,
  sessionRead,
  waitForReplicaState,
  whereEqual,
  whereWith,
  withDatabase,
} from './support.js';

const SHARDS = 4;
/**
 * The engines' lag probes, one SELECT on each server every interval: 1 s here (the default is
 * 250 ms), with a bound on lag to match, so that they weigh little beside the reads counted.
 */
const CHECK_MS = 1000;
const MAX_LAG_MS = 10_000;
/** The engines' health probes of the primary, one SELECT each. */
const HEALTH_CHECK_MS = 5000;
/** Engines with the replica that probe it while the counters run: A and B. */
const ENGINES = 2;
/** Records of hotels FIRST_HOTEL to FIRST_HOTEL + RECORDS - 1, made before the tests. */
const RECORDS = 32;
const FIRST_HOTEL = 1000;

const rateKey = (hotelId: number) => ({
  hotel_id: hotelId,
  room_type: 'double',
  check_in_date: '2026-01-01',
});
const rateValues = (hotelId: number, extra: Record<string, unknown> = {}) => ({
  ...rateKey(hotelId),
  gateway: 'pegasus',
  discount_type: 'geo',
  ...extra,
});

type RateKey = ReturnType<typeof rateKey>;

/** A Where on the primary index for one rate, with the cells asked for. */
function whereRate(key: number | RateKey, cells = ['base']): WhereRequest {
  // Only the primary index's fields, whatever else the values given hold.
  const { hotel_id, room_type, check_in_date } = typeof key === 'number' ? rateKey(key) : key;
  return whereEqual('rate', '', { hotel_id, room_type, check_in_date }, cells);
}

/**
 * The share of read statements the replica ran, from both servers' counters: on the replica,
 * its SELECTs less the MASTER_GTID_WAITs and at most `probeBound` lag probes; on the primary,
 * every SELECT counts as a read (the writes', health and lag probes too), so the share is a
 * lower bound.
 */
function replicaShare(deltas: StatementDeltas) {
  const probes = probeBound(deltas.elapsedMs, CHECK_MS, ENGINES);
  const replicaReads = Math.max(0, deltas.replicaSelects - deltas.replicaGtidWaits - probes);
  const share = replicaReads / (replicaReads + deltas.primarySelects);
  return { replicaReads, probes, share };
}

function describeDeltas(deltas: StatementDeltas): string {
  const { replicaReads, probes, share } = replicaShare(deltas);
  return (
    `replica Com_select ${deltas.replicaSelects} (${deltas.replicaGtidWaits} MASTER_GTID_WAIT, ` +
    `at most ${probes} lag probes: ≥ ${replicaReads} reads), primary Com_select ${deltas.primarySelects} ` +
    `(all counted as reads): ≥ ${(share * 100).toFixed(1)}% of read statements on the replica, ` +
    `${(deltas.elapsedMs / 1000).toFixed(1)} s`
  );
}

describe('read replicas: session, bounded and strong reads against a real replica (issue 53)', function () {
  this.timeout(120_000);
  let set: ReplicatedMariaDb;
  let replicaServer: MariaDbServer;
  let primaryUrl: string;
  let replicaUrl: string;
  /** Writes go through A, reads through B: two servers over the same partition and replica. */
  let a: StoreFixture;
  let b: StoreFixture;
  let uuids: string[];
  const counters = () => countStatements(set.primary.url, replicaServer.url);

  before(async () => {
    set = await startReplicatedMariaDb({
      replicas: 1,
      // Commits without a flush each: the test measures routing, not the disk.
      extraArgs: ['--innodb-flush-log-at-trx-commit=2'],
    });
    replicaServer = set.replicas[0]!;
    primaryUrl = withDatabase(set.primary.url, 'rr');
    replicaUrl = withDatabase(replicaServer.url, 'rr');
    const serverWith = () =>
      startStoreFixture({
        partitionUrls: [primaryUrl],
        replicas: [{ partition: 0, url: replicaUrl }],
        replicaCheckIntervalMs: CHECK_MS,
        replicaMaxLagMs: MAX_LAG_MS,
        healthCheckIntervalMs: HEALTH_CHECK_MS,
        namespace: 'rr',
        shardsCount: SHARDS,
        poolSize: 16,
      });
    // One after the other: the first lays out the fresh database.
    a = await serverWith();
    await a.api.defineModel({ model: RATE_MODEL });
    b = await serverWith();
    // The rates the tests write and read: hotels FIRST_HOTEL.., one record each.
    uuids = await Promise.all(
      range(RECORDS).map(async (i) => {
        const put = await a.api.put({
          model: 'rate',
          values: pack(rateValues(FIRST_HOTEL + i, { pair: -1 })),
          requestId: requestId(),
        });
        return put.uuid;
      }),
    );
    await set.waitForReplicaToCatchUp(replicaServer);
    await waitForReplicaState(a.api, Replica_State.STATE_SERVING, 10_000);
    await waitForReplicaState(b.api, Replica_State.STATE_SERVING, 10_000);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await set?.destroy();
  });

  it('read-your-writes: 10,000 writes through A, each read right after through B with its token, 0 stale', async () => {
    // One record per worker, so that the latest version a worker reads is the one it wrote.
    const WORKERS = RECORDS;
    const PAIRS = 10_000;
    const stale: string[] = [];
    let withToken = 0;
    const started = Date.now();
    const count = await counters();
    let next = 0;
    await forEachConcurrently(range(WORKERS), WORKERS, async (worker) => {
      const uuid = uuids[worker]!;
      for (let pair = next++; pair < PAIRS; pair = next++) {
        if (pair % 2 === 0) {
          // WriteCell through A, then GetCell of that cell through B.
          const written = await callWith(a.api.client, a.api.client.writeCell, {
            model: 'rate',
            uuid,
            cell: 'meta',
            body: pack({ pair }),
            mode: WriteMode.WRITE_MODE_REPLACE,
            requestId: requestId(),
          });
          const token = written.trailers[SESSION_TOKEN];
          if (token !== undefined) withToken += 1;
          const read = await callWith(
            b.api.client,
            b.api.client.getCell,
            { model: 'rate', uuid, cell: 'meta' },
            sessionRead(token),
          );
          const cell = read.response.cell!;
          if (cell.refKey !== written.response.cell!.refKey || unpack(cell.body).pair !== pair) {
            stale.push(
              `pair ${pair}: GetCell answered version ${cell.refKey}, ${JSON.stringify(unpack(cell.body))}; written ${written.response.cell!.refKey}`,
            );
          }
        } else {
          // Put (an update of the record's base) through A, then Where on the primary index through B.
          const put = await callWith(a.api.client, a.api.client.put, {
            model: 'rate',
            values: pack(rateValues(FIRST_HOTEL + worker, { pair })),
            requestId: requestId(),
          });
          const token = put.trailers[SESSION_TOKEN];
          if (token !== undefined) withToken += 1;
          const pages = await whereWith(b.api, whereRate(FIRST_HOTEL + worker), sessionRead(token));
          const base = pages.flatMap((page) => page.records)[0]?.cells[0];
          if (base?.refKey !== put.response.base!.refKey || unpack(base.body).pair !== pair) {
            stale.push(
              `pair ${pair}: Where answered version ${base?.refKey}, ${base ? JSON.stringify(unpack(base.body)) : 'nothing'}; written ${put.response.base!.refKey}`,
            );
          }
        }
      }
    });
    const deltas = await count.delta();
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `      ${PAIRS} write-then-read pairs, ${WORKERS} at a time, in ${seconds.toFixed(1)} s: ` +
        `${stale.length} stale; ${describeDeltas(deltas)}`,
    );
    expect(withToken, 'writes that answered a session token').to.equal(PAIRS);
    expect(stale, 'stale answers').to.deep.equal([]);
    // The reads did leave the primary: without it the test would prove nothing of replicas.
    expect(replicaShare(deltas).share, describeDeltas(deltas)).to.be.greaterThan(0.5);
  });

  it('reads leave the primary: with session (no token) and bounded, ≥ 95% of read statements run on the replica', async () => {
    const READS = 3000;
    const hotels = range(RECORDS).map((i) => FIRST_HOTEL + i);
    // No write since the last test's; the replica has applied them all.
    await set.waitForReplicaToCatchUp(replicaServer);
    for (const [mode, metadata] of [
      ['session, no token', sessionRead()],
      ['bounded, 10 s', boundedRead(10_000)],
    ] as const) {
      const count = await counters();
      // 4 at a time: reads that meet in one turn of B's event loop share a statement, and the
      // fewer the statements the more the primary's own probes weigh in the share.
      await forEachConcurrently(range(READS), 4, async (i) => {
        if (i % 4 === 3) {
          await whereWith(b.api, whereRate(hotels[i % hotels.length]!), metadata);
        } else {
          await callWith(
            b.api.client,
            b.api.client.getCell,
            { model: 'rate', uuid: uuids[i % uuids.length]!, cell: 'base' },
            metadata,
          );
        }
      });
      const deltas = await count.delta();
      console.log(
        `      ${mode}: ${READS} reads (GetCell, Where), 4 at a time: ${describeDeltas(deltas)}`,
      );
      expect(deltas.replicaGtidWaits, `${mode}: no token, nothing to wait for`).to.equal(0);
      expect(replicaShare(deltas).share, `${mode}: ${describeDeltas(deltas)}`).to.be.at.least(0.95);
    }
  });

  it('every read RPC may be answered by the replica, with the primary’s answer', async () => {
    await set.waitForReplicaToCatchUp(replicaServer);
    const client = b.api.client;
    const uuid = uuids[0]!;
    const shard = contentShardOf(uuid, SHARDS);
    const reads: [string, (metadata: Record<string, string>) => Promise<unknown>][] = [
      [
        'GetCell',
        (m) => callWith(client, client.getCell, { model: 'rate', uuid, cell: 'base' }, m),
      ],
      [
        'GetCells',
        (m) =>
          callWith(
            client,
            client.getCells,
            { model: 'rate', keys: uuids.slice(0, 8).map((key) => ({ uuid: key, cell: 'base' })) },
            m,
          ),
      ],
      [
        'Previous',
        (m) =>
          callWith(client, client.previous, { model: 'rate', uuid, cell: 'base', refKey: 1 }, m),
      ],
      ['Where', (m) => whereWith(b.api, whereRate(FIRST_HOTEL), m)],
      [
        'WhereMany',
        (m) =>
          callWith(
            client,
            client.whereMany,
            { queries: [whereRate(FIRST_HOTEL), whereRate(FIRST_HOTEL + 1)] },
            m,
          ),
      ],
      [
        'FetchLatestCells',
        (m) =>
          callWith(
            client,
            client.fetchLatestCells,
            { model: 'rate', shard, cursor: 0n, limit: 50 },
            m,
          ),
      ],
      [
        'Each',
        (m) =>
          collect(
            client.each(
              {
                model: 'rate',
                shards: [shard],
                cursors: {},
                follow: false,
                batchSize: 0,
                heartbeatIntervalMs: 0,
              },
              metadataOf(m),
            ),
          ),
      ],
    ];
    const answered = (answer: unknown) =>
      answer !== null && typeof answer === 'object' && 'response' in answer
        ? answer.response
        : answer;
    const ROUNDS = 30;
    for (const [name, read] of reads) {
      const fromPrimary = answered(await read({}));
      const count = await counters();
      for (let round = 0; round < ROUNDS; round += 1) {
        const metadata = round % 2 === 0 ? sessionRead() : boundedRead(MAX_LAG_MS);
        expect(answered(await read(metadata)), `${name}, round ${round}`).to.deep.equal(
          fromPrimary,
        );
      }
      const deltas = await count.delta();
      const { replicaReads } = replicaShare(deltas);
      // Each round is a statement of its own on the replica; the lag probes, subtracted at their
      // most, may hide a few of them.
      expect(replicaReads, `${name}: ${describeDeltas(deltas)}`).to.be.at.least(ROUNDS / 2);
    }
  });

  it('strong stays on the primary: reads with no metadata (a client from before replicas) never run on the replica', async () => {
    const READS = 2000;
    const count = await counters();
    await forEachConcurrently(range(READS), 16, async (i) => {
      if (i % 4 === 3) await b.api.where(whereRate(FIRST_HOTEL + (i % RECORDS)));
      else await b.api.getCell({ model: 'rate', uuid: uuids[i % RECORDS]!, cell: 'base' });
    });
    // And `strong` said out loud reads there too.
    await forEachConcurrently(range(READS / 4), 16, async (i) => {
      await callWith(
        b.api.client,
        b.api.client.getCell,
        { model: 'rate', uuid: uuids[i % RECORDS]!, cell: 'base' },
        { [CONSISTENCY]: 'strong' },
      );
    });
    const deltas = await count.delta();
    const probes = probeBound(deltas.elapsedMs, CHECK_MS, ENGINES);
    console.log(
      `      ${READS + READS / 4} strong reads: replica Com_select ${deltas.replicaSelects} (the lag probes alone may make ${probes}), ` +
        `primary Com_select ${deltas.primarySelects}, ${(deltas.elapsedMs / 1000).toFixed(1)} s`,
    );
    expect(deltas.replicaSelects, 'SELECTs on the replica: lag probes only').to.be.at.most(probes);
    expect(deltas.replicaGtidWaits).to.equal(0);
    // The reads ran somewhere: on the primary, well beyond its own probes.
    expect(deltas.primarySelects).to.be.greaterThan(10 * probes);
  });

  it('bad consistency metadata is INVALID_ARGUMENT naming its key; the channel and other calls go on', async () => {
    const { uuid } = await a.api.put({
      model: 'rate',
      values: pack(rateValues(2000)),
      requestId: requestId(),
    });
    const getCell = (metadata: Record<string, string>) =>
      callWith(b.api.client, b.api.client.getCell, { model: 'rate', uuid, cell: 'base' }, metadata);
    const cases: [Record<string, string>, string, RegExp][] = [
      [
        { [CONSISTENCY]: 'sometimes' },
        CONSISTENCY,
        /must be strong, session or bounded, got "sometimes"/,
      ],
      [
        { [CONSISTENCY]: 'session', [SESSION_TOKEN]: 'not-a-token' },
        SESSION_TOKEN,
        /is not a session token/,
      ],
      [{ [SESSION_TOKEN]: '1:0=zero' }, SESSION_TOKEN, /is not a session token/],
      [{ [CONSISTENCY]: 'bounded' }, MAX_STALENESS, /must be a whole number of milliseconds/],
      [
        { [CONSISTENCY]: 'bounded', [MAX_STALENESS]: '-5' },
        MAX_STALENESS,
        /must be a whole number/,
      ],
    ];
    for (const [metadata, key, message] of cases) {
      const error = await rejection(getCell(metadata));
      expect(error.code, JSON.stringify(metadata)).to.equal(status.INVALID_ARGUMENT);
      expect(error.details, JSON.stringify(metadata)).to.include(key).and.match(message);
      const streamed = await rejection(whereWith(b.api, whereRate(2000), metadata));
      expect(streamed.code, `Where ${JSON.stringify(metadata)}`).to.equal(status.INVALID_ARGUMENT);
      expect(streamed.details).to.include(key);
      // The same channel answers the next call, and calls that read no replica ignore it.
      expect((await getCell({})).response.cell!.uuid).to.equal(uuid);
      const described = await callWith(b.api.client, b.api.client.describeStore, {}, metadata);
      expect(described.response.shardsCount).to.equal(SHARDS);
    }
    // A write that brings back a token it was not given is refused before it writes anything.
    const before = (await b.api.getCell({ model: 'rate', uuid, cell: 'base' })).cell!.refKey;
    const write = await rejection(
      callWith(
        a.api.client,
        a.api.client.writeCell,
        {
          model: 'rate',
          uuid,
          cell: 'base',
          body: pack({ x: 1 }),
          mode: WriteMode.WRITE_MODE_MERGE,
          requestId: requestId(),
        },
        { [SESSION_TOKEN]: 'garbage' },
      ),
    );
    expect(write.code).to.equal(status.INVALID_ARGUMENT);
    expect(write.details).to.include(SESSION_TOKEN);
    expect((await b.api.getCell({ model: 'rate', uuid, cell: 'base' })).cell!.refKey).to.equal(
      before,
    );
  });

  it('a store whose tables the gem made, served with a replica added: answers via the replica equal the primary’s', async () => {
    const GEM_SHARDS = 4;
    const gemPrimary = withDatabase(set.primary.url, 'gem');
    const sql = await mysql.createConnection({ uri: set.primary.url, timezone: 'Z' });
    let gem: StoreFixture | undefined;
    try {
      await sql.query('CREATE DATABASE gem');
      await sql.query('USE gem');
      for (const shard of range(GEM_SHARDS)) {
        for (const statement of gemTablesSql('ht', shard)) await sql.query(statement);
      }
      // Rows as the gem writes them: base versions 0 and 1 and a meta cell, then the index rows.
      const rates = range(6).map((i) => ({
        uuid: randomUUID(),
        values: {
          hotel_id: 7 + i,
          room_type: 'roomy',
          check_in_date: '2024-01-01',
          gateway: 'sabre',
          discount_type: 'geo',
        },
      }));
      for (const { uuid, values } of rates) {
        const table = `ht_rate_${String(contentShardOf(uuid, GEM_SHARDS)).padStart(6, '0')}`;
        for (const [cell, refKey, body] of [
          ['base', 0, { ...values, net_rate: 90 }],
          ['meta', 0, { flag: true }],
          ['base', 1, { ...values, net_rate: 95.5 }],
        ] as const) {
          await sql.query(
            `INSERT INTO \`${table}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, ?, ?, ?, ?)`,
            [uuid, cell, refKey, pack(body), '2024-01-01 10:00:00'],
          );
        }
        const shard = String(values.hotel_id % GEM_SHARDS).padStart(6, '0');
        await sql.query(
          `INSERT INTO \`ht_rate_primary_index_${shard}\` (hotel_id, room_type, check_in_date, uuid) VALUES (?, ?, ?, ?)`,
          [values.hotel_id, values.room_type, values.check_in_date, uuid],
        );
        await sql.query(
          `INSERT INTO \`ht_rate_secondary_index_${shard}\` (hotel_id, gateway, discount_type, uuid) VALUES (?, ?, ?, ?)`,
          [values.hotel_id, values.gateway, values.discount_type, uuid],
        );
      }
      gem = await startStoreFixture({
        partitionUrls: [gemPrimary],
        replicas: [{ partition: 0, url: withDatabase(replicaServer.url, 'gem') }],
        replicaCheckIntervalMs: CHECK_MS,
        replicaMaxLagMs: MAX_LAG_MS,
        namespace: 'ht',
        shardsCount: GEM_SHARDS,
      });
      await gem.api.defineModel({ model: RATE_MODEL });
      await set.waitForReplicaToCatchUp(replicaServer);
      await waitForReplicaState(gem.api, Replica_State.STATE_SERVING, 10_000);

      const answers = async (metadata: Record<string, string>) => {
        const cells: (Cell | undefined)[] = [];
        for (const { uuid, values } of rates) {
          for (const [cell, refKey] of [
            ['base', undefined],
            ['base', 0],
            ['meta', undefined],
          ] as const) {
            const { response } = await callWith(
              gem!.api.client,
              gem!.api.client.getCell,
              { model: 'rate', uuid, cell, ...(refKey === undefined ? {} : { refKey }) },
              metadata,
            );
            cells.push(response.cell);
          }
          const pages = await whereWith(gem!.api, whereRate(values, ['base', 'meta']), metadata);
          cells.push(...pages.flatMap((page) => page.records.flatMap((record) => record.cells)));
        }
        return cells;
      };
      const fromPrimary = await answers({});
      expect(fromPrimary.filter((cell) => cell !== undefined)).to.have.length(rates.length * 5);
      const count = await counters();
      const ROUNDS = 10;
      for (let round = 0; round < ROUNDS; round += 1) {
        const fromReplica = await answers(round % 2 === 0 ? sessionRead() : boundedRead(10_000));
        expect(fromReplica, `round ${round}`).to.deep.equal(fromPrimary);
      }
      const deltas = await count.delta();
      // Three engines probe the replica now: A, B and this one.
      const probes = probeBound(deltas.elapsedMs, CHECK_MS, ENGINES + 1);
      const replicaStatements = deltas.replicaSelects - deltas.replicaGtidWaits;
      console.log(
        `      gem store, ${ROUNDS} rounds of ${rates.length * 4} reads: replica Com_select ${deltas.replicaSelects} ` +
          `(at most ${probes} lag probes), primary Com_select ${deltas.primarySelects}`,
      );
      // Each read is one statement of its own (sequential, nothing to coalesce them; the Where
      // reads its index row and cells in one): all of them on the replica, beside the lag
      // probes that landed there, of which `probes` is a bound and not a count.
      const reads = ROUNDS * rates.length * 4;
      expect(replicaStatements, 'read statements on the replica').to.be.within(
        reads,
        reads + probes,
      );
    } finally {
      await gem?.close();
      await sql.query('DROP DATABASE IF EXISTS gem');
      await sql.end();
    }
  });
});
