// The batch path: WriteCells and GetCells move hundreds of cells per call, grouped by content
// shard on the server (one transaction / one query per shard). Their baselines run the same
// per-shard statements through mysql2, the shards of one call in parallel as the server does.
import { randomUUID } from 'node:crypto';
import {
  type MysqlPool,
  type NewCell,
  beginCellBatchWrite,
  insertCells,
  readLatestCells,
} from '@shameless/server/sql';
import { pack } from 'msgpackr';
import { payloadOf } from './benchStore.js';
import type { BaselineTables } from './mysqlBaseline.js';
import type { Workload, WorkloadContext } from './workloads.js';

export const WRITE_BATCH = 500;
export const READ_BATCH = 1000;

const randomUuids = ({ seeded }: WorkloadContext, count: number) =>
  Array.from(
    { length: count },
    () => seeded.uuids[Math.floor(Math.random() * seeded.uuids.length)]!,
  );

export const writeCells: Workload = {
  id: 'write-cells',
  name: `WriteCells (${WRITE_BATCH})`,
  unit: 'cells',
  sdk: (context) => {
    const body = payloadOf(context.bodyBytes);
    return async () => {
      const results = await context.rate.writeCells(
        randomUuids(context, WRITE_BATCH).map((uuid) => ({ uuid, cell: 'meta', body })),
      );
      const failed = results.find((result) => !result.ok);
      if (failed && !failed.ok) throw failed.error;
      return results.length;
    };
  },
  mysql: (context, { pool }) => {
    const body = pack(payloadOf(context.bodyBytes));
    return async () => {
      const writes = randomUuids(context, WRITE_BATCH).map((uuid) => ({
        uuid,
        cell: 'meta',
        requestId: randomUUID(),
      }));
      await writePartition(pool, context.tables, context.tables.byShard(writes), body);
      return writes.length;
    };
  },
};

/**
 * The partition's transaction, as the server runs it when every write is new and every record
 * has a version of the cell written: lock every shard's log row and read the latest versions,
 * then insert into each shard's table and commit.
 */
async function writePartition(
  pool: MysqlPool,
  tables: BaselineTables,
  groups: Map<number, { uuid: string; cell: string; requestId: string }[]>,
  body: Buffer,
) {
  const shards = [...groups.keys()];
  const connection = await pool.getConnection();
  try {
    const states = await beginCellBatchWrite(
      connection,
      tables.logLocks,
      shards.map((shard) => {
        const writes = groups.get(shard)!;
        return {
          table: tables.content(shard),
          versionsOf: { uuids: [...new Set(writes.map((write) => write.uuid))], cells: ['meta'] },
          bodiesOf: undefined,
          requests: [],
        };
      }),
    );
    const createdAt = new Date();
    const inserts = shards.map((shard, s) => {
      const latest = new Map(
        states[s]!.latest.map((row) => [String(row.uuid), Number(row.ref_key)]),
      );
      const cells: NewCell[] = groups.get(shard)!.map((write) => {
        const refKey = (latest.get(write.uuid) ?? -1) + 1;
        latest.set(write.uuid, refKey);
        return {
          uuid: write.uuid,
          name: write.cell,
          refKey,
          body,
          createdAt,
          requestId: write.requestId,
        };
      });
      return { table: tables.content(shard), cells };
    });
    await insertCells(connection, inserts, true, 'datetime');
  } finally {
    connection.release();
  }
}

export const getCells: Workload = {
  id: 'get-cells',
  name: `GetCells (${READ_BATCH})`,
  unit: 'cells',
  sdk: (context) => async () => {
    const found = await context.rate.getCells(
      randomUuids(context, READ_BATCH).map((uuid) => ({ uuid })),
    );
    return found.length;
  },
  mysql:
    (context, { pool }) =>
    async () => {
      const keys = randomUuids(context, READ_BATCH).map((uuid) => ({ uuid }));
      const found = await readLatestCells(
        pool,
        [...context.tables.byShard(keys)].map(([shard, group]) => ({
          table: context.tables.content(shard),
          uuids: group.map((key) => key.uuid),
          cells: ['base'],
        })),
      );
      return found.reduce((sum, rows) => sum + rows.length, 0);
    },
};

export const BATCH_WORKLOADS: readonly Workload[] = [writeCells, getCells];
