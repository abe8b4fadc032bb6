// Each workload through the SDK against the server, as the raw SQL the server runs for it (the
// mysql2 baseline) and, where the Ruby gem has the operation, as the gem's own statements (the
// gem-shaped baseline). All pick their records the same way from the same seeded set.
import { randomUUID } from 'node:crypto';
import {
  type Row,
  type StatementReader,
  type WriteItem,
  DEFAULT_BODY_LIMITS,
  MEDIUMBLOB_BYTES,
  lookupPrimary,
  parseBody,
  queryIndex,
  readCell,
  readLatestCells,
  readLogPage,
} from '@shameless/server/sql';
import type { ExactInteger } from '@shameless/client';
import { DEFAULT_MAX_MESSAGE_BYTES, UNBOUNDED, logPageBodyBytes } from '@shameless/server';
import { pack } from 'msgpackr';
import { type RateModel, type SeededSet, payloadOf, seededRate } from '../subjects/benchStore.js';
import {
  type GemShapedClient,
  gemCreate,
  gemLatestBase,
  gemPointWhere,
  gemUpdate,
} from '../subjects/gemShapedClient.js';
import type { GemServiceClient } from '../subjects/gemService.js';
import type { ProtocolFloorClient } from '../subjects/protocolFloor.js';
import {
  type BaselinePools,
  type BaselineTables,
  PRIMARY,
  SECONDARY,
} from '../subjects/mysqlBaseline.js';

/** One operation of a closed loop: resolves with the units it moved (1 when omitted). */
export type Operation = (worker: number) => Promise<number | void>;

export interface WorkloadContext {
  readonly rate: RateModel;
  readonly tables: BaselineTables;
  /** The seeded records of the run's body size. */
  readonly seeded: SeededSet;
  readonly bodyBytes: number;
  readonly shardsCount: number;
  /**
   * The log workloads' shards, each with where its cells start (the id before the first): the
   * rows after it are cells of this run's body size that their `prepare` wrote.
   */
  readonly log?: ReadonlyMap<number, ExactInteger>;
}

export interface Workload {
  /** For `--workloads`: `get-cell`, `put-update`, ... */
  readonly id: string;
  /** As printed: the RPC and what it does. */
  readonly name: string;
  /** What `unitsPerSecond` counts. */
  readonly unit: 'calls' | 'cells' | 'records';
  /**
   * Makes the data the workload needs before either run (e.g. a log long enough to page), and
   * answers the context its runs use: the same, or with what it prepared.
   */
  prepare?(context: WorkloadContext): Promise<WorkloadContext>;
  sdk(context: WorkloadContext): Operation;
  /** The same SQL through mysql2; undefined when the workload has no SQL counterpart. */
  mysql?(context: WorkloadContext, pools: BaselinePools): Operation;
  /** The Ruby gem's statements for the operation; undefined where the gem has no such call. */
  gem?(context: WorkloadContext, client: GemShapedClient): Operation;
  /**
   * The same gem read sent to the gem-shaped service (gemService.ts); undefined for the other
   * workloads.
   */
  gemService?(context: WorkloadContext, service: GemServiceClient): Operation;
  /**
   * The same read through the store's protocol over a bare handler (protocolFloor.ts), for a
   * lone read's rounds; undefined for the workloads the floor does not answer.
   */
  protocolFloor?(context: WorkloadContext, floor: ProtocolFloorClient): Operation;
}

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

/** The server's transaction for one write, on its own (the server groups concurrent ones). */
async function writeAlone(pools: BaselinePools, item: WriteItem): Promise<void> {
  const [outcome] = await pools.transaction.run(UNBOUNDED, [item]);
  if (outcome?.status !== 'written') throw new Error(`baseline write: ${JSON.stringify(outcome)}`);
}

