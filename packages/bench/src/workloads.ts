// Each workload twice: through the SDK against the server, and as the raw SQL the server runs
// for it (the mysql2 baseline). Both pick their records the same way from the same seeded set.
import { randomUUID } from 'node:crypto';
import type { FieldType, IndexSpec } from '@shameless/server';
import {
  type MysqlPool,
  type Row,
  beginCellWrite,
  getNamedLock,
  insertCellAndCommit,
  insertPrimaryRow,
  insertSecondaryRow,
  lookupPrimary,
  queryIndex,
  readCell,
  readLatestCells,
  readLogPage,
  releaseNamedLock,
} from '@shameless/server/sql';
import { pack } from 'msgpackr';
import {
  RATE_SCHEMA,
  type RateModel,
  type SeededSet,
  payloadOf,
  seededRate,
} from './benchStore.js';
import type { BaselinePools, BaselineTables } from './mysqlBaseline.js';

/** One operation of a closed loop: resolves with the units it moved (1 when omitted). */
export type Operation = (worker: number) => Promise<number | void>;

export interface WorkloadContext {
  readonly rate: RateModel;
  readonly tables: BaselineTables;
  /** The seeded records of the run's body size. */
  readonly seeded: SeededSet;
  readonly bodyBytes: number;
  readonly shardsCount: number;
}

export interface Workload {
  /** For `--workloads`: `get-cell`, `put-update`, ... */
  readonly id: string;
  /** As printed: the RPC and what it does. */
  readonly name: string;
  /** What `unitsPerSecond` counts. */
  readonly unit: 'calls' | 'cells' | 'records';
  /** Makes the data the workload needs before either run (e.g. a log long enough to page). */
  prepare?(context: WorkloadContext): Promise<void>;
  sdk(context: WorkloadContext): Operation;
  /** The same SQL through mysql2; undefined when the workload has no SQL counterpart. */
  mysql?(context: WorkloadContext, pools: BaselinePools): Operation;
}

/** An index of the bench model as the engine's SQL functions take it. */
function indexSpec(
  name: string,
  index: { fields: Record<string, FieldType>; shardOn: string },
): IndexSpec {
  const fields = Object.entries(index.fields).map(([field, type]) => ({ name: field, type }));
  return { name, shardOn: index.shardOn, fields };
}
const PRIMARY = indexSpec('primary', RATE_SCHEMA.primary);
const SECONDARY = indexSpec('secondary', RATE_SCHEMA.indices.secondary);

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
let uniqueCounter = 0;
/** Primary values no record has: a create. Hotels spread over every index shard. */
const freshRate = (prefix: string) => ({
  ...seededRate(1_000_000 + Math.floor(Math.random() * 1_000_000), 0),
  check_in_date: `${prefix}-${process.pid}-${++uniqueCounter}`,
});
const randomSeeded = ({ seeded }: WorkloadContext) => {
  const i = Math.floor(Math.random() * seeded.uuids.length);
  return {
    uuid: seeded.uuids[i]!,
    values: seededRate(seeded.hotels[Math.floor(i / seeded.perHotel)]!, i % seeded.perHotel),
  };
};

/** The write the server makes for every append: lock, read latest, insert, commit. */
async function appendSql(
  pool: MysqlPool,
  tables: BaselineTables,
  uuid: string,
  cell: string,
  body: Buffer,
): Promise<void> {
  const table = tables.contentOf(uuid);
  const requestId = randomUUID();
  const connection = await pool.getConnection();
  try {
    const state = await beginCellWrite(connection, table, tables.logLocks, uuid, cell, requestId);
    await insertCellAndCommit(
      connection,
      table,
      {
        uuid,
        name: cell,
        refKey: state.latest ? Number(state.latest.ref_key) + 1 : 0,
        body,
        createdAt: new Date(),
        requestId,
      },
      'datetime',
    );
  } finally {
    connection.release();
  }
}

