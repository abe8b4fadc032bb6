// Every write of content tables: the transactions that append versions under a shard's log
// lock, and the removal of a row a lost create race left behind.
import type { Row, SqlSession, SqlValue, WriteResult } from '../mysqlPool.js';
import {
  CELL_COLUMNS,
  INSERT_COLUMNS,
  type CellGrid,
  type CreatedAtKind,
  type InsertedCell,
  type NewCell,
  NOTHING,
  type RequestKey,
  latestVersionsSql,
  createdAtColumnValue,
  selectEach,
  toDate,
} from './contentRows.js';

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
 * `createdAt` is the kind of the store's created_at column.
 */
export async function insertCellAndCommit(
  session: SqlSession,
  table: string,
  cell: NewCell,
  createdAt: CreatedAtKind,
): Promise<{ id: number; createdAt: Date }> {
  const results = await session.query<unknown[]>(
    `INSERT INTO \`${table}\` (${INSERT_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?);
SELECT \`created_at\` FROM \`${table}\` WHERE \`id\` = LAST_INSERT_ID();
COMMIT`,
    [
      cell.uuid,
      cell.name,
      cell.refKey,
      cell.body,
      createdAtColumnValue(cell.createdAt, createdAt),
      cell.requestId,
    ],
  );
  const stored = (results[1] as Row[])[0];
  return {
    id: Number((results[0] as WriteResult).insertId),
    createdAt: toDate(stored?.created_at ?? cell.createdAt),
  };
}

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
 * `createdAt` is the kind of the store's created_at column.
 */
export async function insertCells(
  session: SqlSession,
  inserts: readonly TableInsert[],
  commit: boolean,
  createdAt: CreatedAtKind,
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
        createdAtColumnValue(cell.createdAt, createdAt),
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
