// What the mover tests share: a real store opened with openStore on the local MariaDB, records
// written through the engine, a MoveHost built from the engine's pieces, and a way to read every
// row of a table on either side, bytes exact.
import { createTestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { Packr } from 'msgpackr';
import { openStore } from '../../../src/engine/openStore.js';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { silentLogger } from '../../../src/engine/base/logger.js';
import type { Engine } from '../../../src/engine/engine.js';
import { PartitionMap } from '../../../src/engine/model/partitionMap.js';
import { Partition } from '../../../src/engine/mysql/partitions.js';
import {
  type MysqlPool,
  createMysqlPool,
  ensureDatabase,
  parseMysqlUrl,
} from '../../../src/engine/mysql/mysqlPool.js';
import type { MoveHost } from '../../../src/engine/moves/moveHost.js';
import { shardTables } from '../../../src/engine/moves/shardTables.js';
import { gemTablesSql } from '../../support/gemTables.js';

export const NAMESPACE = 'mv';
export const SHARDS = 4;

const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });
export const pack = (value: unknown): Buffer => packr.pack(value);

/** Every byte value, in a binary field: a body the copy must keep bytes exact. */
export const EVERY_BYTE = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

export const RATE = {
  name: 'rate',
  primaryIndex: {
    name: 'primary',
    fields: [
      { name: 'hotel_id', type: 'integer' as const },
      { name: 'room_type', type: 'string' as const },
    ],
    shardOn: 'hotel_id',
  },
  secondaryIndices: [
    {
      name: 'secondary',
      fields: [
        { name: 'hotel_id', type: 'integer' as const },
        { name: 'gateway', type: 'string' as const },
      ],
      shardOn: 'hotel_id',
    },
  ],
  cells: ['meta'],
};

let counter = 0;
export const requestId = () => `mv-${process.pid}-${Date.now()}-${++counter}`;

/** A hotel id past 2^53 whose index shard is `shard`. */
export function bigHotelId(shard: number, n: number): bigint {
  const base = 2n ** 60n + BigInt(n) * BigInt(SHARDS);
  return base + BigInt(shard);
}

export interface TestStore {
  engine: Engine;
  url: string;
  sql: mysql.Pool;
  close(): Promise<void>;
}

/** The gem README's rates model, over tables the gem made (../../support/gemTables.ts). */
export const GEM_RATE = {
  name: 'rate',
  primaryIndex: {
    name: 'primary',
    fields: [
      { name: 'hotel_id', type: 'integer' as const },
      { name: 'room_type', type: 'string' as const },
      { name: 'check_in_date', type: 'string' as const },
    ],
    shardOn: 'hotel_id',
  },
  secondaryIndices: [
    {
      name: 'secondary',
      fields: [
        { name: 'hotel_id', type: 'integer' as const },
        { name: 'gateway', type: 'string' as const },
        { name: 'discount_type', type: 'string' as const },
      ],
      shardOn: 'hotel_id',
    },
  ],
  cells: ['meta'],
};

/**
 * A fresh one-partition store of SHARDS shards with the rate model; with `gem`, over the
 * tables the gem makes (INT ids, index tables without a primary key, created_at in BIGINT
 * milliseconds), created by plain SQL before the model is defined.
 */