const indexValues = (values: { hotel_id: number; room_type: string; check_in_date: string }) => [
  values.hotel_id,
  values.room_type,
  values.check_in_date,
];

export const putCreate: Workload = {
  id: 'put-create',
  name: 'Put (create)',
  unit: 'calls',
  sdk: ({ rate, bodyBytes }) => {
    const body = payloadOf(bodyBytes);
    return async () => void (await rate.put({ ...freshRate('sdk'), ...body }));
  },
  mysql: ({ tables, bodyBytes }, { pool, lockPool }) => {
    const body = pack(payloadOf(bodyBytes));
    return async () => {
      const values = freshRate('sql');
      const primaryTable = tables.index('primary', values.hotel_id);
      // Named-lock sessions come from their own pool, as in the server: a worker holding one
      // also needs a connection for the append.
      const lock = await lockPool.getConnection();
      try {
        await getNamedLock(lock, `bench:${values.check_in_date}`, 10);
        await lookupPrimary(lock, primaryTable, PRIMARY, indexValues(values));
        const uuid = randomUUID();
        await appendSql(pool, tables, uuid, 'base', body);
        await insertPrimaryRow(lock, primaryTable, PRIMARY, indexValues(values), uuid);
        await insertSecondaryRow(
          pool,
          tables.index('secondary', values.hotel_id),
          SECONDARY,
          [values.hotel_id, values.gateway, values.discount_type],
          uuid,
        );
        await releaseNamedLock(lock, `bench:${values.check_in_date}`);
      } finally {
        lock.release();
      }
    };
  },
};

export const putUpdate: Workload = {
  id: 'put-update',
  name: 'Put (update)',
  unit: 'calls',
  sdk: (context) => {
    const body = payloadOf(context.bodyBytes);
    return async () => void (await context.rate.put({ ...randomSeeded(context).values, ...body }));
  },
  mysql: (context, { pool }) => {
    const body = pack(payloadOf(context.bodyBytes));
    return async () => {
      const { values } = randomSeeded(context);
      const table = context.tables.index('primary', values.hotel_id);
      const uuid = await lookupPrimary(pool, table, PRIMARY, indexValues(values));
      await appendSql(pool, context.tables, uuid!, 'base', body);
    };
  },
};

export const writeCell: Workload = {
  id: 'write-cell',
  name: 'WriteCell',
  unit: 'calls',
  sdk: (context) => {
    const body = payloadOf(context.bodyBytes);
    return async () =>
      void (await context.rate.record(randomSeeded(context).uuid).meta.update(body));
  },
  mysql: (context, { pool }) => {
    const body = pack(payloadOf(context.bodyBytes));
    return () => appendSql(pool, context.tables, randomSeeded(context).uuid, 'meta', body);
  },
};

export const getCell: Workload = {
  id: 'get-cell',
  name: 'GetCell',
  unit: 'calls',
  sdk: (context) => async () =>
    void (await context.rate.record(randomSeeded(context).uuid).base.reload()),
  mysql:
    (context, { pool }) =>
    async () => {
      const { uuid } = randomSeeded(context);
      await readCell(pool, context.tables.contentOf(uuid), uuid, 'base');
    },
};

export const whereOne: Workload = {
  id: 'where-1',
  name: 'Where (1 record)',
  unit: 'records',
  sdk: (context) => async () => {
    const { values } = randomSeeded(context);
    const found = await context.rate
      .where({
        hotel_id: values.hotel_id,
        room_type: values.room_type,
        check_in_date: values.check_in_date,
      })
      .toArray();
    return found.length;
  },
  mysql:
    (context, { pool }) =>
    async () => {
      const { values } = randomSeeded(context);
      const rows = await queryIndex(
        pool,
        context.tables.index('primary', values.hotel_id),
        PRIMARY,
        {
          conditions: PRIMARY.fields.map((field, i) => ({
            field: field.name,
            op: 'eq' as const,
            values: [indexValues(values)[i]!],
          })),
          descending: false,
          limit: 2,
        },
      );
      return (await readRecords(pool, context.tables, rows)).length;
    },
};

