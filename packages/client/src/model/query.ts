// A `where`: pages of one index shard, each read whole (Where streams a page over several
// messages) before its records are handed out, then the next page from its page token.

import {
  Operator,
  SortOrder,
  type Cell as WireCell,
  type Condition as WireCondition,
  type WhereRequest,
} from '@shameless/proto';
import { readCall, type CallOptions } from './callOptions.js';
import type { CompiledSchema } from './definition.js';
import type { ModelPort } from './modelPort.js';
import type { RecordOf } from './record.js';
import { BASE_CELL, type CellName, type ModelSchema, PRIMARY_INDEX } from './schema.js';

/** Options of a `where`. */
export interface WhereOptions<S extends ModelSchema> extends CallOptions {
  /** Index order (its fields in declared order, then uuid): `'asc'` (default) or `'desc'`. */
  readonly order?: 'asc' | 'desc';
  /** At most this many records in all. Default: every match. */
  readonly limit?: number;
  /**
   * Records fetched per call (one Where per page): 1 to 10000, default 1000. A query naming
   * every field of the primary index with `=` matches one record at most, and asks for one.
   */
  readonly pageSize?: number;
  /**
   * The cells to read with each record (in the same calls, one SELECT per partition);
   * the others are read on demand. Default `['base']`.
   */
  readonly cells?: readonly CellName<S>[];
}

const MAX_PAGE_SIZE = 10_000;
const DEFAULT_PAGE_SIZE = 1000;

/**
 * The records matching a `where`, in index order: iterate it with `for await`, or take them
 * with {@link Query.toArray} or {@link Query.first}. Nothing is sent until then; each page
 * is one Where call (`deadlineMs` and `signal` apply per page). Records come with the base
 * cell (or the `cells` asked for) read.
 */
export class Query<S extends ModelSchema> implements AsyncIterable<RecordOf<S>> {
  readonly #context: ModelPort<S>;
  readonly #index: string;
  readonly #conditions: readonly WireCondition[];
  readonly #options: WhereOptions<S>;

  /** @internal Made by `Model.where` and `ModelIndex.where`. */
  constructor(
    context: ModelPort<S>,
    index: string,
    conditions: readonly WireCondition[],
    options: WhereOptions<S>,
  ) {
    const { limit, pageSize } = options;
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
      throw new RangeError(`limit must be an integer >= 0, got ${limit}`);
    }
    if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize >= 1)) {
      throw new RangeError(`pageSize must be an integer >= 1, got ${pageSize}`);
    }
    this.#context = context;
    this.#index = index;
    this.#conditions = conditions;
    this.#options = options;
  }

  /** Every matching record (up to `limit`). */
  async toArray(): Promise<RecordOf<S>[]> {
    const records: RecordOf<S>[] = [];
    for await (const record of this) records.push(record);
    return records;
  }

  /** The first matching record, or undefined (fetches one record). */
  async first(): Promise<RecordOf<S> | undefined> {
    const query = new Query(this.#context, this.#index, this.#conditions, {
      ...this.#options,
      limit: 1,
    });
    for await (const record of query) return record;
    return undefined;
  }

  /** Iterates the matching records, sending one Where per page as the loop asks for more. */
  async *[Symbol.asyncIterator](): AsyncIterator<RecordOf<S>> {
    const { transport, schema } = this.#context;
    const { order, limit, deadlineMs, signal, consistency } = this.#options;
    const cells: string[] = [...(this.#options.cells ?? [BASE_CELL])];
    // A page never holds more than the query can match: one record for a point query, so that
    // such queries made together travel as one WhereMany (which bounds the records its queries
    // ask for in all).
    const pageSize = namesOneRecord(schema, this.#index, this.#conditions)
      ? 1
      : Math.min(this.#options.pageSize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    let pageToken = '';
    while (remaining > 0) {
      const request: WhereRequest = {
        model: schema.name,
        index: this.#index,
        conditions: [...this.#conditions],
        cells,
        order: order === 'desc' ? SortOrder.SORT_ORDER_DESC : SortOrder.SORT_ORDER_ASC,
        limit: Math.min(pageSize, remaining),
        pageToken,
      };
      // The whole page is read before it is handed out, so the time the consumer spends on
      // records never counts against the call's deadline, and a page cut off midway (its
      // server went away) is read again, like any read.
      const page: RecordOf<S>[] = [];
      let nextPageToken = '';
      for (const message of await transport.collect(
        'where',
        request,
        readCall({ deadlineMs, signal, consistency }),
      )) {
        for (const found of message.records) {
          const known = new Map<string, WireCell | null>(cells.map((name) => [name, null]));
          for (const cell of found.cells) known.set(cell.name, cell);
          page.push(this.#context.newRecord(found.uuid, known));
        }
        if (message.nextPageToken !== '') nextPageToken = message.nextPageToken;
      }
      for (const record of page.slice(0, remaining)) {
        remaining--;
        yield record;
      }
      if (nextPageToken === '') return;
      pageToken = nextPageToken;
    }
  }
}

/** Whether the conditions give every field of the primary index once, with `=`: one record at most. */
function namesOneRecord(
  schema: CompiledSchema,
  index: string,
  conditions: readonly WireCondition[],
): boolean {
  const primary = schema.indices.get(PRIMARY_INDEX);
  if (index !== PRIMARY_INDEX || primary === undefined) return false;
  const fields = Object.keys(primary.fields);
  return (
    conditions.length === fields.length &&
    fields.every((field) => {
      const named = conditions.filter((condition) => condition.field === field);
      return (
        named.length === 1 && named[0]!.op === Operator.OPERATOR_EQ && named[0]!.values.length === 1
      );
    })
  );
}
