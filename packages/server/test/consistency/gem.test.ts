// SPEC §2, compatibility with the Ruby gem's data: tables and rows made exactly as the gem
// makes them (plain SQL, before the server defines the model) are served with the gem's
// answers, and what the server writes into them is what the gem's own queries expect.
import { randomUUID } from 'node:crypto';
import { RATE_MODEL } from '../support/storeFixture.js';
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { Operator, WriteMode, type Cell } from '@shameless/proto';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { Unpackr } from 'msgpackr';
import { collect, rejection } from '../support/grpcCalls.js';
import { type StoreFixture, pack, startStoreFixture, unpack } from '../support/storeFixture.js';
import { contentShardOf, newRequestId, pad, range } from './support.js';

const NS = 'ht';
const SHARDS = 4;
const content = (shard: number) => `${NS}_rate_${pad(shard)}`;
const primaryIndex = (shard: number) => `${NS}_rate_primary_index_${pad(shard)}`;
const secondaryIndex = (shard: number) => `${NS}_rate_secondary_index_${pad(shard)}`;

/** The gem's tables: Sequel's create_table as in lib/shameless/{model,index}.rb. */
function gemTablesSql(shard: number): string[] {
  return [
    `CREATE TABLE \`${content(shard)}\` (
      \`id\` INT AUTO_INCREMENT PRIMARY KEY,
      \`uuid\` varchar(36) NULL,
      \`column_name\` varchar(255) NOT NULL,
      \`ref_key\` int NOT NULL,
      \`body\` mediumblob,
      \`created_at\` datetime NOT NULL,
      UNIQUE KEY \`${content(shard)}_uuid_column_name_ref_key_index\` (\`uuid\`, \`column_name\`, \`ref_key\`)
    )`,
    `CREATE TABLE \`${primaryIndex(shard)}\` (
      \`hotel_id\` INT NOT NULL,
      \`room_type\` varchar(255) NOT NULL,
      \`check_in_date\` varchar(255) NOT NULL,
      \`uuid\` varchar(36),
      UNIQUE KEY \`${primaryIndex(shard)}_index\` (\`hotel_id\`, \`room_type\`, \`check_in_date\`)
    )`,
    `CREATE TABLE \`${secondaryIndex(shard)}\` (
      \`hotel_id\` INT NOT NULL,
      \`gateway\` varchar(255) NOT NULL,
      \`discount_type\` varchar(255) NOT NULL,
      \`uuid\` varchar(36),
      UNIQUE KEY \`${secondaryIndex(shard)}_index\` (\`hotel_id\`, \`gateway\`, \`discount_type\`)
    )`,
  ];
}

// The gem reads bodies with MessagePack.unpack: plain maps with string keys.
const strictUnpackr = new Unpackr({ mapsAsObjects: false, useRecords: false });
function gemDecode(body: Buffer): Record<string, unknown> {
  const value = strictUnpackr.unpack(body) as unknown;
  expect(value).to.be.instanceOf(Map);
  return plain(value) as Record<string, unknown>;
}
function plain(value: unknown): unknown {
  if (value instanceof Map) {
    for (const key of value.keys()) expect(key, 'a body map key').to.be.a('string');
    return Object.fromEntries([...value].map(([key, item]) => [key, plain(item)]));
  }
  return Array.isArray(value) ? value.map(plain) : value;
}

interface GemRow {
  id: number;
  uuid: string;
  column_name: string;
  ref_key: number;
  body: Buffer;
  created_at: Date;
}

/** A uuid whose content shard is `shard` (the gem uses SecureRandom.uuid). */
function uuidInShard(shard: number): string {
  for (;;) {
    const uuid = randomUUID();
    if (contentShardOf(uuid, SHARDS) === shard) return uuid;
  }
}

