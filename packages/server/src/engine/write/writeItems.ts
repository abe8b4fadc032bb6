// What the write path is asked to do, item by item, and what it answers for each. Every content
// row is written as one of these items, by one shard transaction (shardTransaction.ts) that
// many items share.
import type { Body } from '../base/body.js';
import {
  AlreadyExistsError,
  type ConflictError,
  type InvalidArgumentError,
  type NotFoundError,
} from '../base/errors.js';
import type { CompiledModel, IndexSpec } from '../model/model.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';
import type { PrimaryLookup } from '../mysql/sql/indexTable.js';
import type { IndexScalar } from '../model/model.js';

/** A merge's result may be no larger than `limit.bytes`; refused naming `limit.field` otherwise. */
export type CellContent =
  | { mode: 'replace'; bytes: Buffer }
  | { mode: 'merge'; patch: Body; limit: { bytes: number; field: string } };

/** A new version of a cell of an existing record. */
export interface AppendRequest {
  readonly model: CompiledModel;
  readonly uuid: string;
  readonly cell: string;
  readonly content: CellContent;
  /** The version the caller last saw (-1: none); refused with a ConflictError otherwise. */
  readonly expectedRefKey?: number;
  readonly requestId: string;
  /**
   * The primary values the caller found the record through (a put's update), in an index table
   * on the record's partition: the transaction reads that row again under the log lock and
   * writes nothing for this append, answering `unreachable`, unless it still leads to `uuid`.
   */
  readonly reachedThrough?: PrimaryLookup;
  /**
   * The body of version 0 when the cell has no version yet: a put's update writes its whole
   * values there, as the gem's update would, for a record its primary-index row leads to but
   * whose base cell is missing (the gem, which writes the row after the cell, never leaves one;
   * a hand-made or restored row can). Without it such an append is refused with NotFoundError.
   */
  readonly firstBody?: Buffer;
}

/** A record's row in one index, as a create writes it. */
export interface IndexRowWrite {
  readonly index: IndexSpec;
  readonly table: string;
  readonly values: readonly IndexScalar[];
  readonly primary: boolean;
}

/**
 * The refusal of a create whose row in a unique index (a secondary index the Ruby gem created)
 * belongs to another record.
 */
export function uniqueIndexCollision(model: string, row: Omit<IndexRowWrite, 'table'>) {
  const values = row.index.fields
    .map((field, i) => {
      const value = row.values[i];
      return `${field.name}=${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
    })
    .join(', ');
  return new AlreadyExistsError(
    `index ${row.index.name} of ${model} already holds ${values} for another record (a unique index created by the Ruby gem)`,
  );
}

/**
 * A new record: base version 0 and its index rows, committed together. Its uuid was drawn so
 * that its content shard lives on the partition of its primary-index row.
 */
export interface CreateRequest {
  readonly model: CompiledModel;
  readonly uuid: string;
  /** Base version 0: the values as sent. */
  readonly body: Buffer;
  readonly requestId: string;
  /** The record's rows in every index that lives on that partition, the primary one first. */
  readonly indexRows: readonly IndexRowWrite[];
}

export type WriteItem = ({ kind: 'append' } & AppendRequest) | ({ kind: 'create' } & CreateRequest);

/** Why an item was refused; nothing was written for it. */
export type RefusalError =
  NotFoundError | ConflictError | AlreadyExistsError | InvalidArgumentError;

export type ItemOutcome =
  /** `replayed`: the request id had been applied before, and `cell` is that earlier version. */
  | { readonly status: 'written'; readonly cell: StoredCell; readonly replayed: boolean }
  | { readonly status: 'refused'; readonly error: RefusalError }
  /** A create whose primary values belong to another record, `owner`: nothing was written. */
  | { readonly status: 'taken'; readonly owner: string }
  /** An append whose `reachedThrough` row no longer leads to its record: nothing was written. */
  | { readonly status: 'unreachable' };

/** What a create can come to. */
export type CreateOutcome = Exclude<ItemOutcome, { readonly status: 'unreachable' }>;

/** An item's body bytes: what it adds to a group's size. */
export function itemBytes(item: WriteItem): number {
  if (item.kind === 'create') return item.body.length;
  return item.content.mode === 'replace'
    ? item.content.bytes.length
    : item.content.patch.bytes.length;
}
