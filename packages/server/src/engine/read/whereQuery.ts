// Where: one index shard, typed conditions, keyset pages, and the cells of each page read with
// one SELECT per partition.
//
// A point query (every field of the primary index given with =, the first page) whose values
// the primary-key cache knows is answered with one statement instead of two round trips: the
// primary-index row and the record's cells, joined on the record remembered
// (latestCells.readThrough), so that the cells come back only if the row still leads to that
// record; no row answers an empty page, and a row leading elsewhere runs the query as any other.
import type { CallScope } from '../base/callScope.js';
import { createHash } from 'node:crypto';
import { AnswerTooLargeError, InvalidArgumentError, NotFoundError } from '../base/errors.js';
import { exactInteger } from '../base/exactInteger.js';
import { toIndexScalar } from '../model/indexValues.js';
import type { StoreLayout } from '../model/layout.js';
import { BASE_CELL, type CompiledModel, type IndexSpec } from '../model/model.js';
import type { ModelRegistry } from '../schema/modelRegistry.js';
import type { Row } from '../mysql/mysqlPool.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { ANSWER_BYTES_PER_CELL, type AnswerBound, type LatestCells } from './latestCells.js';
import type { PrimaryKeyCache } from './primaryKeyCache.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';
import {
  type IndexCondition,
  type Operator,
  type PrimaryLookup,
  primaryKeyOf,
  queryIndex,
} from '../mysql/sql/indexTable.js';
import type { IndexScalar } from '../model/model.js';
import { PRIMARY_INDEX } from '../model/tableNames.js';
import type { QueryLimits } from '../base/limits.js';
import { requireLimit } from '../base/requestFields.js';

export interface WhereCondition {
  field: string;
  op: Operator | 'unspecified';
  values: readonly IndexScalar[];
}

export interface WhereInput {
  model: string;
  index: string;
  conditions: readonly WhereCondition[];
  cells: readonly string[];
  descending: boolean;
  limit: number;
  pageToken: string;
}

export interface FoundRecord {
  uuid: string;
  cells: StoredCell[];
}

export interface WherePage {
  records: FoundRecord[];
  nextPageToken: string;
}

/** What a page takes in an answer: its cells' bodies, and ANSWER_BYTES_PER_CELL for the rest. */
export function pageAnswerBytes(page: WherePage): number {
  let bytes = 0;
  for (const record of page.records) {
    for (const cell of record.cells) bytes += ANSWER_BYTES_PER_CELL + cell.body.length;
  }
  return bytes;
}

export const DEFAULT_WHERE_LIMIT = 1000;
/** How many values each operator takes; IN's most is a setting (QueryLimits.maxInValues). */
const ARITY: Record<Operator, [number, number | 'maxInValues']> = {
  eq: [1, 1],
  ne: [1, 1],
  lt: [1, 1],
  le: [1, 1],
  gt: [1, 1],
  ge: [1, 1],
  in: [1, 'maxInValues'],
  between: [2, 2],
};

