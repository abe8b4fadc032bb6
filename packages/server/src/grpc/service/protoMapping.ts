// Proto messages to engine types and back. Nothing here decides anything.
import {
  type Cell,
  FieldType,
  type IndexDefinition,
  type IndexValue,
  type ModelDefinition,
  Operator,
  type PutRequest,
  type PutResponse,
  type PutResult,
  type Record as ProtoRecord,
  SortOrder,
  type WhereRequest,
  type WriteCellRequest,
  type WriteCellResponse,
  type WriteCellResult,
  WriteMode,
} from '@shameless/proto';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import { type ExactInteger, exactInteger } from '../../engine/base/exactInteger.js';
import type { FoundRecord, WhereInput } from '../../engine/read/whereQuery.js';
import type {
  AppendOutcome,
  FieldType as EngineFieldType,
  IndexScalar,
  IndexSpec,
  ModelSpec,
  Operator as EngineOperator,
  PutOutcome,
  StoredCell,
  WriteCellInput,
} from '../../engine/index.js';
import { statusOf } from '../call/statusMapping.js';

/** An id or cursor for the wire, where every 64-bit integer is a bigint. */
export function toWireInteger(value: ExactInteger): bigint {
  return BigInt(value);
}

/** A per-shard cursor map (Each, Heartbeat) for the wire. */
export function toWireCursors(cursors: ReadonlyMap<number, ExactInteger>): {
  [shard: number]: bigint;
} {
  const wire: { [shard: number]: bigint } = {};
  for (const [shard, cursor] of cursors) wire[shard] = BigInt(cursor);
  return wire;
}

/** A per-shard cursor map from the wire. */
export function fromWireCursors(cursors: { [shard: number]: bigint }): Map<number, ExactInteger> {
  return new Map(
    Object.entries(cursors).map(([shard, cursor]) => [Number(shard), exactInteger(cursor)]),
  );
}

export function toCell(cell: StoredCell): Cell {
  return cellWithBody(cell, cell.body);
}

/** The version on the wire, carrying `body` as its body. */
function cellWithBody(cell: StoredCell, body: Buffer): Cell {
  return {
    id: toWireInteger(cell.id),
    shard: cell.shard,
    uuid: cell.uuid,
    name: cell.name,
    refKey: cell.refKey,
    createdAt: cell.createdAt,
    body,
  };
}

const EMPTY_BODY = Buffer.alloc(0);

/**
 * A version a write made, without its body when the writer asked for that and sent these very
 * bytes: it has them already, and a body sent back costs both sides as much as the one sent.
 */
function toWrittenCell(
  cell: StoredCell,
  request: { readonly omitBodyAsSent?: boolean | undefined },
  sent: Buffer,
): { cell: Cell; bodyOmitted: boolean } {
  const bodyOmitted = request.omitBodyAsSent === true && sent.equals(cell.body);
  return { cell: cellWithBody(cell, bodyOmitted ? EMPTY_BODY : cell.body), bodyOmitted };
}

export function toRecord(record: FoundRecord): ProtoRecord {
  return { uuid: record.uuid, cells: record.cells.map(toCell) };
}

/** A WriteCell request, or one write of WriteCells at `position` (`writes[3]`). */
export function toWriteCellInput(request: WriteCellRequest, position?: string): WriteCellInput {
  if (
    request.mode !== WriteMode.WRITE_MODE_REPLACE &&
    request.mode !== WriteMode.WRITE_MODE_MERGE
  ) {
    throw new InvalidArgumentError(
      position === undefined ? 'mode' : `${position}.mode`,
      `must be WRITE_MODE_REPLACE or WRITE_MODE_MERGE, got ${request.mode}`,
    );
  }
  return {
    model: request.model,
    uuid: request.uuid,
    cell: request.cell,
    body: request.body,
    mode: request.mode === WriteMode.WRITE_MODE_MERGE ? 'merge' : 'replace',
    expectedRefKey: request.expectedRefKey,
    requestId: request.requestId,
  };
}

export function toWriteCellResponse(
  written: { readonly cell: StoredCell; readonly replayed: boolean },
  request: WriteCellRequest,
): WriteCellResponse {
  const { cell, bodyOmitted } = toWrittenCell(written.cell, request, request.body);
  return { cell, replayed: written.replayed, bodyOmitted };
}

/** One write's outcome; a refused write carries the status its WriteCell would have failed with. */
export function toWriteCellResult(
  outcome: AppendOutcome,
  request: WriteCellRequest,
): WriteCellResult {
  return outcome.ok
    ? { outcome: { $case: 'written', written: toWriteCellResponse(outcome, request) } }
    : {
        outcome: {
          $case: 'error',
          error: { code: statusOf(outcome.error), message: outcome.error.message },
        },
      };
}