export async function openTestStore(
  options: {
    gem?: boolean;
    /** The MySQL server to hold the store (the test kit's default when left out). */
    baseUrl?: string;
  } = {},
): Promise<TestStore> {
  const databases = await createTestDatabases(
    1,
    options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl },
  );
  const url = databases.urls[0]!;
  if (options.gem) {
    const setup = await mysql.createConnection({ uri: url });
    for (let shard = 0; shard < SHARDS; shard++) {
      for (const sql of gemTablesSql(NAMESPACE, shard, { legacyCreatedAtIsBigint: true })) {
        await setup.query(sql);
      }
    }
    await setup.end();
  }
  const engine = await openStore(
    {
      namespace: NAMESPACE,
      shardsCount: SHARDS,
      partitionUrls: [url],
      createdAt: options.gem ? 'bigint' : 'datetime',
      poolSize: 8,
      connectTimeoutMs: 2000,
      startupTimeoutMs: 0,
      followPollIntervalMs: 50,
    },
    silentLogger,
  );
  await engine.models.define(options.gem ? GEM_RATE : RATE, UNBOUNDED);
  const sql = mysql.createPool({
    uri: url,
    connectionLimit: 4,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  return {
    engine,
    url,
    sql,
    async close() {
      await sql.end();
      await engine.close();
      await databases.drop();
    },
  };
}

/** Puts a rate of hotel `hotelId` (index shard: hotelId mod SHARDS); its uuid. */
export async function putRate(engine: Engine, hotelId: bigint, room = 'double'): Promise<string> {
  const result = await engine.put(
    UNBOUNDED,
    'rate',
    pack({ hotel_id: hotelId, room_type: room, gateway: `g${hotelId % 7n}`, blob: EVERY_BYTE }),
    requestId(),
  );
  return result.uuid;
}

/** A new version of the record's meta cell. */
export async function writeMeta(engine: Engine, uuid: string, n: number): Promise<void> {
  await engine.writeCell(UNBOUNDED, {
    model: 'rate',
    uuid,
    cell: 'meta',
    body: pack({ n, bytes: EVERY_BYTE }),
    mode: 'replace',
    requestId: requestId(),
  });
}

/** The map both hosts of one test see: a mover killed after publishing leaves it moved. */
export interface MapBox {
  map: PartitionMap;
  published: PartitionMap[];
}

export function mapBox(url: string): MapBox {
  return { map: PartitionMap.initial([url], SHARDS), published: [] };
}

/**
 * A MoveHost from the engine's pieces, with pools of its own (a mover may run in another
 * process). publishMap only records the call and swaps the map in memory: the lead replaces it
 * with the engine's publishMap (A's), which stores the version on every partition it names.
 */
export class TestHost implements MoveHost {
  private readonly partitions: Partition[];
  private readonly targets = new Map<string, MysqlPool>();

  constructor(
    private readonly engine: Engine,
    private readonly box: MapBox,
  ) {
    this.partitions = box.map.locations.map((url, i) => {
      const location = parseMysqlUrl(url);
      return new Partition(i, location, createMysqlPool(location, pool()));
    });
  }

  get layout() {
    return this.engine.layout;
  }

  models() {
    return this.engine.models.all();
  }

  currentMap() {
    return this.box.map;
  }

  source(partitionId: number) {
    return this.partitions[partitionId]!;
  }

  async target(location: string) {
    let target = this.targets.get(location);
    if (!target) {
      const parsed = parseMysqlUrl(location);
      await ensureDatabase(parsed, 2000);
      target = createMysqlPool(parsed, pool());
      this.targets.set(location, target);
    }
    return target;
  }

  async publishMap(next: PartitionMap) {
    this.box.published.push(next);
    this.box.map = next;
  }

  async close() {
    await Promise.all([
      ...this.partitions.map((partition) => partition.end()),
      ...[...this.targets.values()].map((target) => target.end()),
    ]);
  }
}

const pool = () => ({ connectionLimit: 8, connectTimeoutMs: 2000 });

/** Every row of a table, ordered by its key, times as text: what a byte-exact copy must equal. */
export async function tableRows(
  sql: mysql.Pool,
  table: string,
): Promise<Record<string, unknown>[]> {
  const [columns] = (await sql.query(
    `SELECT COLUMN_NAME AS c, DATA_TYPE AS t FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [table],
  )) as unknown as [{ c: string; t: string }[]];
  const select = columns
    .map(({ c, t }) => (t === 'datetime' ? `CAST(\`${c}\` AS CHAR) AS \`${c}\`` : `\`${c}\``))
    .join(', ');
  const order = columns.map(({ c }) => `\`${c}\``).join(', ');
  const [rows] = await sql.query(`SELECT ${select} FROM \`${table}\` ORDER BY ${order}`);
  return rows as Record<string, unknown>[];
}

export function shardTableNames(store: TestStore, shard: number): string[] {
  const names = shardTables(store.engine.layout, store.engine.models.all(), shard);
  return [...names.content, ...names.index];
}

export async function tablesIn(sql: mysql.Pool): Promise<string[]> {
  const [rows] = await sql.query(
    'SELECT TABLE_NAME AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME',
  );
  return (rows as { n: string }[]).map((row) => row.n);
}

export async function triggersIn(sql: mysql.Pool): Promise<string[]> {
  const [rows] = await sql.query(
    'SELECT TRIGGER_NAME AS n FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()',
  );
  return (rows as { n: string }[]).map((row) => row.n);
}
