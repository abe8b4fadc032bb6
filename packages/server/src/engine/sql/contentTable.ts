// All SQL that touches content tables (`<ns>_<model>_<NNNNNN>`). Table names reaching these
// functions were built by tableNames.ts from validated identifiers; values are always
// placeholders.
import type { Row, SqlSession, WriteResult } from '../mysqlPool.js';

/** One row of a content table, with the shard it was read from. */
export interface StoredCell {
  id: number;
  shard: number;
  uuid: string;
  name: string;
  refKey: number;
  createdAt: Date;
  body: Buffer;
}

const CELL_COLUMNS = '`id`, `uuid`, `column_name`, `ref_key`, `body`, `created_at`';

// The gem's columns and keys, plus `request_id` for idempotent writes. The gem's inserts name
// only its own columns, so they keep working; its tables get the column added by
// ensureRequestIdColumn.
export function createContentTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`id\` BIGINT NOT NULL AUTO_INCREMENT,
  \`uuid\` VARCHAR(36),
  \`column_name\` VARCHAR(255) NOT NULL,
  \`ref_key\` INT NOT NULL,
  \`body\` MEDIUMBLOB,
  \`created_at\` DATETIME(6) NOT NULL,
  \`request_id\` VARCHAR(64) NULL,
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`uuid_column_ref_key\` (\`uuid\`, \`column_name\`, \`ref_key\`),
  UNIQUE KEY \`uuid_column_request_id\` (\`uuid\`, \`column_name\`, \`request_id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

/** Of the given tables, those lacking the request_id column (created by the gem). */
export async function tablesWithoutRequestId(session: SqlSession, tables: readonly string[]) {
  if (tables.length === 0) return [];
  const rows = await session.query<Row[]>(
    `SELECT TABLE_NAME AS name FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'request_id' AND TABLE_NAME IN (?)`,
    [tables as unknown as string],
  );
  const have = new Set(rows.map((row) => String(row.name)));
  return tables.filter((table) => !have.has(table));
}

export function addRequestIdColumnSql(table: string): string {
  return `ALTER TABLE \`${table}\` ADD COLUMN \`request_id\` VARCHAR(64) NULL,
  ADD UNIQUE KEY \`uuid_column_request_id\` (\`uuid\`, \`column_name\`, \`request_id\`)`;
}

export function toStoredCell(row: Row, shard: number): StoredCell {
  return {
    id: Number(row.id),
    shard,
    uuid: String(row.uuid),
    name: String(row.column_name),
    refKey: Number(row.ref_key),
    createdAt: toDate(row.created_at),
    body: row.body instanceof Buffer ? row.body : Buffer.alloc(0),
  };
}

function toDate(value: unknown): Date {
  if (value instanceof Date) return value;
  // The gem's legacy_created_at_is_bigint stores milliseconds.
  if (typeof value === 'number' || typeof value === 'string') return new Date(Number(value));
  return new Date(0);
}

/** The latest version of a cell, or a given version. */
export async function readCell(
  session: SqlSession,
  table: string,
  uuid: string,
  cell: string,
  refKey?: number,
): Promise<Row | undefined> {
  const rows =
    refKey === undefined
      ? await session.query<Row[]>(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? ORDER BY \`ref_key\` DESC LIMIT 1`,
          [uuid, cell],
        )
      : await session.query<Row[]>(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? AND \`ref_key\` = ?`,
          [uuid, cell, refKey],
        );
  return rows[0];
}

/**
 * Opens a write transaction on a content shard and reads what the write depends on, in one
 * round trip: the shard's log lock (serialising the shard's writers so ids commit in order),
 * the cell's latest version, an earlier write with the same request id, and whether the
 * record has a base cell.
 */