function toFieldType(type: FieldType, path: string): EngineFieldType {
  if (type === FieldType.FIELD_TYPE_INTEGER) return 'integer';
  if (type === FieldType.FIELD_TYPE_STRING) return 'string';
  throw new InvalidArgumentError(path, 'must be FIELD_TYPE_INTEGER or FIELD_TYPE_STRING');
}

function toIndexSpec(index: IndexDefinition, path: string): IndexSpec {
  return {
    name: index.name,
    fields: index.fields.map((field, i) => ({
      name: field.name,
      type: toFieldType(field.type, `${path}.fields[${i}].type`),
    })),
    shardOn: index.shardOn,
  };
}

export function toModelSpec(model: ModelDefinition | undefined): ModelSpec {
  if (!model) throw new InvalidArgumentError('model', 'is required');
  if (!model.primaryIndex) throw new InvalidArgumentError('model.primary_index', 'is required');
  return {
    name: model.name,
    primaryIndex: toIndexSpec(model.primaryIndex, 'model.primary_index'),
    secondaryIndices: model.secondaryIndices.map((index, i) =>
      toIndexSpec(index, `model.secondary_indices[${i}]`),
    ),
    cells: model.cells,
  };
}

function fromIndexSpec(index: IndexSpec): IndexDefinition {
  return {
    name: index.name,
    fields: index.fields.map((field) => ({
      name: field.name,
      type: field.type === 'integer' ? FieldType.FIELD_TYPE_INTEGER : FieldType.FIELD_TYPE_STRING,
    })),
    shardOn: index.shardOn,
  };
}

export function toModelDefinition(spec: ModelSpec): ModelDefinition {
  return {
    name: spec.name,
    primaryIndex: fromIndexSpec(spec.primaryIndex),
    secondaryIndices: spec.secondaryIndices.map(fromIndexSpec),
    cells: [...spec.cells],
  };
}

const OPERATORS: Partial<Record<Operator, EngineOperator>> = {
  [Operator.OPERATOR_EQ]: 'eq',
  [Operator.OPERATOR_NE]: 'ne',
  [Operator.OPERATOR_LT]: 'lt',
  [Operator.OPERATOR_LE]: 'le',
  [Operator.OPERATOR_GT]: 'gt',
  [Operator.OPERATOR_GE]: 'ge',
  [Operator.OPERATOR_IN]: 'in',
  [Operator.OPERATOR_BETWEEN]: 'between',
};

/** The engine's operator; 'unspecified' for 0 or a value this server does not know. */
export function toOperator(op: Operator): EngineOperator | 'unspecified' {
  return OPERATORS[op] ?? 'unspecified';
}

/** A Where request, or one query of WhereMany at `position` (`queries[2]`). */
export function toWhereInput(request: WhereRequest, position?: string): WhereInput {
  const field = (name: string) => (position === undefined ? name : `${position}.${name}`);
  return {
    model: request.model,
    index: request.index,
    conditions: request.conditions.map((condition, i) => ({
      field: condition.field,
      op: toOperator(condition.op),
      values: condition.values.map((value, j) =>
        toScalar(value, field(`conditions[${i}].values[${j}]`)),
      ),
    })),
    cells: request.cells,
    descending: toDescending(request.order, field('order')),
    limit: request.limit,
    pageToken: request.pageToken,
  };
}

function toDescending(order: SortOrder, path: string): boolean {
  if (order === SortOrder.SORT_ORDER_ASC) return false;
  if (order === SortOrder.SORT_ORDER_DESC) return true;
  throw new InvalidArgumentError(path, `must be SORT_ORDER_ASC or SORT_ORDER_DESC, got ${order}`);
}

export function toPutResponse(
  put: { readonly uuid: string; readonly base: StoredCell; readonly created: boolean },
  request: PutRequest,
): PutResponse {
  const { cell, bodyOmitted } = toWrittenCell(put.base, request, request.values);
  return { uuid: put.uuid, base: cell, created: put.created, bodyOmitted };
}

/** One put's outcome; a refused put carries the status a Put would have failed with. */
export function toPutResult(outcome: PutOutcome, request: PutRequest): PutResult {
  return outcome.ok
    ? { outcome: { $case: 'put', put: toPutResponse(outcome, request) } }
    : {
        outcome: {
          $case: 'error',
          error: { code: statusOf(outcome.error), message: outcome.error.message },
        },
      };
}

/** Untyped on purpose: the engine checks each value against its field's type. */
export function toScalar(value: IndexValue, path: string): IndexScalar {
  switch (value.kind?.$case) {
    case 'integer':
      return exactInteger(value.kind.integer);
    case 'string':
      return value.kind.string;
    default:
      throw new InvalidArgumentError(path, 'each value must set integer or string');
  }
}
