// The statements that write content tables, as a shard transaction composes them: the log
// lock of each table written, what an append must read under it, the multi-row INSERT and the
// read-back of what it stored. Table names reaching here were built by tableNames.ts from
// validated identifiers; values are always placeholders.
import { exactInteger } from '../../base/exactInteger.js';
import type { Row } from '../mysqlPool.js';
import {
  CELL_COLUMNS,
  INSERT_COLUMNS,
  type InsertedCell,
  type NewCell,
  type RequestKey,
  createdAtColumnValue,
  toDate,
} from './contentRows.js';
import type { CreatedAtKind } from '../../model/layout.js';
import { type Statement, statement, unionAll } from './statement.js';

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

/**
 * For a partition on Galera, after {@link lockLogRows}: the locked rows deleted and put back.
 * The lock is a node's own (Galera replicates no lock, and certifies only rows written), so two
 * transactions writing one shard through two nodes would not wait for each other, and one could
 * commit ids below the other's after a follower had read past them. Written, the rows are in
 * both write sets: the one Galera orders second fails certification (ER_LOCK_DEADLOCK), is
 * retried, and begins after the first (causal reads), taking ids above it. A row missing from
 * the lock stays missing to it, and the transaction rolls back as without these.
 */
export function rewriteLogLocks(logLockTable: string, tables: readonly string[]): Statement[] {
  return [
    statement(`DELETE FROM \`${logLockTable}\` WHERE \`table_name\` IN (?)`, [tables]),
    statement(`INSERT INTO \`${logLockTable}\` (\`table_name\`) VALUES ?`, [
      tables.map((table) => [table]),
    ]),
  ];
}

/** The tables {@link lockLogRows} locked, from its rows. */
export function lockedTables(rows: readonly Row[]): Set<string> {
  return new Set(rows.map((row) => String(row.table_name)));
}

/** Tables and the earlier writes to look up in each by request id. */
export interface TableRequests {
  readonly table: string;
  readonly keys: readonly RequestKey[];
}

/**
 * The versions written earlier with these request ids, in several tables at once: rows
 * (`part`, the table's position; the stored columns plus `request_id`). A row-constructor IN
 * list on the (uuid, column_name, request_id) key: one dive each.
 */
export function writesByRequestId(tables: readonly TableRequests[]): Statement {
  return unionAll(
    tables.map(({ table, keys }, part) =>
      statement(
        `SELECT ? AS \`part\`, ${CELL_COLUMNS}, \`request_id\` FROM \`${table}\`
          WHERE (\`uuid\`, \`column_name\`, \`request_id\`) IN (?)`,
        [part, keys.map(({ uuid, cell, requestId }) => [uuid, cell, requestId])],
      ),
    ),
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
 * The INSERT of one version that goes in only where `condition` holds. Where it does not, the
 * row takes `existingRefKey`, a version the cell is known to have, and the INSERT fails on the
 * (uuid, column_name, ref_key) key: the statements after it in the round trip, its COMMIT
 * among them, do not run, and the caller goes back to its savepoint. So a check and the write
 * that depends on it travel together.
 */
export function insertCellIf(
  table: string,
  cell: NewCell,
  createdAt: CreatedAtKind,
  condition: Statement,
  existingRefKey: number,
): Statement {
  return statement(
    `INSERT INTO \`${table}\` (${INSERT_COLUMNS}) SELECT ?, ?, IF(${condition.sql}, ?, ?), ?, ?, ?`,
    [
      cell.uuid,
      cell.name,
      ...condition.values,
      cell.refKey,
      existingRefKey,
      cell.body,
      createdAtColumnValue(cell.createdAt, createdAt),
      cell.requestId,
    ],
  );
}

/**
 * The rows the INSERT just before it stored, in id order: their ids, and their created_at as
 * stored (the column's precision decides). They are LAST_INSERT_ID() (the first id of a
 * multi-row INSERT) and the ids after it, one auto_increment_increment apart, a primary-key
 * range: no RETURNING, so that MySQL 8 works too. The step is 1 on a lone server; on Galera
 * (wsrep_auto_increment_control) it is the cluster's size, and the ids between belong to the
 * other nodes, so they are left out. The caller checks that they are its rows.
 */
export function readInserted(table: string, count: number): Statement {
  return statement(
    `SELECT \`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, \`created_at\` FROM \`${table}\`
      WHERE \`id\` BETWEEN LAST_INSERT_ID() AND LAST_INSERT_ID() + ? * @@auto_increment_increment
        AND \`id\` % @@auto_increment_increment = LAST_INSERT_ID() % @@auto_increment_increment
      ORDER BY \`id\``,
    [count - 1],
  );
}

/** A row of {@link readInserted}. */
export function toInsertedCell(row: Row): InsertedCell {
  return {
    id: exactInteger(row.id as number | string),
    uuid: String(row.uuid),
    name: String(row.column_name),
    refKey: Number(row.ref_key),
    createdAt: toDate(row.created_at),
  };
}

/**
 * About how many bytes a version adds to an INSERT statement: mysql2 sends a Buffer as
 * X'<hex>', two characters per byte, and the other values are short.
 */
export function insertedBytes(cell: NewCell): number {
  return 2 * cell.body.length + cell.uuid.length + cell.name.length + cell.requestId.length + 64;
}
