// A point Where's one statement: a record's primary-index row and the latest version of its
// cells, read together where both lie on one partition. The row is the check that a remembered
// record still holds the values (primaryKeyCache.ts): the cells come back only joined to a row
// that leads to that record, and one statement reads both in one snapshot. Table and field
// names were built by tableNames.ts from identifiers validated when the model was defined;
// values are always placeholders.
import type { Row, SqlValue } from '../mysqlPool.js';
import { bodyColumns } from './contentReads.js';
import { type PrimaryLookup, equalsAll } from './indexTable.js';
import {
  type Statement,
  type StatementReader,
  preparableStatement,
  unionAll,
} from './statement.js';

/** A cell of a record, read only if the primary-index row of `lookup` leads to the record. */
export interface CellThroughRow {
  readonly lookup: PrimaryLookup;
  readonly uuid: string;
  /** The record's content table: on the partition of `lookup.table`. */
  readonly table: string;
  readonly cell: string;
  /** A longer body is not read with the cell, only its length; any body when left out. */
  readonly maxBodyBytes?: number;
}

/**
 * One SELECT for each cell's primary-index row and, where the row leads to the cell's record,
 * the cell's latest version: one row per cell whose values a row holds (`part`, the cell's
 * position; `holder`, the uuid the row leads to; then id, uuid, column_name, ref_key, body,
 * created_at, body_bytes, all NULL where the row leads elsewhere or the cell has no version;
 * body alone NULL where longer than maxBodyBytes), none where no row holds them.
 *
 * Each branch is the index row, found by its whole key (a const table to MariaDB), LEFT JOINed
 * to the one version whose ref_key is the cell's MAX: one backward dive into the
 * (uuid, column_name, ref_key) key and one row read, three index reads in all (measured with
 * Handler_read_key). An ORDER BY ref_key DESC LIMIT 1 over the join would sort every version
 * instead. The record is compared with a constant on each side, never column to column, so
 * tables the gem made in another collation join as well (and keep their keys).
 */
export function latestThroughPrimaryRows(cells: readonly CellThroughRow[]): Statement {
  return unionAll(
    cells.map(({ lookup, uuid, table, cell, maxBodyBytes }, part) => {
      const { body, bodyBytes, values } = bodyColumns(true, maxBodyBytes, 'c.');
      return preparableStatement(
        `SELECT ? AS \`part\`, i.\`uuid\` AS \`holder\`, c.\`id\`, c.\`uuid\`, c.\`column_name\`, c.\`ref_key\`, ${body}, c.\`created_at\`, ${bodyBytes}
           FROM \`${lookup.table}\` i LEFT JOIN \`${table}\` c
             ON i.\`uuid\` = ? AND c.\`uuid\` = ? AND c.\`column_name\` = ?
            AND c.\`ref_key\` = (SELECT MAX(v.\`ref_key\`) FROM \`${table}\` v WHERE v.\`uuid\` = ? AND v.\`column_name\` = ?)
          WHERE ${equalsAll(lookup.index, 'i.')} LIMIT 1`,
        [part, ...values, uuid, uuid, cell, uuid, cell, ...(lookup.values as SqlValue[])],
      );
    }),
  );
}

/** Runs {@link latestThroughPrimaryRows}: each cell's row, at its position; undefined where none. */
export async function readThroughPrimaryRows(
  reader: StatementReader,
  cells: readonly CellThroughRow[],
): Promise<(Row | undefined)[]> {
  const found = new Array<Row | undefined>(cells.length).fill(undefined);
  if (cells.length === 0) return found;
  const [rows = []] = (await reader.read([latestThroughPrimaryRows(cells)])) as Row[][];
  for (const row of rows) found[Number(row.part)] = row;
  return found;
}
