// A schema checked at run time (for callers without the compile-time checks) and compiled into
// what the model layer looks up: indices in order, cells, the index of each field, and the
// wire definition DefineModel sends.

import { FieldType as WireFieldType, type ModelDefinition } from '@shameless/proto';
import { InvalidArgumentError } from '../transport/index.js';
import { ReadonlyFieldError } from './errors.js';
import {
  BASE_CELL,
  PRIMARY_INDEX,
  type FieldType,
  type IndexSchema,
  type ModelSchema,
} from './schema.js';

/** A schema in the form the model layer uses. */
export interface CompiledSchema {
  readonly name: string;
  /** Every index, primary first, then secondary indices in declared order. */
  readonly indices: ReadonlyMap<string, IndexSchema>;
  /** `base`, then the declared cells. */
  readonly cells: readonly string[];
  /** Each index field -> the first index that holds it (primary first). */
  readonly indexOfField: ReadonlyMap<string, string>;
  /** The fields of type `'integer'` of every index. */
  readonly integerFields: ReadonlySet<string>;
  /** The definition sent with DefineModel. */
  readonly definition: ModelDefinition;
}

const WIRE_TYPES: Readonly<Record<FieldType, WireFieldType>> = {
  integer: WireFieldType.FIELD_TYPE_INTEGER,
  string: WireFieldType.FIELD_TYPE_STRING,
};

/** Checks a schema and compiles it; throws an InvalidArgumentError naming what is wrong. */
export function compileSchema(schema: ModelSchema): CompiledSchema {
  const model = schema.name;
  if (typeof model !== 'string' || model === '') {
    throw new InvalidArgumentError('a model needs a name');
  }
  const indices = new Map<string, IndexSchema>([[PRIMARY_INDEX, schema.primary]]);
  for (const [name, index] of Object.entries(schema.indices ?? {})) {
    if (name === PRIMARY_INDEX) {
      throw new InvalidArgumentError(
        `model ${model}: "${PRIMARY_INDEX}" is the primary index; name secondary indices otherwise`,
      );
    }
    indices.set(name, index);
  }
  const indexOfField = new Map<string, string>();
  const integerFields = new Set<string>();
  for (const [name, index] of indices) {
    checkIndex(model, name, index);
    for (const [field, type] of Object.entries(index.fields)) {
      if (!indexOfField.has(field)) indexOfField.set(field, name);
      if (type === 'integer') integerFields.add(field);
    }
  }
  const cells = [BASE_CELL];
  for (const cell of schema.cells ?? []) {
    if (typeof cell !== 'string' || cell === '') {
      throw new InvalidArgumentError(`model ${model}: cell names must be non-empty strings`);
    }
    if (!cells.includes(cell)) cells.push(cell);
  }

  const wireIndex = (name: string, index: IndexSchema) => ({
    name,
    fields: Object.entries(index.fields).map(([field, type]) => ({
      name: field,
      type: WIRE_TYPES[type],
    })),
    shardOn: index.shardOn,
  });
  const definition: ModelDefinition = {
    name: model,
    primaryIndex: wireIndex(PRIMARY_INDEX, schema.primary),
    secondaryIndices: [...indices]
      .filter(([name]) => name !== PRIMARY_INDEX)
      .map(([name, index]) => wireIndex(name, index)),
    cells: cells.filter((cell) => cell !== BASE_CELL),
  };
  return { name: model, indices, cells, indexOfField, integerFields, definition };
}

function checkIndex(model: string, name: string, index: IndexSchema | undefined): void {
  const where = `model ${model}, index ${name}`;
  if (index === undefined || typeof index.fields !== 'object' || index.fields === null) {
    throw new InvalidArgumentError(`${where}: fields are required`);
  }
  const fields = Object.entries(index.fields);
  if (fields.length === 0) throw new InvalidArgumentError(`${where}: needs at least one field`);
  for (const [field, type] of fields) {
    if (!Object.hasOwn(WIRE_TYPES, type)) {
      throw new InvalidArgumentError(
        `${where}: field ${field} has type ${String(type)}; use 'integer' or 'string'`,
      );
    }
  }
  if (index.fields[index.shardOn] !== 'integer') {
    throw new InvalidArgumentError(
      `${where}: shardOn must name one of its integer fields, got ${String(index.shardOn)}`,
    );
  }
}

/**
 * Throws a {@link ReadonlyFieldError} for the first of `keys` that is a field of an index:
 * index values never change, so no write may carry one (the server would refuse it too).
 */
export function refuseIndexFields(schema: CompiledSchema, keys: Iterable<string>): void {
  for (const key of keys) {
    const index = schema.indexOfField.get(key);
    if (index !== undefined) throw new ReadonlyFieldError(schema.name, key, index);
  }
}
