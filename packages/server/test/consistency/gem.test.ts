// SPEC §2, compatibility with the Ruby gem's data: tables and rows made exactly as the gem
// makes them (plain SQL, before the server defines the model) are served with the gem's
// answers, and what the server writes into them is what the gem's own queries expect; also
// for a store the gem made with legacy_created_at_is_bigint. `shameless plan` shows what
// serving such a store changes, before it does.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RATE_MODEL } from '../support/storeFixture.js';
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import {
  Operator,
  WriteMode,
  type Cell,
  type ModelDefinition,
  type WriteCellResult,
} from '@shameless/proto';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { Unpackr } from 'msgpackr';
import { collect, rejection } from '../support/grpcCalls.js';
import { GroupMember } from '../support/groupMember.js';
import { fixint, float64, object, str, uint64 } from '../support/msgpackBytes.js';
import { gemTablesSql as gemTables } from '../support/gemTables.js';
import { runCommand } from '../support/serverProcess.js';
import { type StoreFixture, pack, startStoreFixture, unpack } from '../support/storeFixture.js';
import { StoreConfigError, openStore } from '../../src/engine/openStore.js';
import { type Logger, silentLogger } from '../../src/engine/base/logger.js';
import { addRequestIdColumnSql } from '../../src/engine/mysql/sql/contentDdl.js';
import {
  createLogLocksTableSql,
  createModelsTableSql,
  createStoreTableSql,
} from '../../src/engine/mysql/sql/storeTables.js';
import { contentShardOf, newRequestId, pad, range } from './support.js';

const NS = 'ht';
const SHARDS = 4;
const content = (shard: number, model = 'rate') => `${NS}_${model}_${pad(shard)}`;
const primaryIndex = (shard: number, model = 'rate') =>
  `${NS}_${model}_primary_index_${pad(shard)}`;
const secondaryIndex = (shard: number, model = 'rate') =>
  `${NS}_${model}_secondary_index_${pad(shard)}`;

/** The gem's tables of one shard of this file's namespace (../support/gemTables.ts). */
const gemTablesSql = (shard: number, options: Parameters<typeof gemTables>[2] = {}) =>
  gemTables(NS, shard, options);

async function createGemTables(sql: mysql.Connection, options: Parameters<typeof gemTablesSql>[1]) {
  for (const shard of range(SHARDS)) {
    for (const statement of gemTablesSql(shard, options)) await sql.query(statement);
  }
}

/**
 * The schema of the tables whose names match `like`, as information_schema describes it: every
 * column with its type, and every key. Equal before and after means nothing was changed.
 */