export async function beginCellWrite(
  session: SqlSession,
  table: string,
  logLockTable: string,
  uuid: string,
  cell: string,
  requestId: string,
): Promise<{ latest?: Row; replayed?: Row; recordExists: boolean }> {
  const results = await session.query<unknown[]>(
    `START TRANSACTION;
SELECT 1 FROM \`${logLockTable}\` WHERE \`table_name\` = ? FOR UPDATE;
SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? ORDER BY \`ref_key\` DESC LIMIT 1;
SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? AND \`request_id\` = ?;
SELECT 1 FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = 'base' LIMIT 1`,
    [table, uuid, cell, uuid, cell, requestId, uuid],
  );
  const [, lock, latest, replayed, base] = results as Row[][];
  if (!lock || lock.length === 0) {
    throw new Error(`log lock row for ${table} is missing`);
  }
  return {
    latest: latest?.[0],
    replayed: replayed?.[0],
    recordExists: (base?.length ?? 0) > 0,
  };
}

/**
 * Inserts a version and commits the transaction opened by beginCellWrite. Returns the id and
 * the created_at as stored: the column's precision decides (the gem's DATETIME has none).
 */
export async function insertCellAndCommit(
  session: SqlSession,
  table: string,
  cell: {
    uuid: string;
    name: string;
    refKey: number;
    body: Buffer;
    createdAt: Date;
    requestId: string;
  },
): Promise<{ id: number; createdAt: Date }> {
  const results = await session.query<unknown[]>(
    `INSERT INTO \`${table}\` (\`uuid\`, \`column_name\`, \`ref_key\`, \`body\`, \`created_at\`, \`request_id\`)
VALUES (?, ?, ?, ?, ?, ?);
SELECT \`created_at\` FROM \`${table}\` WHERE \`id\` = LAST_INSERT_ID();
COMMIT`,
    [cell.uuid, cell.name, cell.refKey, cell.body, cell.createdAt, cell.requestId],
  );
  const stored = (results[1] as Row[])[0];
  return {
    id: Number((results[0] as WriteResult).insertId),
    createdAt: toDate(stored?.created_at ?? cell.createdAt),
  };
}

export async function rollback(session: SqlSession): Promise<void> {
  await session.query('ROLLBACK');
}

/** Removes a version this server wrote and that no index reaches (a lost create race). */
export async function deleteCell(session: SqlSession, table: string, id: number): Promise<void> {
  await session.query(`DELETE FROM \`${table}\` WHERE \`id\` = ?`, [id]);
}

/** The latest version of each named cell of each record, in one query. */
export async function readLatestCells(
  session: SqlSession,
  table: string,
  uuids: readonly string[],
  cells: readonly string[],
): Promise<Row[]> {
  return session.query<Row[]>(
    `SELECT c.\`id\`, c.\`uuid\`, c.\`column_name\`, c.\`ref_key\`, c.\`body\`, c.\`created_at\`
       FROM \`${table}\` c
       JOIN (SELECT \`uuid\`, \`column_name\`, MAX(\`ref_key\`) AS \`ref_key\` FROM \`${table}\`
              WHERE \`uuid\` IN (?) AND \`column_name\` IN (?) GROUP BY \`uuid\`, \`column_name\`) latest
      USING (\`uuid\`, \`column_name\`, \`ref_key\`)`,
    [uuids as unknown as string, cells as unknown as string],
  );
}

/** A page of the shard's log: rows with id > cursor in id order, and the shard's max id. */
export async function readLogPage(
  session: SqlSession,
  table: string,
  cursor: number,
  limit: number,
): Promise<{ rows: Row[]; maxId: number }> {
  const [rows, max] = await session.query<Row[][]>(
    `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?;
SELECT COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${table}\``,
    [cursor, limit],
  );
  return { rows: rows ?? [], maxId: Number(max?.[0]?.max_id ?? 0) };
}

/** The max id of several shards' tables on one partition, in one round trip. */
export async function readMaxIds(
  session: SqlSession,
  tables: readonly { shard: number; table: string }[],
): Promise<Map<number, number>> {
  if (tables.length === 0) return new Map();
  const sql = tables
    .map(({ table }) => `SELECT ? AS shard, COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${table}\``)
    .join(' UNION ALL ');
  const rows = await session.query<Row[]>(
    sql,
    tables.map(({ shard }) => shard),
  );
  return new Map(rows.map((row) => [Number(row.shard), Number(row.max_id)]));
}