export class WhereQuery {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly models: ModelRegistry,
    private readonly latest: LatestCells,
    private readonly limits: QueryLimits,
    private readonly known: PrimaryKeyCache,
  ) {}

  /**
   * One page of matching records, in index order. With a bound, a page whose cells would take
   * more bytes ends earlier, its token going on from there (a record that alone exceeds it is
   * refused: RESOURCE_EXHAUSTED); the bodies of a page over the bound are never held. The
   * reads serve the call of `scope`.
   */
  async page(scope: CallScope, input: WhereInput, bound?: AnswerBound): Promise<WherePage> {
    let model = await this.models.get(input.model, scope);
    const indexName = input.index || PRIMARY_INDEX;
    const index = model.indices.get(indexName);
    if (!index) {
      throw new NotFoundError(
        `model ${model.name} has no index ${JSON.stringify(indexName)}; its indices are ${[...model.indices.keys()].join(', ')}`,
      );
    }
    const cells = cellsAskedFor(input.cells);
    for (const cell of cells) model = await this.models.requireCell(model, cell, scope);
    const limit = requireLimit(
      input.limit,
      'limit',
      Math.min(DEFAULT_WHERE_LIMIT, this.limits.maxPageRecords),
      this.limits.maxPageRecords,
    );
    const { conditions, shardValue } = validateConditions(index, input.conditions, this.limits);
    // A hash: worked out only for a page token, which most queries neither bring nor get.
    let memo: string | undefined;
    const fingerprint = () => (memo ??= queryFingerprint(input, indexName));
    const after = input.pageToken
      ? decodePageToken(input.pageToken, fingerprint(), index)
      : undefined;

    const shard = this.layout.findShard(shardValue);
    const table = this.layout.indexTable(model, indexName, shard);
    const point =
      indexName === PRIMARY_INDEX && after === undefined
        ? pointOf(index, table, conditions)
        : undefined;
    if (point) {
      const known = await this.knownPoint(scope, model, point, shard, cells, bound);
      if (known) return known;
    }
    const rows = await this.partitions.forShard(shard).read(scope, (reader) =>
      queryIndex(reader, table, index, {
        conditions,
        descending: input.descending,
        limit: limit + 1,
        after,
      }),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const nextPageToken =
      rows.length > limit && last ? encodePageToken(fingerprint(), keyOf(index, last)) : '';
    const uuids = page.map((row) => String(row.uuid));
    if (point && uuids.length === 1 && this.layout.contentBeside(uuids[0]!, shard)) {
      this.known.set(primaryKeyOf(point), uuids[0]!);
    }
    // Halved until its cells fit the bound: each try reads only the lengths of the bodies that
    // do not fit their share, so a page over the bound costs a round trip per halving.
    for (let kept = uuids.length; ; kept = Math.ceil(kept / 2)) {
      try {
        const cellsByUuid = await this.readCells(scope, model, uuids.slice(0, kept), cells, bound);
        return {
          records: uuids
            .slice(0, kept)
            .map((uuid) => ({ uuid, cells: cellsByUuid.get(uuid) ?? [] })),
          nextPageToken:
            kept < uuids.length
              ? encodePageToken(fingerprint(), keyOf(index, page[kept - 1]!))
              : nextPageToken,
        };
      } catch (error) {
        if (!(error instanceof AnswerTooLargeError) || kept === 1) throw error;
      }
    }
  }

  /**
   * The page of a point query whose record the cache knows, read with the primary-index row in
   * one statement; undefined when the cache does not know it, the row leads to another record,
   * or the two cannot be read together.
   */
  private async knownPoint(
    scope: CallScope,
    model: CompiledModel,
    point: PrimaryLookup,
    shard: number,
    cells: readonly string[],
    bound: AnswerBound | undefined,
  ): Promise<WherePage | undefined> {
    const key = primaryKeyOf(point);
    const uuid = this.known.get(key);
    if (uuid === undefined) return undefined;
    const read = await this.latest.readThrough(
      scope,
      model,
      { lookup: point, indexShard: shard, uuid },
      cells,
      bound,
    );
    if (read === undefined) return undefined;
    if (read.holder !== uuid) {
      this.known.delete(key);
      // No row holds the values: no record matches, as the query would find.
      return read.holder === undefined ? { records: [], nextPageToken: '' } : undefined;
    }
    return {
      records: [{ uuid, cells: read.cells.filter((cell) => cell !== undefined) }],
      nextPageToken: '',
    };
  }

  /** The latest version of the cells asked for of each record, in the order asked for. */
  private async readCells(
    scope: CallScope,
    model: CompiledModel,
    uuids: readonly string[],
    cells: readonly string[],
    bound: AnswerBound | undefined,
  ): Promise<Map<string, StoredCell[]>> {
    const keys = uuids.flatMap((uuid) => cells.map((cell) => ({ uuid, cell })));
    const found = await this.latest.read(scope, model, keys, bound);
    // Each record's cells lie together in the answer, in the order asked for.
    return new Map(
      uuids.map((uuid, r) => [
        uuid,
        found.slice(r * cells.length, (r + 1) * cells.length).filter((cell) => cell !== undefined),
      ]),
    );
  }
}

/** What a query reads of each record when it names no cell. */
const BASE_ONLY: readonly string[] = [BASE_CELL];

/**
 * The cells a query reads of each record, each once, in the order named: base when none is
 * named, and for an empty name, as GetCell's empty `cell` is.
 */
function cellsAskedFor(names: readonly string[]): readonly string[] {
  if (names.length === 0) return BASE_ONLY;
  const cells = new Set<string>();
  for (const name of names) cells.add(name || BASE_CELL);
  return [...cells];
}

/**
 * The primary-index row a query names when it gives every field of the index once, with =:
 * at most one record matches.
 */
function pointOf(
  index: IndexSpec,
  table: string,
  conditions: readonly IndexCondition[],
): PrimaryLookup | undefined {
  if (conditions.length !== index.fields.length) return undefined;
  const values: IndexScalar[] = [];
  for (const field of index.fields) {
    const matching = conditions.filter((condition) => condition.field === field.name);
    if (matching.length !== 1 || matching[0]!.op !== 'eq') return undefined;
    values.push(matching[0]!.values[0]!);
  }
  return { table, index, values };
}

