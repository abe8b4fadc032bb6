// All SQL that touches content tables (`<ns>_<model>_<NNNNNN>`). Table names reaching these
// functions were built by tableNames.ts from validated identifiers; values are always
// placeholders.
import type { Row, SqlSession, SqlValue, WriteResult } from '../mysqlPool.js';

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

/** One cell of one record: a (uuid, cell name) pair. */
export interface CellKey {
  uuid: string;
  cell: string;
}

/** Every named cell of every listed record: the cross product of `uuids` and `cells`. */
export interface CellGrid {
  uuids: readonly string[];
  cells: readonly string[];
}

/** An earlier write to a cell, looked up by its request id. */
export interface RequestKey extends CellKey {
  requestId: string;
}

/** A version about to be inserted. */
export interface NewCell {
  uuid: string;
  name: string;
  refKey: number;
  body: Buffer;
  createdAt: Date;
  requestId: string;
}

/** A row as read back after an insert: the stored cell without its shard and body. */
export type InsertedCell = Omit<StoredCell, 'shard' | 'body'>;

const CELL_COLUMNS = '`id`, `uuid`, `column_name`, `ref_key`, `body`, `created_at`';
const INSERT_COLUMNS = '`uuid`, `column_name`, `ref_key`, `body`, `created_at`, `request_id`';

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
    [tables],
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
  cell: NewCell,
): Promise<{ id: number; createdAt: Date }> {
  const results = await session.query<unknown[]>(
    `INSERT INTO \`${table}\` (${INSERT_COLUMNS})
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

/**
 * Runs the SELECTs in one round trip and answers one row list per statement, in order (mysql2
 * answers a single statement's rows as they are, several as a list of row lists).
 */
async function selectEach(
  session: SqlSession,
  statements: readonly string[],
  values: readonly SqlValue[],
): Promise<Row[][]> {
  if (statements.length === 0) return [];
  const results = await session.query<unknown[]>(statements.join(';\n'), values);
  return statements.length === 1 ? [results as Row[]] : (results as Row[][]);
}

/** A statement with an empty result. */
const NOTHING = 'SELECT 1 FROM DUAL WHERE FALSE';

/** What a batch must read from one content table before it writes there. */
export interface TableBatchReads {
  table: string;
  /** The cells whose latest ref_key is read. */
  versionsOf: CellGrid;
  /** The cells whose latest body is read (those a merge writes); none when undefined. */
  bodiesOf: CellGrid | undefined;
  /** Earlier writes looked up by request id; none looked up when empty. */
  requests: readonly RequestKey[];
}

/** What a batch read from one content table, under its log lock. */
export interface TableBatchState {
  /** The latest ref_key of each cell of `versionsOf` (uuid, column_name, ref_key). */
  latest: Row[];
  /** The latest body of each cell of `bodiesOf` (uuid, column_name, body). */
  latestBodies: Row[];
  /** The versions written earlier with one of the request ids (with their request_id). */
  replayed: Row[];
}

/**
 * The batch form of beginCellWrite, for several content tables of one partition at once:
 * opens one write transaction, takes the log lock of every table and reads everything the
 * batch's writes depend on, all in one round trip. The lock rows are locked in table-name
 * order (an IN list is scanned in key order), so batches that share tables cannot deadlock.
 * The grids may hold cells the batch does not write (the cross product of its records and cell
 * names): the price of one index dive per cell, see latestVersionsSql.
 */
export async function beginCellBatchWrite(
  session: SqlSession,
  logLockTable: string,
  tables: readonly TableBatchReads[],
): Promise<TableBatchState[]> {
  const statements = [
    'START TRANSACTION',
    `SELECT \`table_name\` FROM \`${logLockTable}\` WHERE \`table_name\` IN (?)
      ORDER BY \`table_name\` FOR UPDATE`,
  ];
  const values: SqlValue[] = [tables.map(({ table }) => table)];
  for (const { table, versionsOf, bodiesOf, requests } of tables) {
    statements.push(
      `SELECT \`uuid\`, \`column_name\`, MAX(\`ref_key\`) AS \`ref_key\` FROM \`${table}\`
        WHERE \`uuid\` IN (?) AND \`column_name\` IN (?) GROUP BY \`uuid\`, \`column_name\``,
      // A row-constructor IN list on the (uuid, column_name, request_id) key: one dive each.
      // Always three results per table (an empty one for what is not read), so that results
      // line up with tables.
      requests.length > 0
        ? `SELECT ${CELL_COLUMNS}, \`request_id\` FROM \`${table}\`
        WHERE (\`uuid\`, \`column_name\`, \`request_id\`) IN (?)`
        : NOTHING,
      bodiesOf ? latestVersionsSql(table, 'c.`uuid`, c.`column_name`, c.`body`') : NOTHING,
    );
    values.push(versionsOf.uuids, versionsOf.cells);
    if (requests.length > 0) {
      values.push(requests.map(({ uuid, cell, requestId }) => [uuid, cell, requestId]));
    }
    if (bodiesOf) values.push(bodiesOf.uuids, bodiesOf.cells);
  }
  const results = (await session.query<unknown[]>(statements.join(';\n'), values)) as Row[][];
  const locked = results[1] ?? [];
  if (locked.length !== tables.length) {
    const have = new Set(locked.map((row) => String(row.table_name)));
    const missing = tables.find(({ table }) => !have.has(table))?.table;
    throw new Error(`log lock row for ${missing} is missing`);
  }
  return tables.map((_, i) => ({
    latest: results[2 + 3 * i] ?? [],
    replayed: results[3 + 3 * i] ?? [],
    latestBodies: results[4 + 3 * i] ?? [],
  }));
}

