// The batch path: WriteCells and GetCells move hundreds of cells per call: one transaction /
// one SELECT per partition on the server. Their baselines run the same transaction and the same
// SELECT through mysql2.
import { randomUUID } from 'node:crypto';
import { UNBOUNDED } from '@shameless/server';
import { readLatestCells } from '@shameless/server/sql';
import { pack } from 'msgpackr';
import { payloadOf } from '../subjects/benchStore.js';
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
  mysql: (context, pools) => {
    const body = pack(payloadOf(context.bodyBytes));
    return async () => {
      // The server's transaction for one partition's part of the batch (all of it, here).
      const outcomes = await pools.transaction.run(
        UNBOUNDED,
        randomUuids(context, WRITE_BATCH).map((uuid) => ({
          kind: 'append',
          model: pools.model,
          uuid,
          cell: 'meta',
          content: { mode: 'replace', bytes: body },
          requestId: randomUUID(),
        })),
      );
      return outcomes.length;
    };
  },
};

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
    (context, { reader }) =>
    async () => {
      const keys = randomUuids(context, READ_BATCH).map((uuid) => ({ uuid }));
      const found = await readLatestCells(
        reader,
        [...context.tables.byShard(keys)].map(([shard, group]) => ({
          table: context.tables.content(shard),
          keys: group.map(({ uuid }) => ({ uuid, cell: 'base', withBody: true })),
        })),
      );
      return found.reduce((sum, rows) => sum + rows.length, 0);
    },
};

export const BATCH_WORKLOADS: readonly Workload[] = [writeCells, getCells];