const WHERE_MANY = 100;

export const whereHundred: Workload = {
  id: 'where-100',
  name: `Where (${WHERE_MANY} records)`,
  unit: 'records',
  sdk: (context) => async () => {
    const hotel = pick(context.seeded.hotels);
    const found = await context.rate
      .where({ hotel_id: hotel }, { limit: WHERE_MANY, pageSize: WHERE_MANY })
      .toArray();
    return found.length;
  },
  mysql:
    (context, { pool }) =>
    async () => {
      const hotel = pick(context.seeded.hotels);
      const rows = await queryIndex(pool, context.tables.index('primary', hotel), PRIMARY, {
        conditions: [{ field: 'hotel_id', op: 'eq', values: [hotel] }],
        descending: false,
        limit: WHERE_MANY + 1,
      });
      return (await readRecords(pool, context.tables, rows.slice(0, WHERE_MANY))).length;
    },
};

/** The records' base cells: one query per content shard, in one round trip, as Where reads them. */
async function readRecords(pool: MysqlPool, tables: BaselineTables, rows: Row[]) {
  const byShard = tables.byShard(rows.map((row) => ({ uuid: String(row.uuid) })));
  const found = await readLatestCells(
    pool,
    [...byShard].map(([shard, records]) => ({
      table: tables.content(shard),
      uuids: records.map(({ uuid }) => uuid),
      cells: ['base'],
    })),
  );
  return found.flat();
}

const LOG_PAGE = 1000;
/** FetchLatestCells reads the first shards only, so filling them takes seconds. */
const LOG_SHARDS = 4;

export const fetchLatestCells: Workload = {
  id: 'fetch-latest',
  name: `FetchLatestCells (${LOG_PAGE})`,
  unit: 'cells',
  prepare: async ({ rate, seeded, tables }) => {
    // The log shards hold a full page each: ids count rows, since nothing is ever deleted.
    const uuids = seeded.uuids.filter((uuid) => tables.contentShard(uuid) < LOG_SHARDS);
    const body = payloadOf(seeded.bodyBytes);
    for (;;) {
      const maxIds = await Promise.all(
        Array.from({ length: LOG_SHARDS }, (_, shard) => rate.maxIdOnShard(shard)),
      );
      if (Math.min(...maxIds) >= LOG_PAGE) return;
      await rate.writeCells(
        Array.from({ length: 1000 }, () => ({ uuid: pick(uuids), cell: 'meta', body })),
      );
    }
  },
  sdk: (context) => async () => {
    const shard = Math.floor(Math.random() * LOG_SHARDS);
    const page = await context.rate.fetchLatestCells({ shard, cursor: 0, limit: LOG_PAGE });
    return page.cells.length;
  },
  mysql:
    (context, { pool }) =>
    async () => {
      const shard = Math.floor(Math.random() * LOG_SHARDS);
      const page = await readLogPage(pool, context.tables.content(shard), 0, LOG_PAGE);
      return page.rows.length;
    },
};

/** Cells an Each run reads before leaving the loop (which cancels the stream). */
const EACH_CELLS = 4000;

export const eachLog: Workload = {
  id: 'each',
  name: `Each (${EACH_CELLS} cells of ${LOG_SHARDS} shards)`,
  unit: 'cells',
  prepare: (context) => fetchLatestCells.prepare!(context),
  sdk: (context) => async () => {
    let cells = 0;
    const shards = Array.from({ length: LOG_SHARDS }, (_, shard) => shard);
    for await (const _cell of context.rate.each({ shards, batchSize: LOG_PAGE })) {
      if (++cells === EACH_CELLS) break;
    }
    return cells;
  },
};

export const UNARY_WORKLOADS: readonly Workload[] = [
  putCreate,
  putUpdate,
  writeCell,
  getCell,
  whereOne,
  whereHundred,
  fetchLatestCells,
  eachLog,
];