/**
 * Of each table's uuids, those that have a base cell (records that exist), for several tables
 * of one partition in one round trip, in the transaction opened by beginCellBatchWrite.
 */
export async function readUuidsWithBase(
  session: SqlSession,
  tables: readonly { table: string; uuids: readonly string[] }[],
): Promise<Set<string>[]> {
  const lists = await selectEach(
    session,
    tables.map(
      ({ table }) =>
        `SELECT DISTINCT \`uuid\` FROM \`${table}\` WHERE \`uuid\` IN (?) AND \`column_name\` = 'base'`,
    ),
    tables.map(({ uuids }) => uuids),
  );
  return lists.map((rows) => new Set(rows.map((row) => String(row.uuid))));
}

/** Versions to insert into one content table. */
export interface TableInsert {
  table: string;
  cells: readonly NewCell[];
}

/**
 * Inserts versions into one or more content tables in the transaction opened by
 * beginCellBatchWrite, one multi-row INSERT per table (committing when `commit` is set), and
 * reads back the stored rows of each in id order, all in one round trip: their ids, and their
 * created_at as stored (the column's precision decides). The rows read are the id range
 * LAST_INSERT_ID() (the first id of a multi-row INSERT) to LAST_INSERT_ID() + n - 1: no
 * RETURNING, so that MySQL 8 works too. The caller checks that they are its rows.
 */
export async function insertCells(
  session: SqlSession,
  inserts: readonly TableInsert[],
  commit: boolean,
): Promise<InsertedCell[][]> {
  const statements: string[] = [];
  const values: SqlValue[] = [];
  for (const { table, cells } of inserts) {
    statements.push(
      `INSERT INTO \`${table}\` (${INSERT_COLUMNS}) VALUES ?`,
      `SELECT \`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, \`created_at\` FROM \`${table}\`
        WHERE \`id\` BETWEEN LAST_INSERT_ID() AND LAST_INSERT_ID() + ? ORDER BY \`id\``,
    );
    values.push(
      cells.map((cell) => [
        cell.uuid,
        cell.name,
        cell.refKey,
        cell.body,
        cell.createdAt,
        cell.requestId,
      ]),
      cells.length - 1,
    );
  }
  if (commit) statements.push('COMMIT');
  const results = (await session.query<unknown[]>(statements.join(';\n'), values)) as Row[][];
  return inserts.map((_, i) =>
    (results[1 + 2 * i] ?? []).map((row) => ({
      id: Number(row.id),
      uuid: String(row.uuid),
      name: String(row.column_name),
      refKey: Number(row.ref_key),
      createdAt: toDate(row.created_at),
    })),
  );
}

/**
 * About how many bytes a version adds to an INSERT statement: mysql2 sends a Buffer as
 * X'<hex>', two characters per byte, and the other values are short.
 */
export function insertedBytes(cell: NewCell): number {
  return 2 * cell.body.length + cell.uuid.length + cell.name.length + cell.requestId.length + 64;
}

export async function rollback(session: SqlSession): Promise<void> {
  await session.query('ROLLBACK');
}

/** Removes a version this server wrote and that no index reaches (a lost create race). */
export async function deleteCell(session: SqlSession, table: string, id: number): Promise<void> {
  await session.query(`DELETE FROM \`${table}\` WHERE \`id\` = ?`, [id]);
}

/** The cells of a grid, in one content table. */
export interface TableGrid extends CellGrid {
  table: string;
}

/**
 * The latest version of each named cell of each record, for several tables of one partition
 * in one round trip (a query per table): every cell of each grid that has a version (callers
 * that want fewer cells filter the rows). One result per grid, in order.
 */
export async function readLatestCells(
  session: SqlSession,
  grids: readonly TableGrid[],
): Promise<Row[][]> {
  return selectEach(
    session,
    grids.map(({ table }) => latestVersionsSql(table, CELL_COLUMNS)),
    grids.flatMap(({ uuids, cells }) => [uuids, cells]),
  );
}

/**
 * A SELECT of `columns` (of table alias c) from the latest version of each cell of a grid,
 * bound as two lists: uuids, then cell names. Written as `uuid IN (...) AND column_name IN
 * (...)` because then MariaDB and MySQL find each MAX(ref_key) with one dive into the
 * (uuid, column_name, ref_key) key (a loose index scan), however many versions a cell has; a
 * row-constructor list of (uuid, column_name) pairs would scan every version instead.
 */
function latestVersionsSql(table: string, columns: string): string {
  return `SELECT ${columns} FROM \`${table}\` c
  JOIN (SELECT \`uuid\`, \`column_name\`, MAX(\`ref_key\`) AS \`ref_key\` FROM \`${table}\`
         WHERE \`uuid\` IN (?) AND \`column_name\` IN (?) GROUP BY \`uuid\`, \`column_name\`) latest
 USING (\`uuid\`, \`column_name\`, \`ref_key\`)`;
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

/** Where to read a page of one table's log. */
export interface LogPageRead {
  table: string;
  cursor: number;
  limit: number;
}

/**
 * Pages of several tables' logs of one partition in one round trip: for each, rows with
 * id > cursor in id order, at most `limit`. One row list per page, in order.
 */
export async function readLogPages(
  session: SqlSession,
  pages: readonly LogPageRead[],
): Promise<Row[][]> {
  return selectEach(
    session,
    pages.map(
      ({ table }) =>
        `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?`,
    ),
    pages.flatMap(({ cursor, limit }) => [cursor, limit]),
  );
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