async function schemaOf(sql: mysql.Connection, like = '%'): Promise<string[]> {
  const [columns] = await sql.query<mysql.RowDataPacket[]>(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type, IS_NULLABLE AS nullable
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?
      ORDER BY TABLE_NAME, ORDINAL_POSITION`,
    [like],
  );
  const [keys] = await sql.query<mysql.RowDataPacket[]>(
    `SELECT TABLE_NAME AS t, INDEX_NAME AS k, SEQ_IN_INDEX AS seq, COLUMN_NAME AS c, NON_UNIQUE AS nonUnique
       FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?
      ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
    [like],
  );
  return [
    ...columns.map((row) => `${row.t}.${row.c} ${row.type} nullable=${row.nullable}`),
    ...keys.map((row) => `${row.t} key ${row.k}#${row.seq} ${row.c} unique=${!row.nonUnique}`),
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

/** Cell#save as the gem runs it: an INSERT naming only the gem's columns. */
async function gemInsertCell(
  sql: mysql.Connection,
  cell: {
    model?: string;
    uuid: string;
    cell: string;
    refKey: number;
    body: unknown;
    /** A DATETIME, or milliseconds with legacy_created_at_is_bigint. */
    createdAt: string | number;
  },
): Promise<void> {
  await sql.query(
    `INSERT INTO \`${content(contentShardOf(cell.uuid, SHARDS), cell.model)}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, ?, ?, ?, ?)`,
    [cell.uuid, cell.cell, cell.refKey, pack(cell.body), cell.createdAt],
  );
}

/** Cell#load as the gem runs it: the latest version of a cell, or the given one. */
async function gemLoadCell(
  sql: mysql.Connection,
  uuid: string,
  cell: string,
  { model = 'rate', refKey }: { model?: string; refKey?: number } = {},
): Promise<mysql.RowDataPacket | undefined> {
  const [rows] = await sql.query<mysql.RowDataPacket[]>(
    `SELECT * FROM \`${content(contentShardOf(uuid, SHARDS), model)}\` WHERE uuid = ? AND column_name = ?${refKey === undefined ? '' : ' AND ref_key = ?'} ORDER BY ref_key DESC LIMIT 1`,
    refKey === undefined ? [uuid, cell] : [uuid, cell, refKey],
  );
  return rows[0];
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
  const gemSaveCell = (uuid: string, cell: string, refKey: number, body: unknown, at: string) =>
    gemInsertCell(sql, { uuid, cell, refKey, body, createdAt: at });
  const gemFetchCell = async (uuid: string, cell: string) =>
    (await gemLoadCell(sql, uuid, cell)) as GemRow | undefined;
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

  it('puts to a record whose primary-index row has no base cell: base version 0, as the gem’s update', async () => {
    // A row the gem never leaves (it writes the cell first) but a restore or a hand can.
    const values = {
      hotel_id: 1,
      room_type: 'attic',
      check_in_date: '2024-03-01',
      gateway: 'amadeus',
      discount_type: 'none',
      net_rate: 150,
    };
    const uuid = uuidInShard(1);
    await gemPutIndex(uuid, values);
    const requestId = newRequestId('gem-orphan');
    const put = await store.api.put({ model: 'rate', values: pack(values), requestId });
    expect(put.uuid).to.equal(uuid);
    expect(put.base!.refKey).to.equal(0);
    const base = (await gemFetchCell(uuid, 'base'))!;
    expect(base.ref_key).to.equal(0);
    expect(gemDecode(base.body)).to.deep.equal(values);
    // Its retry answers the same version; the next put merges onto it.
    const retried = await store.api.put({ model: 'rate', values: pack(values), requestId });
    expect(retried.base!.id).to.equal(put.base!.id);
    expect(retried.created).to.equal(put.created);
    const next = await store.api.put({
      model: 'rate',
      values: pack({ ...values, net_rate: 160 }),
      requestId: newRequestId('gem-orphan'),
    });
    expect(next.created).to.equal(false);
    expect(next.base!.refKey).to.equal(1);
    expect(gemDecode((await gemFetchCell(uuid, 'base'))!.body)).to.deep.equal({
      ...values,
      net_rate: 160,
    });
  });

  it('tells request ids apart by case in the gem’s tables, whatever their collation', async () => {
    // The gem's tables take the database's collation (here utf8mb4_general_ci, case-blind);
    // the request_id column added to them must compare ids exactly.
    const write = (requestId: string, note: string) =>
      store.api.writeCell({
        model: 'rate',
        uuid: C.uuid,
        cell: 'meta',
        body: pack({ note }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId,
      });
    const id = newRequestId('Case');
    const upper = await write(id, 'upper');
    const lower = await write(id.toLowerCase(), 'lower');
    expect(lower.replayed).to.equal(false);
    expect(lower.cell!.refKey).to.equal(upper.cell!.refKey + 1);
    const again = await write(id, 'upper again');
    expect(again.replayed).to.equal(true);
    expect(again.cell!.id).to.equal(upper.cell!.id);
  });

  it('keeps the bytes of the values the gem wrote through a server merge (a Ruby float stays a float)', async () => {
    // What Ruby's MessagePack writes for {"net_rate" => 120.0, "big" => 2**40, ...}: a float64
    // and a uint64, which a decode and encode in JavaScript would turn into other encodings.
    const uuid = uuidInShard(3);
    const rubyBody = object({
      hotel_id: fixint(9),
      room_type: str('ruby'),
      check_in_date: str('2024-04-01'),
      gateway: str('pegasus'),
      discount_type: str('none'),
      net_rate: float64(120),
      big: uint64(2n ** 40n),
    });
    await sql.query(
      `INSERT INTO \`${content(contentShardOf(uuid, SHARDS))}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, 'base', 0, ?, ?)`,
      [uuid, rubyBody, '2024-04-01 10:00:00'],
    );
    await gemPutIndex(uuid, {
      hotel_id: 9,
      room_type: 'ruby',
      check_in_date: '2024-04-01',
      gateway: 'pegasus',
      discount_type: 'none',
    } as typeof A.v0);
    const update = await store.api.put({
      model: 'rate',
      values: pack({ hotel_id: 9, room_type: 'ruby', check_in_date: '2024-04-01', note: 'x' }),
      requestId: newRequestId('gem-float'),
    });
    expect(update.uuid).to.equal(uuid);
    const stored = (await gemFetchCell(uuid, 'base'))!;
    expect(stored.ref_key).to.equal(1);
    expect(stored.body).to.deep.equal(
      Buffer.concat([Buffer.from([0x88]), rubyBody.subarray(1), str('note'), str('x')]),
    );
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

  it('refuses a create whose integer the gem’s INT index columns cannot hold, leaving nothing', async () => {
    // An INSERT IGNORE would store 2147483647 instead, a plain INSERT fail its whole group.
    const values = {
      hotel_id: 3_000_000_000,
      room_type: 'wide',
      check_in_date: '2024-04-01',
      gateway: 'pegasus',
      discount_type: 'wide',
    };
    const contentBefore = await allContentIds();
    const error = await rejection(
      store.api.put({ model: 'rate', values: pack(values), requestId: newRequestId('gem-int') }),
    );
    expect(error.code).to.equal(status.INVALID_ARGUMENT);
    expect(error.details).to.match(
      /^values: hotel_id 3000000000 does not fit the column of index table \S+ \(int\(11\): -2147483648 to 2147483647\)/,
    );
    expect(
      await gemWhere({ ...values, hotel_id: 2_147_483_647 }),
      'no row at INT’s limit',
    ).to.deep.equal([]);
    expect(await allContentIds(), 'no content row').to.deep.equal(contentBefore);

    // Through PutMany the refusal is that put's own result; the other put goes on.
    const { results } = await store.api.putMany({
      puts: [
        { model: 'rate', values: pack(values), requestId: newRequestId('gem-int') },
        {
          model: 'rate',
          values: pack({ ...values, hotel_id: 2_147_483_647 }),
          requestId: newRequestId('gem-int-ok'),
        },
      ],
    });
    expect(results[0]!.outcome?.$case === 'error' && results[0]!.outcome.error.code).to.equal(
      status.INVALID_ARGUMENT,
    );
    expect(results[1]!.outcome?.$case === 'put' && results[1]!.outcome.put.created).to.equal(true);
    expect(await gemWhere({ ...values, hotel_id: 2_147_483_647 })).to.have.length(1);
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

  it('refuses, changing nothing, a model whose gem tables hold created_at as BIGINT, naming the setting', async () => {
    // Tables the gem made with legacy_created_at_is_bigint, in a store not configured for them:
    // a DATETIME written there would fail (or, in a lax sql_mode, be stored as a wrong number).
    await createGemTables(sql, { model: 'legacy', legacyCreatedAtIsBigint: true });
    const before = await schemaOf(sql, 'ht\\_legacy\\_%');
    const refused = await rejection(
      store.api.defineModel({ model: { ...RATE_MODEL, name: 'legacy' } }),
    );
    expect(refused.code).to.equal(status.FAILED_PRECONDITION);
    expect(refused.details).to.match(
      /^table ht_legacy_00000\d has created_at BIGINT \(and 3 more tables\), but this store is configured to write DATETIME/,
    );
    expect(refused.details).to.include('legacy_created_at_is_bigint');
    expect(refused.details).to.include('--legacy-created-at-is-bigint');
    expect(await schemaOf(sql, 'ht\\_legacy\\_%'), 'no table created or altered').to.deep.equal(
      before,
    );
    const described = await store.api.describeStore({});
    expect(described.models.map((model) => model.name)).to.deep.equal(['rate']);
  });

  it('refuses to start with legacyCreatedAtIsBigint on a store whose models hold DATETIME', async () => {
    const opening = openStore(
      {
        namespace: NS,
        shardsCount: SHARDS,
        partitionUrls: databases.urls,
        createdAt: 'bigint',
        poolSize: 2,
        connectTimeoutMs: 1000,
        startupTimeoutMs: 0,
        followPollIntervalMs: 50,
      },
      silentLogger,
    );
    const error = await opening.then(
      () => expect.fail('the store opened'),
      (reason: unknown) => reason as Error,
    );
    expect(error).to.be.instanceOf(StoreConfigError);
    expect(error.message).to.match(
      /^table ht_rate_00000\d has created_at DATETIME \(and 3 more tables\), but this store is configured to write BIGINT milliseconds/,
    );
    expect(error.message).to.include('without the setting legacyCreatedAtIsBigint');
  });

  it('lets two servers define the same gem model at once, each adding what it finds missing', async () => {
    await createGemTables(sql, { model: 'twice' });
    const other = await startStoreFixture({
      partitionUrls: databases.urls,
      namespace: NS,
      shardsCount: SHARDS,
    });
    try {
      const model = { ...RATE_MODEL, name: 'twice' };
      const answers = await Promise.all([
        store.api.defineModel({ model }),
        other.api.defineModel({ model }),
      ]);
      expect(answers.map((answer) => answer.model?.name)).to.deep.equal(['twice', 'twice']);
      const [columns] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT TABLE_NAME AS t FROM information_schema.COLUMNS
          WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'ht\\_twice\\_0%' AND COLUMN_NAME = 'request_id'`,
      );
      expect(columns.map((row) => row.t).sort()).to.deep.equal(
        range(SHARDS).map((shard) => content(shard, 'twice')),
      );
    } finally {
      await other.close();
    }
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
  it('runs a consumer group over the gem’s tables: what the gem and the server wrote, then what the gem writes while it follows', async () => {
    const member = await GroupMember.join(store.api, { group: 'gem-readers' }, { autoAck: true });
    try {
      const rows = async () => {
        const all: { shard: number; id: number }[] = [];
        for (const shard of range(SHARDS)) {
          const [found] = await sql.query<mysql.RowDataPacket[]>(
            `SELECT id FROM \`${content(shard)}\` ORDER BY id`,
          );
          all.push(...found.map((row) => ({ shard, id: Number(row.id) })));
        }
        return all.map(({ shard, id }) => `${shard}/${id}`);
      };
      const delivered = () =>
        new Set(member.deliveries.map(({ cell }) => `${cell!.shard}/${cell!.id}`));
      const before = await rows();
      await member.until(() => before.every((key) => delivered().has(key)), 10_000, 'every row');
      // A row the gem writes itself, past the log lock, reaches the member too.
      await gemSaveCell(
        uuidInShard(3),
        'base',
        0,
        { ...C.v0, net_rate: 75 },
        '2024-01-04 08:00:00',
      );
      const after = await rows();
      expect(after.length).to.equal(before.length + 1);
      await member.until(() => after.every((key) => delivered().has(key)), 10_000, 'the gem’s row');
      // The group's rows are in the store's own tables, under its namespace.
      const [tables] = await sql.query<mysql.RowDataPacket[]>(
        "SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'ht\\_shameless\\_group\\_%' ORDER BY 1",
      );
      expect(tables.map((row) => row.t)).to.deep.equal([
        'ht_shameless_group_cells',
        'ht_shameless_group_members',
        'ht_shameless_group_shards',
      ]);
    } finally {
      if (!member.ended) member.cancel();
    }
  });
});

describe('consistency: the gem’s INT index columns on a server that did not define the model (§2)', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let sql: mysql.Connection;
  let definer: StoreFixture;
  let other: StoreFixture;
  let redefiner: StoreFixture;
  let extender: StoreFixture;

  before(async () => {
    databases = await createTestDatabases(1);
    sql = await mysql.createConnection({ uri: databases.urls[0]!, timezone: 'Z' });
    await createGemTables(sql, {});
    const open = () =>
      startStoreFixture({ partitionUrls: databases.urls, namespace: NS, shardsCount: SHARDS });
    // All start before the define: the others learn of the model from the models table, or
    // by defining it again, as it is or with a cell more.
    [definer, other, redefiner, extender] = [
      await open(),
      await open(),
      await open(),
      await open(),
    ];
  });
  after(async () => {
    await extender?.close();
    await redefiner?.close();
    await other?.close();
    await definer?.close();
    await sql?.end();
    await databases?.drop();
  });

  it('refuses a create whose integer they cannot hold there too, leaving nothing', async () => {
    await definer.api.defineModel({ model: RATE_MODEL });
    const values = {
      hotel_id: 3_000_000_001,
      room_type: 'wide',
      check_in_date: '2024-04-02',
      gateway: 'pegasus',
      discount_type: 'wide',
    };
    const error = await rejection(
      other.api.put({ model: 'rate', values: pack(values), requestId: newRequestId('learnt') }),
    );
    expect(error.code, error.details).to.equal(status.INVALID_ARGUMENT);
    expect(error.details).to.match(/^values: hotel_id 3000000001 does not fit the column/);
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT uuid FROM \`${primaryIndex(2_147_483_647 % SHARDS)}\` WHERE hotel_id = 2147483647`,
    );
    expect(rows, 'no row at INT’s limit').to.deep.equal([]);
  });

  const redefinitions: [string, () => StoreFixture, ModelDefinition, boolean][] = [
    ['again', () => redefiner, RATE_MODEL, false],
    [
      'with a cell more',
      () => extender,
      { ...RATE_MODEL, cells: [...RATE_MODEL.cells, 'extra'] },
      true,
    ],
  ];
  for (const [how, server, model, changed] of redefinitions) {
    it(`refuses it too on a server that learns of the model by defining it ${how}`, async () => {
      await definer.api.defineModel({ model: RATE_MODEL });
      // What every client does on connecting; the model is now known on that server.
      expect((await server().api.defineModel({ model })).changed).to.equal(changed);
      const hotelId = changed ? 3_000_000_003 : 3_000_000_002;
      const error = await rejection(
        server().api.put({
          model: 'rate',
          values: pack({
            hotel_id: hotelId,
            room_type: 'wide',
            check_in_date: '2024-04-03',
            gateway: 'pegasus',
            discount_type: 'wide',
          }),
          requestId: newRequestId('redefined'),
        }),
      );
      expect(error.code, error.details).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(
        new RegExp(`^values: hotel_id ${hotelId} does not fit the column`),
      );
    });
  }
});

describe('consistency: a gem store made with legacy_created_at_is_bigint, served with legacyCreatedAtIsBigint (§2)', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let sql: mysql.Connection;
  let store: StoreFixture;

  /** What the gem stores in created_at: `(Time.now.to_f * 1000).to_i`. */
  const GEM_MILLIS = 1_700_000_000_123;
  // A record the gem wrote: a version of base and one of meta.
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
    meta: { flag: true },
  };
  /** A row as the gem reads it: created_at is the column's raw integer. */
  type LegacyRow = Omit<GemRow, 'created_at'> & { created_at: unknown };

  before(async () => {
    databases = await createTestDatabases(1);
    sql = await mysql.createConnection({ uri: databases.urls[0]!, timezone: 'Z' });
    await createGemTables(sql, { legacyCreatedAtIsBigint: true });
    await gemInsertCell(sql, {
      uuid: A.uuid,
      cell: 'base',
      refKey: 0,
      body: A.v0,
      createdAt: GEM_MILLIS,
    });
    await gemInsertCell(sql, {
      uuid: A.uuid,
      cell: 'meta',
      refKey: 0,
      body: A.meta,
      createdAt: GEM_MILLIS + 1,
    });
    await sql.query(
      `INSERT INTO \`${primaryIndex(1)}\` (hotel_id, room_type, check_in_date, uuid) VALUES (1, 'roomy', '2024-01-01', ?)`,
      [A.uuid],
    );
    await sql.query(
      `INSERT INTO \`${secondaryIndex(1)}\` (hotel_id, gateway, discount_type, uuid) VALUES (1, 'pegasus', 'geo', ?)`,
      [A.uuid],
    );
    store = await startStoreFixture({
      partitionUrls: databases.urls,
      namespace: NS,
      shardsCount: SHARDS,
      createdAt: 'bigint',
    });
  });
  after(async () => {
    await store?.close();
    await sql?.end();
    await databases?.drop();
  });

  const createdAtTypes = async (model: string) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME AS t, COLUMN_TYPE AS type FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'created_at' AND TABLE_NAME LIKE ?
        ORDER BY TABLE_NAME`,
      [`${NS}\\_${model}\\_0%`],
    );
    return rows.map((row) => `${row.t} ${row.type}`);
  };

  it('DefineModel takes the gem’s BIGINT tables as they are, adding only request_id; reads answer the gem’s milliseconds exactly', async () => {
    expect((await store.api.defineModel({ model: RATE_MODEL })).changed).to.equal(true);
    expect(await createdAtTypes('rate')).to.deep.equal(
      range(SHARDS).map((shard) => `${content(shard)} bigint(20)`),
    );
    expect(await schemaOf(sql, content(1))).to.include(
      `${content(1)}.request_id varchar(64) nullable=YES`,
    );

    const base = await store.api.getCell({ model: 'rate', uuid: A.uuid, cell: 'base', refKey: 0 });
    expect(base.cell!.createdAt!.getTime()).to.equal(GEM_MILLIS);
    expect(unpack(base.cell!.body)).to.deep.equal(A.v0);
    const page = await store.api.fetchLatestCells({
      model: 'rate',
      shard: 1,
      cursor: 0n,
      limit: 0,
    });
    expect(page.cells.map((cell) => [cell.name, cell.createdAt!.getTime()])).to.deep.equal([
      ['base', GEM_MILLIS],
      ['meta', GEM_MILLIS + 1],
    ]);
  });

  it('Put (update and create), WriteCell and WriteCells store milliseconds; the server and the gem’s queries read the same', async () => {
    const before = Date.now();
    const update = await store.api.put({
      model: 'rate',
      values: pack({ hotel_id: 1, room_type: 'roomy', check_in_date: '2024-01-01', net_rate: 95 }),
      requestId: newRequestId('legacy-update'),
    });
    expect(update).to.include({ uuid: A.uuid, created: false });
    const createdValues = {
      hotel_id: 3,
      room_type: 'loft',
      check_in_date: '2024-02-01',
      gateway: 'sabre',
      discount_type: 'none',
      net_rate: 120,
    };
    const created = await store.api.put({
      model: 'rate',
      values: pack(createdValues),
      requestId: newRequestId('legacy-create'),
    });
    expect(created.created).to.equal(true);
    const written = await store.api.writeCell({
      model: 'rate',
      uuid: A.uuid,
      cell: 'meta',
      body: pack({ note: 'server' }),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId: newRequestId('legacy-meta'),
    });
    const batch = await store.api.writeCells({
      writes: [
        { uuid: A.uuid, body: { note: 'batch' }, mode: WriteMode.WRITE_MODE_MERGE },
        { uuid: created.uuid, body: { fresh: 1 }, mode: WriteMode.WRITE_MODE_REPLACE },
      ].map(({ uuid, body, mode }) => ({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack(body),
        mode,
        expectedRefKey: undefined,
        requestId: newRequestId('legacy-batch'),
      })),
    });
    const after = Date.now();
    const batchCells = batch.results.map((result: WriteCellResult) => {
      if (result.outcome?.$case !== 'written') throw new Error(JSON.stringify(result.outcome));
      return result.outcome.written.cell!;
    });

    const expectations: [Cell, Record<string, unknown>][] = [
      [update.base!, { ...A.v0, net_rate: 95 }],
      [created.base!, createdValues],
      [written.cell!, { ...A.meta, note: 'server' }],
      [batchCells[0]!, { ...A.meta, note: 'batch' }],
      [batchCells[1]!, { fresh: 1 }],
    ];
    for (const [answered, body] of expectations) {
      const what = `${answered.name}@${answered.refKey} of ${answered.uuid}`;
      // The gem's Cell#load: created_at is the column's integer, milliseconds since the epoch.
      const row = (await gemLoadCell(sql, answered.uuid, answered.name, {
        refKey: answered.refKey,
      })) as LegacyRow;
      expect(row.created_at, `${what}: created_at as stored`).to.be.a('number');
      expect(Number.isInteger(row.created_at), what).to.equal(true);
      expect(row.created_at as number, what).to.be.within(before, after);
      expect(BigInt(row.id), what).to.equal(answered.id);
      expect(gemDecode(row.body), what).to.deep.equal(body);
      // The server answers the same instant, and reads it back unchanged.
      expect(answered.createdAt!.getTime(), what).to.equal(row.created_at);
      const read = await store.api.getCell({
        model: 'rate',
        uuid: answered.uuid,
        cell: answered.name,
        refKey: answered.refKey,
      });
      expect(read.cell!.createdAt!.getTime(), what).to.equal(row.created_at);
    }
    expect(update.base!.refKey).to.equal(1);
    expect(batchCells.map((cell) => cell.refKey)).to.deep.equal([2, 0]);
    // The latest versions are what the gem finds.
    expect(((await gemLoadCell(sql, A.uuid, 'meta')) as LegacyRow).ref_key).to.equal(2);
  });

  it('creates the tables of a new model as the gem does with the option: created_at BIGINT', async () => {
    await store.api.defineModel({
      model: { ...RATE_MODEL, name: 'fresh', secondaryIndices: [] },
    });
    expect(await createdAtTypes('fresh')).to.deep.equal(
      range(SHARDS).map((shard) => `${content(shard, 'fresh')} bigint(20)`),
    );
    const before = Date.now();
    const put = await store.api.put({
      model: 'fresh',
      values: pack({ hotel_id: 5, room_type: 'r', check_in_date: 'd' }),
      requestId: newRequestId('fresh'),
    });
    const row = (await gemLoadCell(sql, put.uuid, 'base', { model: 'fresh' })) as LegacyRow;
    expect(row.created_at).to.be.a('number').within(before, Date.now());
    expect(put.base!.createdAt!.getTime()).to.equal(row.created_at);
  });

  it('refuses, changing nothing, a model whose tables hold created_at as DATETIME', async () => {
    await createGemTables(sql, { model: 'dated' });
    const before = await schemaOf(sql, 'ht\\_dated\\_%');
    const refused = await rejection(
      store.api.defineModel({ model: { ...RATE_MODEL, name: 'dated' } }),
    );
    expect(refused.code).to.equal(status.FAILED_PRECONDITION);
    expect(refused.details).to.match(
      /^table ht_dated_00000\d has created_at DATETIME \(and 3 more tables\), but this store is configured to write BIGINT milliseconds/,
    );
    expect(refused.details).to.include('without the setting legacyCreatedAtIsBigint');
    expect(await schemaOf(sql, 'ht\\_dated\\_%')).to.deep.equal(before);
  });

  it('a server without the setting refuses to start on this store, naming the setting', async () => {
    const error = await openStore(
      {
        namespace: NS,
        shardsCount: SHARDS,
        partitionUrls: databases.urls,
        poolSize: 2,
        connectTimeoutMs: 1000,
        startupTimeoutMs: 0,
        followPollIntervalMs: 50,
      },
      silentLogger,
    ).then(
      () => expect.fail('the store opened'),
      (reason: unknown) => reason as Error,
    );
    expect(error).to.be.instanceOf(StoreConfigError);
    expect(error.message).to.match(/^table ht_(rate|fresh)_00000\d has created_at BIGINT/);
    expect(error.message).to.include('--legacy-created-at-is-bigint');
  });
});

describe('shameless plan on a gem store: the dry run of serving it (§2)', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let sql: mysql.Connection;
  const modelFile = join(tmpdir(), `shameless-plan-rate-${process.pid}.json`);

  before(async () => {
    databases = await createTestDatabases(1);
    sql = await mysql.createConnection({ uri: databases.urls[0]!, timezone: 'Z' });
    await createGemTables(sql, {});
    // As a person writes it: snake_case names, "integer" and "string".
    writeFileSync(
      modelFile,
      JSON.stringify({
        name: 'rate',
        primary_index: {
          shard_on: 'hotel_id',
          fields: [
            { name: 'hotel_id', type: 'integer' },
            { name: 'room_type', type: 'string' },
            { name: 'check_in_date', type: 'string' },
          ],
        },
        secondary_indices: [
          {
            name: 'secondary',
            shard_on: 'hotel_id',
            fields: [
              { name: 'hotel_id', type: 'integer' },
              { name: 'gateway', type: 'string' },
              { name: 'discount_type', type: 'string' },
            ],
          },
        ],
        cells: ['meta'],
      }),
    );
  });
  after(async () => {
    await sql?.end();
    await databases?.drop();
  });

  const plan = (...flags: string[]) =>
    runCommand([
      'plan',
      '--partition',
      databases.urls[0]!,
      '--namespace',
      NS,
      '--shards-count',
      String(SHARDS),
      '--model',
      modelFile,
      ...flags,
    ]);
  const statements = (stdout: string) =>
    stdout
      .split(/;\n/)
      .map((chunk) =>
        chunk
          .split('\n')
          .filter((line) => !line.startsWith('--') && line !== '')
          .join('\n'),
      )
      .filter((statement) => statement !== '');

  it('lists the bookkeeping tables and the ALTER of each gem table, as the engine’s SQL with a reason each, and changes nothing', async () => {
    const before = await schemaOf(sql);
    const result = await plan();
    expect(result.stderr).to.equal('');
    expect(result.code, result.stdout).to.equal(3);
    expect(statements(result.stdout)).to.deep.equal([
      createStoreTableSql(`${NS}_shameless_store`),
      createModelsTableSql(`${NS}_shameless_models`),
      createLogLocksTableSql(`${NS}_shameless_log_locks`),
      ...range(SHARDS).map((shard) => addRequestIdColumnSql(content(shard))),
    ]);
    expect(result.stdout).to.match(
      /-- DefineModel rate: ht_rate_000002 has no request_id column \(the gem created it\)/,
    );
    expect(result.stdout).to.include('bookkeeping table ht_shameless_log_locks does not exist');
    expect(result.stdout).to.match(
      /ok +model rate \(.*\): not defined yet; 12 of its 12 tables exist; created_at of its 4 existing content tables is DATETIME\(6\)/,
    );
    expect(await schemaOf(sql), 'information_schema after the dry run').to.deep.equal(before);
  });

  it('reports what serving with legacyCreatedAtIsBigint would refuse, and exits 1', async () => {
    const result = await plan('--legacy-created-at-is-bigint');
    expect(result.code, result.stdout).to.equal(1);
    expect(result.stdout).to.match(
      /FAILED model rate \(.*\): DefineModel would refuse it: table ht_rate_00000\d has created_at DATETIME/,
    );
  });

  it('serving makes and logs exactly what was listed; afterwards the plan lists nothing', async () => {
    const logged: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: (message, fields) => logged.push(`${message} ${String(fields?.table ?? '')}`.trim()),
      warn: () => {},
      error: () => {},
    };
    const store = await startStoreFixture({
      partitionUrls: databases.urls,
      namespace: NS,
      shardsCount: SHARDS,
      logger,
    });
    try {
      await store.api.defineModel({ model: RATE_MODEL });
    } finally {
      await store.close();
    }
    expect(logged.filter((line) => /^(created|added) /.test(line))).to.deep.equal([
      `created bookkeeping table ${NS}_shameless_store`,
      `created bookkeeping table ${NS}_shameless_models`,
      `created bookkeeping table ${NS}_shameless_log_locks`,
      ...range(SHARDS).map(
        (shard) => `added the request_id column and its unique key ${content(shard)}`,
      ),
    ]);

    const result = await plan();
    expect(result.code, result.stdout).to.equal(0);
    expect(result.stdout).to.include('-- nothing to change');
    expect(result.stdout).to.match(
      /ok +model rate \(.*\): defined as given; DefineModel changes nothing/,
    );
    expect(result.stdout).to.match(
      /ok +partition 0: ht_shameless_store records shardsCount=4 and 1 partition\(s\)/,
    );
    expect(statements(result.stdout)).to.deep.equal([]);
  });
});