function validateConditions(
  index: IndexSpec,
  input: readonly WhereCondition[],
  limits: QueryLimits,
) {
  if (input.length > limits.maxConditions) {
    throw new InvalidArgumentError(
      'conditions',
      `at most ${limits.maxConditions} conditions per query, got ${input.length}`,
    );
  }
  let shardValue: number | bigint | undefined;
  const conditions: IndexCondition[] = input.map((condition, i) => {
    const path = `conditions[${i}]`;
    const field = index.fields.find((f) => f.name === condition.field);
    if (!field) {
      throw new InvalidArgumentError(
        `${path}.field`,
        `${JSON.stringify(condition.field)} is not a field of index ${index.name} (${index.fields.map((f) => f.name).join(', ')})`,
      );
    }
    if (condition.op === 'unspecified') {
      throw new InvalidArgumentError(
        `${path}.op`,
        'must be one of OPERATOR_EQ, NE, LT, LE, GT, GE, IN or BETWEEN',
      );
    }
    const [min, most] = ARITY[condition.op];
    const max = most === 'maxInValues' ? limits.maxInValues : most;
    if (condition.values.length < min || condition.values.length > max) {
      throw new InvalidArgumentError(
        `${path}.values`,
        min === max
          ? `${condition.op} takes ${min} value${min > 1 ? 's' : ''}, got ${condition.values.length}`
          : `${condition.op} takes ${min} to ${max} values, got ${condition.values.length}`,
      );
    }
    const values = condition.values.map((value) => toIndexScalar(field, value, `${path}.values`));
    if (field.name === index.shardOn && condition.op === 'eq') {
      if (shardValue !== undefined) {
        throw new InvalidArgumentError(path, `${field.name} has more than one = condition`);
      }
      shardValue = values[0] as number | bigint;
    }
    return { field: field.name, op: condition.op, values };
  });
  if (shardValue === undefined) {
    throw new InvalidArgumentError(
      'conditions',
      `a condition ${index.shardOn} = <integer> is required: it picks the shard of index ${index.name}`,
    );
  }
  return { conditions, shardValue };
}

function queryFingerprint(input: WhereInput, index: string): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        input.model,
        index,
        input.descending,
        input.conditions.map((c) => [c.field, c.op, c.values.map(String)]),
      ]),
    )
    .digest('base64url')
    .slice(0, 12);
}

/**
 * An index row's sort key: its field values, then its uuid. mysql2 reads a BIGINT past 2^53
 * as a decimal string; it must go back to MySQL as an integer, since MySQL compares a BIGINT
 * with a string as two doubles.
 */
function keyOf(index: IndexSpec, row: Row): IndexScalar[] {
  return [
    ...index.fields.map((field) =>
      field.type === 'integer'
        ? exactInteger(row[field.name] as number | string)
        : String(row[field.name]),
    ),
    String(row.uuid),
  ];
}

/** JSON cannot hold a bigint: one is written as its decimal digits followed by `n`. */
function encodePageToken(fingerprint: string, key: readonly IndexScalar[]): string {
  const values = key.map((value) => (typeof value === 'bigint' ? `${value}n` : value));
  return Buffer.from(JSON.stringify([fingerprint, values])).toString('base64url');
}

const BIGINT_IN_TOKEN = /^-?[0-9]+n$/;

function decodePageToken(token: string, fingerprint: string, index: IndexSpec): IndexScalar[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidArgumentError('page_token', 'is not a token returned by Where');
  }
  const fields = [...index.fields.map((f) => f.type), 'string'];
  if (
    !Array.isArray(parsed) ||
    parsed[0] !== fingerprint ||
    !Array.isArray(parsed[1]) ||
    parsed[1].length !== fields.length
  ) {
    throw new InvalidArgumentError(
      'page_token',
      'does not belong to this query (model, index, conditions and order must stay the same)',
    );
  }
  return (parsed[1] as unknown[]).map((value, i) => {
    if (fields[i] !== 'integer' && typeof value === 'string') return value;
    if (fields[i] === 'integer' && Number.isSafeInteger(value)) return value as number;
    if (fields[i] === 'integer' && typeof value === 'string' && BIGINT_IN_TOKEN.test(value)) {
      return exactInteger(value.slice(0, -1));
    }
    throw new InvalidArgumentError('page_token', 'is not a token returned by Where');
  });
}