describe('consistency: compatibility with the gem’s data (§2)', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let sql: mysql.Connection;
  let store: StoreFixture;

  // Records the gem wrote: A with two base versions and a meta cell, B and C with one version.
  const A = {
    uuid: uuidInShard(1),
    v0: {
      hotel_id: 1,
      room_type: 'roomy',
      check_in_date: '2024-01-01',
      gateway: 'pegasus',
      discount_type: 'geo',
      net_rate: 90,
    },
    v1: {
      hotel_id: 1,
      room_type: 'roomy',
      check_in_date: '2024-01-01',
      gateway: 'pegasus',
      discount_type: 'geo',
      net_rate: 95,
      nested: { a: [1, 'x'] },
    },
    meta: { flag: true, note: null },
  };
  const B = {
    uuid: uuidInShard(1),
    v0: {
      hotel_id: 1,
      room_type: 'suite',
      check_in_date: '2024-01-02',
      gateway: 'sabre',
      discount_type: 'none',
      net_rate: 200,
    },
  };
  const C = {
    uuid: uuidInShard(2),
    v0: {
      hotel_id: 6,
      room_type: 'roomy',
      check_in_date: '2024-01-01',
      gateway: 'pegasus',
      discount_type: 'geo',
      net_rate: 70,
    },
  };
  const gemRows: Record<string, GemRow[]> = {};

  const gemPutIndex = async (uuid: string, v: typeof A.v0) => {
    await sql.query(
      `INSERT INTO \`${primaryIndex(v.hotel_id % SHARDS)}\` (hotel_id, room_type, check_in_date, uuid) VALUES (?, ?, ?, ?)`,
      [v.hotel_id, v.room_type, v.check_in_date, uuid],
    );
    await sql.query(
      `INSERT INTO \`${secondaryIndex(v.hotel_id % SHARDS)}\` (hotel_id, gateway, discount_type, uuid) VALUES (?, ?, ?, ?)`,
      [v.hotel_id, v.gateway, v.discount_type, uuid],
    );
  };
  /** Cell#save as the gem runs it: an INSERT naming only the gem's columns. */
  const gemSaveCell = async (
    uuid: string,
    cell: string,
    refKey: number,
    body: unknown,
    at: string,
  ) => {
    await sql.query(
      `INSERT INTO \`${content(contentShardOf(uuid, SHARDS))}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, ?, ?, ?, ?)`,
      [uuid, cell, refKey, pack(body), at],
    );
  };
  /** Cell#load as the gem runs it. */
  const gemFetchCell = async (uuid: string, cell: string) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT * FROM \`${content(contentShardOf(uuid, SHARDS))}\` WHERE uuid = ? AND column_name = ? ORDER BY ref_key DESC LIMIT 1`,
      [uuid, cell],
    );
    return rows[0] as GemRow | undefined;
  };
  /** Index#where as the gem runs it on the primary index. */
  const gemWhere = async (v: { hotel_id: number; room_type: string; check_in_date: string }) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT uuid FROM \`${primaryIndex(v.hotel_id % SHARDS)}\` WHERE hotel_id = ? AND room_type = ? AND check_in_date = ?`,
      [v.hotel_id, v.room_type, v.check_in_date],
    );
    return rows.map((row) => String(row.uuid));
  };

  before(async () => {
    databases = await createTestDatabases(1);
    sql = await mysql.createConnection({ uri: databases.urls[0]!, timezone: 'Z' });
    for (const shard of range(SHARDS)) {
      for (const statement of gemTablesSql(shard)) await sql.query(statement);
    }
    await gemSaveCell(A.uuid, 'base', 0, A.v0, '2024-01-01 10:00:00');
    await gemSaveCell(B.uuid, 'base', 0, B.v0, '2024-01-01 10:00:01');
    await gemSaveCell(A.uuid, 'meta', 0, A.meta, '2024-01-01 10:00:02');
    await gemSaveCell(A.uuid, 'base', 1, A.v1, '2024-01-01 10:00:03');
    await gemSaveCell(C.uuid, 'base', 0, C.v0, '2024-01-01 10:00:04');
    await gemPutIndex(A.uuid, A.v0);
    await gemPutIndex(B.uuid, B.v0);
    await gemPutIndex(C.uuid, C.v0);
    for (const shard of range(SHARDS)) {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT * FROM \`${content(shard)}\` ORDER BY id`,
      );
      gemRows[shard] = rows as GemRow[];
    }

    store = await startStoreFixture({
      partitionUrls: databases.urls,
      namespace: NS,
      shardsCount: SHARDS,
    });
  });
  after(async () => {
    await store?.close();
    await sql?.end();
    await databases?.drop();
  });

  const expectGemCell = (cell: Cell | undefined, row: GemRow) => {
    expect(cell, `cell ${row.id}`).to.not.equal(undefined);
    expect(cell!.id).to.equal(BigInt(row.id));
    expect(cell!.uuid).to.equal(row.uuid);
    expect(cell!.name).to.equal(row.column_name);
    expect(cell!.refKey).to.equal(row.ref_key);
    expect(cell!.createdAt!.getTime()).to.equal(row.created_at.getTime());
    expect(Buffer.compare(cell!.body, row.body), 'body bytes passed through untouched').to.equal(0);
  };
  const rowOf = (uuid: string, name: string, refKey: number) =>
    gemRows[contentShardOf(uuid, SHARDS)]!.find(
      (row) => row.uuid === uuid && row.column_name === name && row.ref_key === refKey,
    )!;

  it('DefineModel accepts the gem’s tables as they are, adding only the request_id column', async () => {
    const defined = await store.api.defineModel({ model: RATE_MODEL });
    expect(defined.changed).to.equal(true);
    const [columns] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'ht\\_rate\\_%' ORDER BY TABLE_NAME, ORDINAL_POSITION`,
    );
    const byTable = new Map<string, string[]>();
    for (const row of columns) {
      byTable.set(row.t, [...(byTable.get(row.t) ?? []), `${row.c} ${row.type}`]);
    }
    for (const shard of range(SHARDS)) {
      expect(byTable.get(content(shard))).to.deep.equal([
        'id int(11)',
        'uuid varchar(36)',
        'column_name varchar(255)',
        'ref_key int(11)',
        'body mediumblob',
        'created_at datetime',
        'request_id varchar(64)',
      ]);
      expect(byTable.get(primaryIndex(shard))).to.deep.equal([
        'hotel_id int(11)',
        'room_type varchar(255)',
        'check_in_date varchar(255)',
        'uuid varchar(36)',
      ]);
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT id FROM \`${content(shard)}\` ORDER BY id`,
      );
      expect(rows.map((row) => row.id)).to.deep.equal(gemRows[shard]!.map((row) => row.id));
    }
  });

  it('serves the gem’s records: Where, GetCell, Previous and FetchLatestCells give the gem’s answers', async () => {
    const where = async (
      index: string,
      conditions: { field: string; value: number | string }[],
      cells: string[],
    ) =>
      (
        await collect(
          store.api.client.where({
            model: 'rate',
            index,
            conditions: conditions.map(({ field, value }) => ({
              field,
              op: Operator.OPERATOR_EQ,
              values: [
                typeof value === 'number'
                  ? { kind: { $case: 'integer' as const, integer: BigInt(value) } }
                  : { kind: { $case: 'string' as const, string: value } },
              ],
            })),
            cells,
            order: 0,
            limit: 0,
            pageToken: '',
          }),
        )
      ).flatMap((message) => message.records);

    const hotel1 = await where('', [{ field: 'hotel_id', value: 1 }], ['base', 'meta']);
    expect(hotel1.map((record) => record.uuid)).to.deep.equal([A.uuid, B.uuid]);
    expectGemCell(hotel1[0]!.cells[0], rowOf(A.uuid, 'base', 1));
    expectGemCell(hotel1[0]!.cells[1], rowOf(A.uuid, 'meta', 0));
    expect(hotel1[1]!.cells.map((cell) => cell.name)).to.deep.equal(['base']);
    expectGemCell(hotel1[1]!.cells[0], rowOf(B.uuid, 'base', 0));
    expect(unpack(hotel1[0]!.cells[0]!.body)).to.deep.equal(A.v1);

    const bySecondary = await where(
      'secondary',
      [
        { field: 'hotel_id', value: 6 },
        { field: 'gateway', value: 'pegasus' },
      ],
      [],
    );
    expect(bySecondary.map((record) => record.uuid)).to.deep.equal([C.uuid]);

    const latest = await store.api.getCell({
      model: 'rate',
      uuid: A.uuid,
      cell: '',
      refKey: undefined,
    });
    expectGemCell(latest.cell, rowOf(A.uuid, 'base', 1));
    const first = await store.api.getCell({ model: 'rate', uuid: A.uuid, cell: 'base', refKey: 0 });
    expectGemCell(first.cell, rowOf(A.uuid, 'base', 0));
    const previous = await store.api.previous({
      model: 'rate',
      uuid: A.uuid,
      cell: 'base',
      refKey: 1,
    });
    expect(previous.none).to.equal(false);
    expectGemCell(previous.cell, rowOf(A.uuid, 'base', 0));
    expect(unpack(previous.cell!.body)).to.deep.equal(A.v0);
    const none = await store.api.previous({ model: 'rate', uuid: A.uuid, cell: 'base', refKey: 0 });
    expect(none.none).to.equal(true);
    const meta = await store.api.getCell({
      model: 'rate',
      uuid: A.uuid,
      cell: 'meta',
      refKey: undefined,
    });
    expect(unpack(meta.cell!.body)).to.deep.equal(A.meta);

    for (const shard of range(SHARDS)) {
      const page = await store.api.fetchLatestCells({ model: 'rate', shard, cursor: 0n, limit: 0 });
      const rows = gemRows[shard]!;
      expect(page.cells).to.have.length(rows.length);
      rows.forEach((row, i) => expectGemCell(page.cells[i], row));
      expect(page.maxId).to.equal(BigInt(rows.length ? rows[rows.length - 1]!.id : 0));
      if (rows.length > 1) {
        const rest = await store.api.fetchLatestCells({
          model: 'rate',
          shard,
          cursor: BigInt(rows[0]!.id),
          limit: 0,
        });
        expect(rest.cells.map((cell) => cell.id)).to.deep.equal(
          rows.slice(1).map((row) => BigInt(row.id)),
        );
      }
    }
  });

  it('writes what the gem reads: Put update and create, WriteCell, read back with the gem’s SQL', async () => {
    // Put, update path on a gem record: the latest base shallow-merged with the non-index values.
    const update = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 1,
        room_type: 'roomy',
        check_in_date: '2024-01-01',
        net_rate: 99,
        currency: 'EUR',
      }),
      requestId: newRequestId('gem-update'),
    });
    expect(update.uuid).to.equal(A.uuid);
    expect(update.created).to.equal(false);
    expect(update.base!.refKey).to.equal(2);
    const aBase = (await gemFetchCell(A.uuid, 'base'))!;
    expect(aBase.ref_key).to.equal(2);
    expect(BigInt(aBase.id)).to.equal(update.base!.id);
    expect(gemDecode(aBase.body)).to.deep.equal({ ...A.v1, net_rate: 99, currency: 'EUR' });

    // Put, create path into the gem's tables: index rows and base version 0 where the gem looks.
    const values = {
      hotel_id: 3,
      room_type: 'loft',
      check_in_date: '2024-02-01',
      gateway: 'pegasus',
      discount_type: 'geo',
      net_rate: 120,
    };
    const created = await store.api.put({
      model: 'rate',
      values: pack(values),
      requestId: newRequestId('gem-create'),
    });
    expect(created.created).to.equal(true);
    expect(await gemWhere(values)).to.deep.equal([created.uuid]);
    const [secondary] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT uuid FROM \`${secondaryIndex(3 % SHARDS)}\` WHERE hotel_id = 3 AND gateway = 'pegasus' AND discount_type = 'geo'`,
    );
    expect(secondary.map((row) => row.uuid)).to.deep.equal([created.uuid]);
    const newBase = (await gemFetchCell(created.uuid, 'base'))!;
    expect(newBase.ref_key).to.equal(0);
    expect(BigInt(newBase.id)).to.equal(created.base!.id);
    expect(gemDecode(newBase.body)).to.deep.equal(values);

    // WriteCell appends the gem's next version of a cell.
    const written = await store.api.writeCell({
      model: 'rate',
      uuid: A.uuid,
      cell: 'meta',
      body: pack({ note: 'server' }),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId: newRequestId('gem-meta'),
    });
    const aMeta = (await gemFetchCell(A.uuid, 'meta'))!;
    expect(aMeta.ref_key).to.equal(1);
    expect(BigInt(aMeta.id)).to.equal(written.cell!.id);
    expect(gemDecode(aMeta.body)).to.deep.equal({ flag: true, note: 'server' });
  });

  it('answers a write with the cell a later read returns, created_at included, in the gem’s tables', async () => {
    // The gem's created_at is a DATETIME without fractions: the stored time is whole seconds.
    const put = await store.api.put({
      model: 'rate',
      values: pack({ hotel_id: 6, room_type: 'roomy', check_in_date: '2024-01-01', net_rate: 75 }),
      requestId: newRequestId('gem-time'),
    });
    const written = await store.api.writeCell({
      model: 'rate',
      uuid: C.uuid,
      cell: 'meta',
      body: pack({ at: 'now' }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: newRequestId('gem-time'),
    });
    for (const answered of [put.base!, written.cell!]) {
      const read = (
        await store.api.getCell({
          model: 'rate',
          uuid: C.uuid,
          cell: answered.name,
          refKey: answered.refKey,
        })
      ).cell!;
      const row = (await gemFetchCell(C.uuid, answered.name))!;
      expect(read.createdAt!.getTime()).to.equal(row.created_at.getTime());
      expect(
        { ...answered, body: answered.body.toString('hex') },
        `the ${answered.name} cell as the write answered it and as GetCell reads it`,
      ).to.deep.equal({ ...read, body: read.body.toString('hex') });
    }
  });

  it('refuses a create whose values the gem’s unique secondary index holds, leaving nothing', async () => {
    // The gem's secondary tables are unique on their fields; A already holds (1, pegasus, geo).
    const values = {
      hotel_id: 1,
      room_type: 'twin',
      check_in_date: '2024-03-01',
      gateway: 'pegasus',
      discount_type: 'geo',
    };
    const requestId = newRequestId('gem-dup');
    const contentBefore = await allContentIds();
    for (const attempt of ['first', 'retried with the same request id']) {
      const error = await rejection(
        store.api.put({ model: 'rate', values: pack(values), requestId }),
      );
      expect(error.code, attempt).to.equal(status.ALREADY_EXISTS);
      expect(error.details).to.equal(
        'index secondary of rate already holds hotel_id=1, gateway="pegasus", discount_type="geo" for another record (a unique index created by the Ruby gem)',
      );
    }
    expect(await gemWhere(values), 'no primary-index row').to.deep.equal([]);
    const [secondary] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT uuid FROM \`${secondaryIndex(1)}\` WHERE hotel_id = 1 AND gateway = 'pegasus' AND discount_type = 'geo'`,
    );
    expect(secondary.map((row) => row.uuid)).to.deep.equal([A.uuid]);
    expect(await allContentIds(), 'no content row').to.deep.equal(contentBefore);

    // Through PutMany the refusal is that put's own result; the other put goes on.
    const { results } = await store.api.putMany({
      puts: [
        { model: 'rate', values: pack(values), requestId: newRequestId('gem-dup') },
        {
          model: 'rate',
          values: pack({ ...values, room_type: 'other', gateway: 'fresh' }),
          requestId: newRequestId('gem-ok'),
        },
      ],
    });
    expect(results[0]!.outcome?.$case === 'error' && results[0]!.outcome.error.code).to.equal(
      status.ALREADY_EXISTS,
    );
    expect(results[1]!.outcome?.$case === 'put' && results[1]!.outcome.put.created).to.equal(true);
  });

  /** Every content row's id, per shard. */
  async function allContentIds() {
    const ids: string[] = [];
    for (const shard of range(SHARDS)) {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT id FROM \`${content(shard)}\` ORDER BY id`,
      );
      ids.push(...rows.map((row) => `${shard}/${row.id}`));
    }
    return ids;
  }

  // Known limitation (README, Storage layout): tables made with the gem's
  // legacy_created_at_is_bigint option are served but cannot be written yet (the server writes
  // a DATETIME). Pending until DefineModel records the column's type.
  it.skip('serves and writes a store made with the gem’s legacy_created_at_is_bigint option', async () => {
    // With that option the gem's created_at column is a BIGINT of milliseconds.
    const legacy = (shard: number) => `${NS}_legacy_${pad(shard)}`;
    for (const shard of range(SHARDS)) {
      await sql.query(
        gemTablesSql(shard)[0]!
          .replaceAll(content(shard), legacy(shard))
          .replace('`created_at` datetime NOT NULL', '`created_at` bigint NOT NULL'),
      );
      await sql.query(
        gemTablesSql(shard)[1]!.replaceAll(
          primaryIndex(shard),
          `${NS}_legacy_primary_index_${pad(shard)}`,
        ),
      );
    }
    const uuid = uuidInShard(0);
    const values = { hotel_id: 4, room_type: 'r', check_in_date: 'd', net_rate: 1 };
    await sql.query(
      `INSERT INTO \`${legacy(0)}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, 'base', 0, ?, ?)`,
      [uuid, pack(values), 1700000000123],
    );
    await sql.query(
      `INSERT INTO \`${NS}_legacy_primary_index_000000\` (hotel_id, room_type, check_in_date, uuid) VALUES (4, 'r', 'd', ?)`,
      [uuid],
    );
    await store.api.defineModel({
      model: {
        name: 'legacy',
        primaryIndex: RATE_MODEL.primaryIndex,
        secondaryIndices: [],
        cells: [],
      },
    });
    const read = await store.api.getCell({
      model: 'legacy',
      uuid,
      cell: 'base',
      refKey: undefined,
    });
    expect(read.cell!.createdAt!.getTime()).to.equal(1700000000123);

    const before = Date.now();
    const update = await store.api
      .put({
        model: 'legacy',
        values: pack({ ...values, net_rate: 2 }),
        requestId: newRequestId('legacy'),
      })
      .then(
        (response) => response,
        (error: unknown) => String((error as Error).message),
      );
    expect(update, 'a Put into the legacy table').to.not.be.a('string');
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT ref_key, created_at FROM \`${legacy(0)}\` WHERE uuid = ? ORDER BY ref_key DESC LIMIT 1`,
      [uuid],
    );
    expect(rows[0]!.ref_key).to.equal(1);
    expect(Number(rows[0]!.created_at), 'milliseconds, as the gem writes them').to.be.within(
      before - 1000,
      Date.now() + 1000,
    );
  });

  it('keeps serving rows the gem writes after the server took over the tables', async () => {
    // The gem saves B's next version: its INSERT names only its own columns.
    await gemSaveCell(B.uuid, 'base', 1, { ...B.v0, net_rate: 210 }, '2024-01-03 08:00:00');
    const latest = await store.api.getCell({
      model: 'rate',
      uuid: B.uuid,
      cell: 'base',
      refKey: undefined,
    });
    expect(latest.cell!.refKey).to.equal(1);
    expect(unpack(latest.cell!.body).net_rate).to.equal(210);
    const shard = contentShardOf(B.uuid, SHARDS);
    const page = await store.api.fetchLatestCells({ model: 'rate', shard, cursor: 0n, limit: 0 });
    expect(page.cells[page.cells.length - 1]!.id).to.equal(latest.cell!.id);
    expect(page.maxId).to.equal(latest.cell!.id);
    // And the server appends after it.
    const next = await store.api.put({
      model: 'rate',
      values: pack({ hotel_id: 1, room_type: 'suite', check_in_date: '2024-01-02', net_rate: 220 }),
      requestId: newRequestId('gem-after'),
    });
    expect(next.base!.refKey).to.equal(2);
    expect(gemDecode((await gemFetchCell(B.uuid, 'base'))!.body)).to.deep.equal({
      ...B.v0,
      net_rate: 220,
    });
  });
});
