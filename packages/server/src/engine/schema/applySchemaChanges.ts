// Making the schema changes schemaPlan.ts decided, on one partition, and logging each as it
// is made, so that an operator can see in the server's log what it did to the databases:
// a line per bookkeeping table and per change to a table that already existed (an ALTER of a
// gem table can take long: it gets a line before and one after), and one line per kind, with
// the count and the first and last name, for the tables of a new model (shards × (1 + indices)
// of them, often hundreds).
import type { Logger } from '../base/logger.js';
import type { SqlSession } from '../mysql/mysqlPool.js';
import type { SchemaChange } from './schemaPlan.js';
import { isAlreadyAltered } from '../mysql/sqlErrors.js';

const PROGRESS_EVERY_MS = 1000;

export interface ApplyOptions {
  /** How many CREATE TABLEs to run at once. */
  concurrency: number;
  /** Added to every log line (the model, the partition). */
  fields: Record<string, unknown>;
}

/**
 * Runs the changes: the database and bookkeeping tables, then a model's tables (`concurrency`
 * at a time), then the ALTERs of existing tables. Every statement is idempotent (IF NOT EXISTS) or preceded by a fresh inspection, so a
 * failure part-way is repaired by running the plan again.
 */
export async function applySchemaChanges(
  session: SqlSession,
  changes: readonly SchemaChange[],
  logger: Logger,
  options: ApplyOptions,
): Promise<void> {
  const alters = changes.filter((change) => change.kind === 'request_id column');
  const modelTables = changes.filter(isModelTable);
  const others = changes.filter((change) => !alters.includes(change) && !isModelTable(change));
  for (const change of others) {
    await session.query(change.sql);
    logger.info(`created ${change.kind}`, { ...options.fields, table: change.table });
  }
  await createModelTables(session, modelTables, logger, options);
  for (const change of alters) {
    const started = Date.now();
    logger.info('adding the request_id column and its unique key to a table the gem created', {
      ...options.fields,
      table: change.table,
    });
    try {
      await session.query(change.sql);
    } catch (error) {
      // Two servers defining the same model at once both saw the table without the column.
      if (!isAlreadyAltered(error)) throw error;
      logger.info('another server added the request_id column meanwhile', {
        ...options.fields,
        table: change.table,
      });
      continue;
    }
    logger.info('added the request_id column and its unique key', {
      ...options.fields,
      table: change.table,
      ms: Date.now() - started,
    });
  }
}

function isModelTable(change: SchemaChange): boolean {
  return change.kind === 'content table' || change.kind === 'index table';
}

async function createModelTables(
  session: SqlSession,
  creates: readonly SchemaChange[],
  logger: Logger,
  options: ApplyOptions,
): Promise<void> {
  if (creates.length === 0) return;
  let created = 0;
  let lastReport = Date.now();
  await forEachConcurrently(creates, options.concurrency, async (change) => {
    await session.query(change.sql);
    created += 1;
    if (Date.now() - lastReport > PROGRESS_EVERY_MS) {
      lastReport = Date.now();
      logger.info('creating tables', { ...options.fields, created, of: creates.length });
    }
  });
  for (const kind of ['content table', 'index table'] as const) {
    const tables = creates.filter((change) => change.kind === kind).map(({ table }) => table);
    if (tables.length === 0) continue;
    logger.info(`created ${kind}s`, {
      ...options.fields,
      count: tables.length,
      first: tables[0],
      last: tables[tables.length - 1],
    });
  }
}

async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
