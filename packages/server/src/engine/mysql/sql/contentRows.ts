// Content-table rows (`<ns>_<model>_<NNNNNN>`) as the engine sees them, and the pieces of SQL
// that reads and writes share. Table names reaching the SQL modules were built by
// tableNames.ts from validated identifiers; values are always placeholders.
import { type RowId, exactInteger } from '../../base/exactInteger.js';
import type { CreatedAtKind } from '../../model/layout.js';
import type { Row } from '../mysqlPool.js';

/** One row of a content table, with the shard it was read from. */
export interface StoredCell {
  id: RowId;
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

export const CELL_COLUMNS = '`id`, `uuid`, `column_name`, `ref_key`, `body`, `created_at`';
export const INSERT_COLUMNS =
  '`uuid`, `column_name`, `ref_key`, `body`, `created_at`, `request_id`';

export function toStoredCell(row: Row, shard: number): StoredCell {
  return {
    id: exactInteger(row.id as number | string),
    shard,
    uuid: String(row.uuid),
    name: String(row.column_name),
    refKey: Number(row.ref_key),
    createdAt: toDate(row.created_at),
    body: row.body instanceof Buffer ? row.body : Buffer.alloc(0),
  };
}

/**
 * The value a write stores in `created_at`: the one place where a time becomes the column's
 * value. For BIGINT it is what the gem's Cell#save stores, `(Time.now.to_f * 1000).to_i`.
 */
export function createdAtColumnValue(at: Date, kind: CreatedAtKind): Date | number {
  return kind === 'bigint' ? at.getTime() : at;
}

/** A `created_at` as read: a DATETIME arrives as a Date, a BIGINT as milliseconds. */
export function toDate(value: unknown): Date {
  if (value instanceof Date) return value;
  // mysql2 (supportBigNumbers) answers a BIGINT as a number while it is exact, else a string.
  if (typeof value === 'number' || typeof value === 'string') return new Date(Number(value));
  return new Date(0);
}
