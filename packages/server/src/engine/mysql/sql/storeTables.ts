// All SQL that touches the store's own bookkeeping tables:
// - `<ns>_shameless_store`, on every partition: the layout the data was written with;
// - `<ns>_shameless_models`, on partition 0: model definitions, read by every server;
// - `<ns>_shameless_log_locks`, on every partition: one row per content shard, locked by each
//   write to that shard so that its ids commit in order (see docs on the gap-free log).
import type { Row, SqlSession } from '../mysqlPool.js';

export interface StoreRecord {
  namespace: string;
  shardsCount: number;
  partitionCount: number;
  partitionIndex: number;
}

export function createStoreTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`id\` TINYINT NOT NULL PRIMARY KEY,
  \`namespace\` VARCHAR(64) NOT NULL,
  \`shards_count\` INT NOT NULL,
  \`partition_count\` INT NOT NULL,
  \`partition_index\` INT NOT NULL,
  \`created_at\` DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

export function createModelsTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`name\` VARCHAR(64) NOT NULL PRIMARY KEY,
  \`definition\` TEXT NOT NULL,
  \`updated_at\` DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

export function createLogLocksTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`table_name\` VARCHAR(64) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

const selectStoreRecordSql = (table: string) =>
  `SELECT \`namespace\`, \`shards_count\`, \`partition_count\`, \`partition_index\` FROM \`${table}\` WHERE \`id\` = 1`;

function toStoreRecord(row: Row): StoreRecord {
  return {
    namespace: String(row.namespace),
    shardsCount: Number(row.shards_count),
    partitionCount: Number(row.partition_count),
    partitionIndex: Number(row.partition_index),
  };
}

/** Records the layout unless one is there already; returns the layout stored. */
export async function claimStoreRecord(
  session: SqlSession,
  table: string,
  record: StoreRecord,
): Promise<StoreRecord> {
  const [, rows] = await session.query<[unknown, Row[]]>(
    `INSERT IGNORE INTO \`${table}\` (\`id\`, \`namespace\`, \`shards_count\`, \`partition_count\`, \`partition_index\`, \`created_at\`)
VALUES (1, ?, ?, ?, ?, NOW(6));
${selectStoreRecordSql(table)}`,
    [record.namespace, record.shardsCount, record.partitionCount, record.partitionIndex],
  );
  const row = rows[0];
  if (!row) throw new Error(`store record missing from ${table} right after it was written`);
  return toStoreRecord(row);
}

/** The layout recorded in the table, if one was (a dry run reads it without claiming). */
export async function readStoreRecord(
  session: SqlSession,
  table: string,
): Promise<StoreRecord | undefined> {
  const rows = await session.query<Row[]>(selectStoreRecordSql(table));
  return rows[0] ? toStoreRecord(rows[0]) : undefined;
}

export async function readModelDefinitions(
  session: SqlSession,
  table: string,
): Promise<{ name: string; definition: string }[]> {
  const rows = await session.query<Row[]>(
    `SELECT \`name\`, \`definition\` FROM \`${table}\` ORDER BY \`name\``,
  );
  return rows.map((row) => ({ name: String(row.name), definition: String(row.definition) }));
}

/** The stored definition of one model, if any. */
export async function readModelDefinition(
  session: SqlSession,
  table: string,
  name: string,
): Promise<string | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT \`definition\` FROM \`${table}\` WHERE \`name\` = ?`,
    [name],
  );
  return rows[0] ? String(rows[0].definition) : undefined;
}

/** In an open transaction: the stored definition, locked until commit. */
export async function lockModelDefinition(
  session: SqlSession,
  table: string,
  name: string,
): Promise<string | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT \`definition\` FROM \`${table}\` WHERE \`name\` = ? FOR UPDATE`,
    [name],
  );
  return rows[0] ? String(rows[0].definition) : undefined;
}

export async function writeModelDefinition(
  session: SqlSession,
  table: string,
  name: string,
  definition: string,
): Promise<void> {
  await session.query(
    `INSERT INTO \`${table}\` (\`name\`, \`definition\`, \`updated_at\`) VALUES (?, ?, NOW(6))
ON DUPLICATE KEY UPDATE \`definition\` = VALUES(\`definition\`), \`updated_at\` = VALUES(\`updated_at\`)`,
    [name, definition],
  );
}

export async function insertLogLocks(
  session: SqlSession,
  table: string,
  contentTables: readonly string[],
): Promise<void> {
  if (contentTables.length === 0) return;
  await session.query(
    `INSERT IGNORE INTO \`${table}\` (\`table_name\`) VALUES ${contentTables.map(() => '(?)').join(', ')}`,
    contentTables as string[],
  );
}
