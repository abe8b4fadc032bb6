// What a lone point Where costs MariaDB (issue 55), told by the server itself: a private
// MariaDB, so that its counters hold this store's statements alone, with its general log as a
// table, one row per query a client sent as text (a round trip, however many statements it
// carries) or ran prepared (an Execute), and Com_select counting the statements (the test kit's
// watchStatements). The Prepare a connection sends the second time it reads a text, once
// (preparedReads.ts, pinned in preparedReads.test.ts), is left out: which of the pool's
// connections a read gets decides when it comes. A point Where whose
// record the server remembers reads the primary-index row and the record's cells in one
// statement; one the server never saw takes a second round trip, once. Pinned here so that
// neither count grows back unnoticed.
import { expect } from 'chai';
import { Operator, type WhereRequest } from '@shameless/proto';
import mysql from 'mysql2/promise';
import {
  type MariaDbServer,
  createTestDatabases,
  startMariaDbServer,
  watchStatements,
} from '@shameless/testkit';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  putRate,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';

const SHARDS = 4;
const DATE = '2026-01-01';
/** Probes would land in the windows counted: one an hour is none. */
const NO_PROBES_MS = 3_600_000;

describe('a lone point Where, counted by MariaDB', function () {
  this.timeout(120_000);
  let server: MariaDbServer;
  let urls: string[];
  let store: StoreFixture;
  let admin: mysql.Connection;
  let adminThread: number;
  const uuids = new Map<number, string>();

  before(async () => {
    server = await startMariaDbServer();
    urls = (await createTestDatabases(1, { baseUrl: server.url })).urls;
    store = await startStoreFixture({
      partitionUrls: urls,
      shardsCount: SHARDS,
      healthCheckIntervalMs: NO_PROBES_MS,
    });
    await store.api.defineModel({ model: RATE_MODEL });
    for (let hotel = 0; hotel < 20; hotel++)
      uuids.set(hotel, await putRate(store.api, hotel, DATE));
    admin = await mysql.createConnection(server.url);
    const [[row]] = await admin.query<mysql.RowDataPacket[]>('SELECT CONNECTION_ID() AS id');
    adminThread = Number(row!.id);
    await admin.query("SET GLOBAL log_output = 'TABLE'");
  });
  after(async () => {
    await admin?.end();
    await store?.close();
    await server?.destroy();
  });

  /** Every field of the primary index given with =. */
  const pointWhere = (hotel: number, cells = ['base']): Partial<WhereRequest> => ({
    conditions: [
      {
        field: 'hotel_id',
        op: Operator.OPERATOR_EQ,
        values: [{ kind: { $case: 'integer', integer: BigInt(hotel) } }],
      },
      ...(['room_type', 'check_in_date'] as const).map((field) => ({
        field,
        op: Operator.OPERATOR_EQ,
        values: [
          {
            kind: {
              $case: 'string' as const,
              string: field === 'room_type' ? 'double' : DATE,
            },
          },
        ],
      })),
    ],
    cells,
  });

  /**
   * What `work` cost MariaDB: the queries clients sent, as text or by a prepared statement's
   * handle (round trips), and the SELECTs run.
   */
  async function counted<T>(work: () => Promise<T>) {
    await admin.query('SET GLOBAL general_log = 0');
    await admin.query('TRUNCATE mysql.general_log');
    const statements = await watchStatements([server.url]);
    await admin.query('SET GLOBAL general_log = 1');
    const answer = await work();
    await admin.query('SET GLOBAL general_log = 0');
    const { servers } = await statements.delta();
    const [trips] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT CONVERT(argument USING utf8mb4) AS \`sql\` FROM mysql.general_log
        WHERE command_type IN ('Query', 'Execute') AND thread_id <> ?`,
      [adminThread],
    );
    return {
      answer,
      roundTrips: trips.length,
      selects: servers[0]!.selects,
      sql: trips.map((trip) => String(trip.sql)),
    };
  }

  it('reads a remembered record with one statement: its index row and its cells together', async () => {
    // The server created these records: it remembers which record holds each tuple.
    const lone = await counted(() => store.api.where(pointWhere(3)));
    expect(lone.answer.flatMap((page) => page.records.map((record) => record.uuid))).to.deep.equal([
      uuids.get(3),
    ]);
    expect(lone.answer[0]!.records[0]!.cells.map((cell) => cell.name)).to.deep.equal(['base']);
    expect(lone.roundTrips, lone.sql.join('\n')).to.equal(1);
    expect(lone.selects, lone.sql.join('\n')).to.equal(1);

    // Two cells: still one statement (a branch each); meta has no version, base has.
    const two = await counted(() => store.api.where(pointWhere(4, ['base', 'meta'])));
    expect(two.answer[0]!.records[0]!.cells.map((cell) => cell.name)).to.deep.equal(['base']);
    expect([two.roundTrips, two.selects], two.sql.join('\n')).to.deep.equal([1, 1]);
  });

  it('costs a second round trip only on a server that never saw the values, once', async () => {
    const other = await startStoreFixture({
      partitionUrls: urls,
      shardsCount: SHARDS,
      healthCheckIntervalMs: NO_PROBES_MS,
    });
    try {
      await other.api.describeStore({});
      const cold = await counted(() => other.api.where(pointWhere(5)));
      expect(cold.answer[0]!.records.map((record) => record.uuid)).to.deep.equal([uuids.get(5)]);
      // The index, then the cells of the record it leads to.
      expect([cold.roundTrips, cold.selects], cold.sql.join('\n')).to.deep.equal([2, 2]);
      const warm = await counted(() => other.api.where(pointWhere(5)));
      expect(warm.answer[0]!.records.map((record) => record.uuid)).to.deep.equal([uuids.get(5)]);
      expect([warm.roundTrips, warm.selects], warm.sql.join('\n')).to.deep.equal([1, 1]);
    } finally {
      await other.close();
    }
  });

  it('answers values no record holds with the one statement', async () => {
    // Remembered, then taken out of the index behind the server's back.
    await putRate(store.api, 50, DATE);
    await admin.query(
      `DELETE FROM \`${new URL(urls[0]!).pathname.slice(1)}\`.\`test_rate_primary_index_000002\`
        WHERE hotel_id = 50`,
    );
    const gone = await counted(() => store.api.where(pointWhere(50)));
    expect(gone.answer.flatMap((page) => page.records)).to.deep.equal([]);
    expect([gone.roundTrips, gone.selects], gone.sql.join('\n')).to.deep.equal([1, 1]);
  });

  it('reads sixteen point Wheres of one turn with one statement per read part', async () => {
    const hotels = Array.from({ length: 16 }, (_, i) => i);
    const turn = await counted(() =>
      Promise.all(
        hotels.map((hotel) =>
          store.engine.where(UNBOUNDED, {
            model: 'rate',
            index: '',
            conditions: [
              { field: 'hotel_id', op: 'eq', values: [hotel] },
              { field: 'room_type', op: 'eq', values: ['double'] },
              { field: 'check_in_date', op: 'eq', values: [DATE] },
            ],
            cells: [],
            descending: false,
            limit: 0,
            pageToken: '',
          }),
        ),
      ),
    );
    expect(turn.answer.map((page) => page.records.map((record) => record.uuid))).to.deep.equal(
      hotels.map((hotel) => [uuids.get(hotel)]),
    );
    // Two parts of eight (readSplit.ts), each one SELECT in a round trip of its own: before,
    // the rows and the cells were read apart, two parts each.
    expect([turn.roundTrips, turn.selects], turn.sql.join('\n')).to.deep.equal([2, 2]);
  });

  it('reads the version a put just appended, with the one statement', async () => {
    const put = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 3,
        room_type: 'double',
        check_in_date: DATE,
        gateway: 'g',
        discount_type: 'd',
        price: 2,
      }),
      requestId: requestId(),
    });
    expect(put.uuid).to.equal(uuids.get(3));
    const after = await counted(() => store.api.where(pointWhere(3)));
    expect(after.answer[0]!.records[0]!.cells[0]!.refKey).to.equal(1);
    expect([after.roundTrips, after.selects], after.sql.join('\n')).to.deep.equal([1, 1]);
  });
});
