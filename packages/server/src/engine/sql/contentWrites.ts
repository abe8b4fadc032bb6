// The statements that write content tables, as a shard transaction composes them: the log
// lock of each table written, what an append must read under it, the multi-row INSERT and the
// read-back of what it stored. Table names reaching here were built by tableNames.ts from
// validated identifiers; values are always placeholders.
import { exactInteger } from '../exactInteger.js';
import type { Row } from '../mysqlPool.js';
import {
  CELL_COLUMNS,
  INSERT_COLUMNS,
  type CellGrid,
  type CreatedAtKind,
  type InsertedCell,
  type NewCell,
  type RequestKey,
  createdAtColumnValue,
  latestVersionsSql,
  toDate,
} from './contentRows.js';
import { type Statement, statement } from './statement.js';

/**
 * Locks the log-lock row of each table, in table-name order (an IN list is scanned in key
 * order), so that transactions sharing tables always lock them in the same order and cannot
 * deadlock on them. Answers one row per locked table: check it with {@link lockedTables}.
 */
export function lockLogRows(logLockTable: string, tables: readonly string[]): Statement {
  return statement(
    `SELECT \`table_name\` FROM \`${logLockTable}\` WHERE \`table_name\` IN (?)
      ORDER BY \`table_name\` FOR UPDATE`,
    [tables],
  );
}

/** The tables {@link lockLogRows} locked, from its rows. */
export function lockedTables(rows: readonly Row[]): Set<string> {
  return new Set(rows.map((row) => String(row.table_name)));
}

/** The latest ref_key of each cell of the grid that has one: rows (uuid, column_name, ref_key). */
export function latestVersions(table: string, grid: CellGrid): Statement {
  return statement(
    `SELECT \`uuid\`, \`column_name\`, MAX(\`ref_key\`) AS \`ref_key\` FROM \`${table}\`
      WHERE \`uuid\` IN (?) AND \`column_name\` IN (?) GROUP BY \`uuid\`, \`column_name\``,
    [grid.uuids, grid.cells],
  );
}

/** The body of the latest version of each cell of the grid: rows (uuid, column_name, body). */
export function latestBodies(table: string, grid: CellGrid): Statement {
  return statement(latestVersionsSql(table, 'c.`uuid`, c.`column_name`, c.`body`'), [
    grid.uuids,
    grid.cells,
  ]);
}

/**
 * The versions written earlier with these request ids: full rows plus `request_id`. A
 * row-constructor IN list on the (uuid, column_name, request_id) key: one dive each.
 */
export function writesByRequestId(table: string, keys: readonly RequestKey[]): Statement {
  return statement(
    `SELECT ${CELL_COLUMNS}, \`request_id\` FROM \`${table}\`
      WHERE (\`uuid\`, \`column_name\`, \`request_id\`) IN (?)`,
    [keys.map(({ uuid, cell, requestId }) => [uuid, cell, requestId])],
  );
}

/**
 * One multi-row INSERT of new versions, created_at written as the store's tables hold it; follow
 * it with {@link readInserted}.
 */
export function insertCells(
  table: string,
  cells: readonly NewCell[],
  createdAt: CreatedAtKind,
): Statement {
  return statement(`INSERT INTO \`${table}\` (${INSERT_COLUMNS}) VALUES ?`, [
    cells.map((cell) => [
      cell.uuid,
      cell.name,
      cell.refKey,
      cell.body,
      createdAtColumnValue(cell.createdAt, createdAt),
      cell.requestId,
    ]),
  ]);
}

/**
 * The rows the INSERT just before it stored, in id order: their ids, and their created_at as
 * stored (the column's precision decides). They are the id range LAST_INSERT_ID() (the first
 * id of a multi-row INSERT) to LAST_INSERT_ID() + count - 1: no RETURNING, so that MySQL 8
 * works too. The caller checks that they are its rows (see {@link toInsertedCells}).
 */
export function readInserted(table: string, count: number): Statement {
  return statement(
    `SELECT \`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, \`created_at\` FROM \`${table}\`
      WHERE \`id\` BETWEEN LAST_INSERT_ID() AND LAST_INSERT_ID() + ? ORDER BY \`id\``,
    [count - 1],
  );
}

export function toInsertedCells(rows: readonly Row[]): InsertedCell[] {
  return rows.map((row) => ({
    id: exactInteger(row.id as number | string),
    uuid: String(row.uuid),
    name: String(row.column_name),
    refKey: Number(row.ref_key),
    createdAt: toDate(row.created_at),
  }));
}

/**
 * About how many bytes a version adds to an INSERT statement: mysql2 sends a Buffer as
 * X'<hex>', two characters per byte, and the other values are short.
 */
export function insertedBytes(cell: NewCell): number {
  return 2 * cell.body.length + cell.uuid.length + cell.name.length + cell.requestId.length + 64;
}
