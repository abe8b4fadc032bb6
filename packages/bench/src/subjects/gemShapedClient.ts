// The gem-shaped baseline: the statements the Ruby gem `shameless` (Sequel over mysql2) sends
// MySQL for an operation, sent by an in-process mysql2 client with one connection per worker,
// as each of the gem's threads holds one. It stands for the library Shameless replaces, minus
// Ruby's own cost: "× gem" is the SDK's throughput over this client's at the same concurrency.
// Each statement runs on its own (autocommit), with no lock, as the gem's do; two updates of
// one record at once can therefore both read version n, and the second insert of n + 1 fails
// on the unique key, which the baseline reports as an error, as the gem would raise it.
import { randomUUID } from 'node:crypto';
import type { IndexSpec } from '@shameless/server';
import {
  type MysqlPool,
  type Row,
  type SqlSession,
  createMysqlPool,
  parseMysqlUrl,
} from '@shameless/server/sql';
import { pack, unpack } from 'msgpackr';
import type { BaselineTables } from './mysqlBaseline.js';

/** Field values of a record, index fields included, as the gem's `put` takes them. */
export type GemValues = Readonly<Record<string, string | number>>;

/** mysql2 for `workers` workers: worker `i` always uses the same connection. */
export interface GemShapedClient {
  /** Worker `worker`'s connection, taken from the pool on its first use and kept. */
  session(worker: number): Promise<SqlSession>;
  end(): Promise<void>;
}

export function openGemShapedClient(partitionUrl: string, workers: number): GemShapedClient {
  const pool = createMysqlPool(parseMysqlUrl(partitionUrl), {
    connectionLimit: workers,
    connectTimeoutMs: 5000,
  });
  const sessions = new Map<number, ReturnType<MysqlPool['getConnection']>>();
  return {
    session(worker) {
      if (!Number.isInteger(worker) || worker < 0 || worker >= workers) {
        throw new RangeError(`worker ${worker} is not one of the client's ${workers}`);
      }
      let session = sessions.get(worker);
      if (!session) {
        session = pool.getConnection();
        sessions.set(worker, session);
      }
      return session;
    },
    async end() {
      const held = await Promise.allSettled(sessions.values());
      for (const result of held) if (result.status === 'fulfilled') result.value.release();
      await pool.end();
    },
  };
}

/**
 * `Model.put` of a new record: its base cell, version 0, holding every value (autocommit),
 * then one row in each index. Resolves with the new uuid.
 */
export async function gemCreate(
  session: SqlSession,
  tables: BaselineTables,
  indices: readonly IndexSpec[],
  values: GemValues,
): Promise<string> {
  const uuid = randomUUID();
  await insertBaseVersion(session, tables, uuid, 0, pack(values));
  for (const index of indices) {
    const columns = [...index.fields.map((field) => field.name), 'uuid'];
    await session.query(
      `INSERT INTO \`${indexTable(tables, index, values)}\` (${columns.map((c) => `\`${c}\``).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      [...fieldValues(index, values), uuid],
    );
  }
  return uuid;
}

/** `Index#where` with every field of the index given: the uuid it maps the values to. */
export async function gemLookup(
  session: SqlSession,
  tables: BaselineTables,
  index: IndexSpec,
  values: GemValues,
): Promise<string | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT \`uuid\` FROM \`${indexTable(tables, index, values)}\` WHERE ${index.fields.map((field) => `\`${field.name}\` = ?`).join(' AND ')}`,
    fieldValues(index, values),
  );
  return rows[0] ? String(rows[0].uuid) : undefined;
}

/** `fetch_cell('base')`: Sequel's `.order(:ref_key).last` is the latest version, whole row. */
export async function gemLatestBase(
  session: SqlSession,
  tables: BaselineTables,
  uuid: string,
): Promise<Row | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT * FROM \`${tables.contentOf(uuid)}\` WHERE \`uuid\` = ? AND \`column_name\` = 'base' ORDER BY \`ref_key\` DESC LIMIT 1`,
    [uuid],
  );
  return rows[0];
}

/**
 * A point `where` on the primary index and the record's base cell: `gemLookup`, then
 * `gemLatestBase`. Undefined when no record holds the values, or it has no base cell.
 */
export async function gemPointWhere(
  session: SqlSession,
  tables: BaselineTables,
  primary: IndexSpec,
  values: GemValues,
): Promise<Row | undefined> {
  const uuid = await gemLookup(session, tables, primary, values);
  return uuid === undefined ? undefined : gemLatestBase(session, tables, uuid);
}

/**
 * `record.base.update(changes)` on the record the primary values name: the index lookup, the
 * latest base version, the merge in process (decode, shallow merge, encode), and the insert of
 * the next version.
 */
export async function gemUpdate(
  session: SqlSession,
  tables: BaselineTables,
  primary: IndexSpec,
  values: GemValues,
  changes: GemValues,
): Promise<void> {
  const uuid = await gemLookup(session, tables, primary, values);
  if (uuid === undefined) throw new Error('gem-shaped update: no record has these primary values');
  const latest = await gemLatestBase(session, tables, uuid);
  const body = latest ? (unpack(latest.body as Buffer) as Record<string, unknown>) : {};
  const refKey = latest ? Number(latest.ref_key) + 1 : 0;
  await insertBaseVersion(session, tables, uuid, refKey, pack({ ...body, ...changes }));
}

/** The gem's content insert: its own five columns only. */
async function insertBaseVersion(
  session: SqlSession,
  tables: BaselineTables,
  uuid: string,
  refKey: number,
  body: Buffer,
): Promise<void> {
  await session.query(
    `INSERT INTO \`${tables.contentOf(uuid)}\` (\`uuid\`, \`column_name\`, \`ref_key\`, \`body\`, \`created_at\`) VALUES (?, 'base', ?, ?, ?)`,
    [uuid, refKey, body, new Date()],
  );
}

function fieldValues(index: IndexSpec, values: GemValues): (string | number)[] {
  return index.fields.map((field) => {
    const value = values[field.name];
    if (value === undefined) throw new Error(`gem-shaped client: no value for ${field.name}`);
    return value;
  });
}

function indexTable(tables: BaselineTables, index: IndexSpec, values: GemValues): string {
  return tables.index(index.name, Number(values[index.shardOn]));
}