/** A merge of `body` into a cell, as the SDK's update and Put's update path send it. */
const mergeInto = (pools: BaselinePools, uuid: string, cell: string, body: Buffer): WriteItem => ({
  kind: 'append',
  model: pools.model,
  uuid,
  cell,
  content: {
    mode: 'merge',
    patch: parseBody(body, 'body', DEFAULT_BODY_LIMITS),
    limit: { bytes: MEDIUMBLOB_BYTES, field: 'body' },
  },
  requestId: randomUUID(),
});

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
  mysql: ({ tables, bodyBytes }, pools) => {
    const payload = payloadOf(bodyBytes);
    return async () => {
      const values = freshRate('sql');
      const primaryTable = tables.index('primary', values.hotel_id);
      await lookupPrimary(pools.reader, {
        table: primaryTable,
        index: PRIMARY,
        values: indexValues(values),
      });
      // On one partition every uuid's content shard is the index row's partition.
      const uuid = randomUUID();
      await writeAlone(pools, {
        kind: 'create',
        model: pools.model,
        uuid,
        body: pack({ ...values, ...payload }),
        requestId: randomUUID(),
        indexRows: [
          { index: PRIMARY, table: primaryTable, values: indexValues(values), primary: true },
          {
            index: SECONDARY,
            table: tables.index('secondary', values.hotel_id),
            values: [values.hotel_id, values.gateway, values.discount_type],
            primary: false,
          },
        ],
      });
    };
  },
  gem: ({ tables, bodyBytes }, client) => {
    const body = payloadOf(bodyBytes);
    return async (worker) =>
      void (await gemCreate(await client.session(worker), tables, [PRIMARY, SECONDARY], {
        ...freshRate('gem'),
        ...body,
      }));
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
  mysql: (context, pools) => {
    const body = pack(payloadOf(context.bodyBytes));
    return async () => {
      const { values } = randomSeeded(context);
      const table = context.tables.index('primary', values.hotel_id);
      const uuid = await lookupPrimary(pools.reader, {
        table,
        index: PRIMARY,
        values: indexValues(values),
      });
      await writeAlone(pools, mergeInto(pools, uuid!, 'base', body));
    };
  },
  gem: (context, client) => {
    const body = payloadOf(context.bodyBytes);
    return async (worker) => {
      const { values } = randomSeeded(context);
      await gemUpdate(await client.session(worker), context.tables, PRIMARY, values, body);
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
  mysql: (context, pools) => {
    const body = pack(payloadOf(context.bodyBytes));
    return () => writeAlone(pools, mergeInto(pools, randomSeeded(context).uuid, 'meta', body));
  },
};

export const getCell: Workload = {
  id: 'get-cell',
  name: 'GetCell',
  unit: 'calls',
  sdk: (context) => async () =>
    void (await context.rate.record(randomSeeded(context).uuid).base.reload()),
  mysql:
    (context, { reader }) =>
    async () => {
      const { uuid } = randomSeeded(context);
      await readCell(reader, context.tables.contentOf(uuid), uuid, 'base');
    },
  gem: (context, client) => async (worker) => {
    const { uuid } = randomSeeded(context);
    if (!(await gemLatestBase(await client.session(worker), context.tables, uuid))) {
      throw new Error(`gem-shaped find: no base cell for ${uuid}`);
    }
  },
  gemService: (context, service) => async () =>
    void (await service.read({ op: 'find', uuid: randomSeeded(context).uuid })),
  protocolFloor: (context, floor) => async () =>
    void (await floor.getCell(randomSeeded(context).uuid)),
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
    (context, { reader }) =>
    async () => {
      const { values } = randomSeeded(context);
      const rows = await queryIndex(
        reader,
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
      return (await readRecords(reader, context.tables, rows)).length;
    },
  gem: (context, client) => async (worker) => {
    const { values } = randomSeeded(context);
    const session = await client.session(worker);
    return (await gemPointWhere(session, context.tables, PRIMARY, values)) ? 1 : 0;
  },
  gemService: (context, service) => async () => {
    await service.read({ op: 'where', values: randomSeeded(context).values });
    return 1;
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
    (context, { reader }) =>
    async () => {
      const hotel = pick(context.seeded.hotels);
      const rows = await queryIndex(reader, context.tables.index('primary', hotel), PRIMARY, {
        conditions: [{ field: 'hotel_id', op: 'eq', values: [hotel] }],
        descending: false,
        limit: WHERE_MANY + 1,
      });
      return (await readRecords(reader, context.tables, rows.slice(0, WHERE_MANY))).length;
    },
};

/** The records' base cells: one SELECT for the partition, as Where reads them. */
async function readRecords(reader: StatementReader, tables: BaselineTables, rows: Row[]) {
  const byShard = tables.byShard(rows.map((row) => ({ uuid: String(row.uuid) })));
  const found = await readLatestCells(
    reader,
    [...byShard].map(([shard, records]) => ({
      table: tables.content(shard),
      keys: records.map(({ uuid }) => ({ uuid, cell: 'base', withBody: true })),
    })),
  );
  return found.flat();
}

const LOG_PAGE = 1000;
/** The longest body the server reads with a page's rows, its answer bounded by default. */
const LOG_PAGE_BODY_BYTES = logPageBodyBytes(DEFAULT_MAX_MESSAGE_BYTES, LOG_PAGE);
/** The log workloads read this many shards only, so filling them takes seconds. */
const LOG_SHARDS = 4;

/**
 * Writes a page of cells of the run's body size to each log shard, after whatever the shard
 * already holds (the seeded records of every body size, earlier workloads' writes), and
 * answers where they start: reading from there reads cells of this size only. The log shards
 * are the first that hold seeded records: records created together share a content shard
 * (createShards.ts), so a small seeded set can leave a shard without any.
 */
async function writeLogPages(context: WorkloadContext): Promise<WorkloadContext> {
  const { rate, seeded, tables } = context;
  const byShard = new Map<number, string[]>();
  for (const uuid of seeded.uuids) {
    const shard = tables.contentShard(uuid);
    const onShard = byShard.get(shard);
    if (onShard) onShard.push(uuid);
    else byShard.set(shard, [uuid]);
  }
  const shards = [...byShard.keys()].sort((a, b) => a - b).slice(0, LOG_SHARDS);
  if (shards.length < LOG_SHARDS) {
    throw new Error(
      `the log workloads need seeded records on ${LOG_SHARDS} shards; ` +
        `they lie on ${shards.length}: seed more hotels`,
    );
  }
  const maxIds = () => Promise.all(shards.map((shard) => rate.maxIdOnShard(shard)));
  const cursors = await maxIds();
  const uuids = shards.flatMap((shard) => byShard.get(shard)!);
  const body = payloadOf(seeded.bodyBytes);
  // Ids count rows on a shard's table: nothing is ever deleted.
  const filled = (ids: readonly ExactInteger[]) =>
    ids.every((id, i) => BigInt(id) - BigInt(cursors[i]!) >= LOG_PAGE);
  while (!filled(await maxIds())) {
    const results = await rate.writeCells(
      Array.from({ length: 1000 }, () => ({ uuid: pick(uuids), cell: 'meta', body })),
    );
    for (const result of results) if (!result.ok) throw result.error;
  }
  return { ...context, log: new Map(shards.map((shard, i) => [shard, cursors[i]!])) };
}

/** A log shard of the run, at random, and where its cells start. */
function randomLogShard(context: WorkloadContext): { shard: number; cursor: ExactInteger } {
  const shards = [...logOf(context).keys()];
  const shard = shards[Math.floor(Math.random() * shards.length)]!;
  return { shard, cursor: logOf(context).get(shard)! };
}

function logOf(context: WorkloadContext): ReadonlyMap<number, ExactInteger> {
  if (!context.log) throw new Error('a log workload ran without its prepare');
  return context.log;
}

export const fetchLatestCells: Workload = {
  id: 'fetch-latest',
  name: `FetchLatestCells (${LOG_PAGE})`,
  unit: 'cells',
  prepare: writeLogPages,
  sdk: (context) => async () => {
    const { shard, cursor } = randomLogShard(context);
    const page = await context.rate.fetchLatestCells({ shard, cursor, limit: LOG_PAGE });
    return page.cells.length;
  },
  mysql:
    (context, { reader }) =>
    async () => {
      const { shard, cursor } = randomLogShard(context);
      const page = await readLogPage(reader, {
        table: context.tables.content(shard),
        cursor,
        limit: LOG_PAGE,
        maxBodyBytes: LOG_PAGE_BODY_BYTES,
      });
      return page.rows.length;
    },
};

/** Cells an Each run reads before leaving the loop (which cancels the stream). */
const EACH_CELLS = 4000;

export const eachLog: Workload = {
  id: 'each',
  name: `Each (${EACH_CELLS} cells of ${LOG_SHARDS} shards)`,
  unit: 'cells',
  prepare: writeLogPages,
  sdk: (context) => async () => {
    let cells = 0;
    const log = logOf(context);
    const shards = [...log.keys()];
    const cursors = Object.fromEntries(log);
    for await (const _cell of context.rate.each({ shards, cursors, batchSize: LOG_PAGE })) {
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
