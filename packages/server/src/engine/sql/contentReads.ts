// Every read of content tables: single cells, the latest versions of many cells, and pages of
// a shard's log.
import { type RowId, exactInteger } from '../exactInteger.js';
import type { Row } from '../mysqlPool.js';
import { CELL_COLUMNS, type CellGrid, latestVersionsSql } from './contentRows.js';
import { type StatementReader, statement } from './statement.js';

/** The latest version of a cell, or a given version. */
export async function readCell(
  reader: StatementReader,
  table: string,
  uuid: string,
  cell: string,
  refKey?: number,
): Promise<Row | undefined> {
  const [rows] = (await reader.read([
    refKey === undefined
      ? statement(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? ORDER BY \`ref_key\` DESC LIMIT 1`,
          [uuid, cell],
        )
      : statement(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? AND \`ref_key\` = ?`,
          [uuid, cell, refKey],
        ),
  ])) as Row[][];
  return rows?.[0];
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
  reader: StatementReader,
  grids: readonly TableGrid[],
): Promise<Row[][]> {
  return (await reader.read(
    grids.map(({ table, uuids, cells }) =>
      statement(latestVersionsSql(table, CELL_COLUMNS), [uuids, cells]),
    ),
  )) as Row[][];
}

/** A page of the shard's log: rows with id > cursor in id order, and the shard's max id. */
export async function readLogPage(
  reader: StatementReader,
  table: string,
  cursor: RowId,
  limit: number,
): Promise<{ rows: Row[]; maxId: RowId }> {
  const [rows, max] = (await reader.read([
    statement(`SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?`, [
      cursor,
      limit,
    ]),
    statement(`SELECT COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${table}\``),
  ])) as Row[][];
  return { rows: rows ?? [], maxId: maxIdOf(max?.[0]) };
}

/** Where to read a page of one table's log. */
export interface LogPageRead {
  table: string;
  cursor: RowId;
  limit: number;
}

/**
 * Pages of several tables' logs of one partition in one round trip: for each, rows with
 * id > cursor in id order, at most `limit`. One row list per page, in order.
 */
export async function readLogPages(
  reader: StatementReader,
  pages: readonly LogPageRead[],
): Promise<Row[][]> {
  return (await reader.read(
    pages.map(({ table, cursor, limit }) =>
      statement(
        `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?`,
        [cursor, limit],
      ),
    ),
  )) as Row[][];
}

/** The max id of several shards' tables on one partition, in one round trip. */
export async function readMaxIds(
  reader: StatementReader,
  tables: readonly { shard: number; table: string }[],
): Promise<Map<number, RowId>> {
  if (tables.length === 0) return new Map();
  const sql = tables
    .map(({ table }) => `SELECT ? AS shard, COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${table}\``)
    .join(' UNION ALL ');
  const [rows = []] = (await reader.read([
    statement(
      sql,
      tables.map(({ shard }) => shard),
    ),
  ])) as Row[][];
  return new Map(rows.map((row) => [Number(row.shard), maxIdOf(row)]));
}

/** A `COALESCE(MAX(id), 0) AS max_id` column. */
function maxIdOf(row: Row | undefined): RowId {
  return exactInteger((row?.max_id ?? 0) as number | string);
}
