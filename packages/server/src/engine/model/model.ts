// Model definitions: what a model is, how it is validated, and what may change about it.
import { InvalidArgumentError } from '../base/errors.js';
import { isIdentifier } from './identifiers.js';
import { PRIMARY_INDEX, contentTableName, indexTableName, tableNameProblem } from './tableNames.js';

export type FieldType = 'integer' | 'string';

/** A value of an index field as it is stored and compared: an integer or a string. */
export type IndexScalar = number | bigint | string;

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
}

export interface IndexSpec {
  readonly name: string;
  readonly fields: readonly FieldSpec[];
  readonly shardOn: string;
}

export interface ModelSpec {
  readonly name: string;
  readonly primaryIndex: IndexSpec;
  readonly secondaryIndices: readonly IndexSpec[];
  /** Declared cells besides `base`, sorted, without duplicates. */
  readonly cells: readonly string[];
}

export const BASE_CELL = 'base';
/** The longest definition (JSON, in bytes) the models table's TEXT column holds. */
export const MODEL_DEFINITION_MAX_BYTES = 65_535;
const CELL_NAME_MAX = 255;
// InnoDB's key limit is 3072 bytes; utf8mb4 VARCHAR(255) takes up to 1020 + 2, BIGINT 8, and
// the uuid column that ends every secondary key 144 + 1.
const KEY_BYTES_MAX = 3072;
const FIELD_KEY_BYTES: Record<FieldType, number> = { integer: 8, string: 1022 };
const UUID_KEY_BYTES = 145;

/** Validates a definition and returns it normalised (primary index named, cells sorted). */
export function normaliseModelSpec(spec: ModelSpec, namespace: string): ModelSpec {
  if (!isIdentifier(spec.name)) {
    throw new InvalidArgumentError(
      'model.name',
      `must be a lowercase identifier ([a-z][a-z0-9_]*, at most 64 characters), got ${JSON.stringify(spec.name)}`,
    );
  }
  const primaryIndex = normaliseIndex(
    { ...spec.primaryIndex, name: PRIMARY_INDEX },
    'model.primary_index',
  );
  const seen = new Set([PRIMARY_INDEX]);
  const secondaryIndices = spec.secondaryIndices.map((index, i) => {
    const path = `model.secondary_indices[${i}]`;
    const normalised = normaliseIndex(index, path);
    if (seen.has(normalised.name)) {
      throw new InvalidArgumentError(`${path}.name`, `index ${normalised.name} is defined twice`);
    }
    seen.add(normalised.name);
    return normalised;
  });
  const typeOf = new Map<string, { type: FieldType; index: string }>();
  for (const index of [primaryIndex, ...secondaryIndices]) {
    for (const field of index.fields) {
      const other = typeOf.get(field.name);
      if (other && other.type !== field.type) {
        throw new InvalidArgumentError(
          'model',
          `field ${field.name} is ${field.type} in index ${index.name} but ${other.type} in index ${other.index}`,
        );
      }
      typeOf.set(field.name, { type: field.type, index: index.name });
    }
  }
  // Checked before base is dropped and the rest sorted, so that the path is the request's.
  spec.cells.forEach((cell, i) => {
    if (!isIdentifier(cell, CELL_NAME_MAX)) {
      throw new InvalidArgumentError(
        `model.cells[${i}]`,
        `must be a lowercase identifier of at most ${CELL_NAME_MAX} characters, got ${JSON.stringify(cell)}`,
      );
    }
  });
  const cells = [...new Set(spec.cells.filter((cell) => cell !== BASE_CELL))].sort();
  const normalised = { name: spec.name, primaryIndex, secondaryIndices, cells };
  // The longest shard number makes the longest table names. A secondary index's table is
  // named on its index's name, the one to shorten when the model's name is fine.
  for (const [path, table] of [
    ['model.name', contentTableName(namespace, spec.name, 999_999)],
    ['model.name', indexTableName(namespace, spec.name, PRIMARY_INDEX, 999_999)],
    ...secondaryIndices.map((index, i) => [
      `model.secondary_indices[${i}].name`,
      indexTableName(namespace, spec.name, index.name, 999_999),
    ]),
  ] as const) {
    const problem = tableNameProblem(table);
    if (problem) throw new InvalidArgumentError(path, problem);
  }
  requireDefinitionSize(JSON.stringify(normalised));
  return normalised;
}

/**
 * Refuses a definition (as stored: JSON) the models table cannot hold. Checked before any
 * table is made, and again for the union of cells a redefinition stores.
 */
export function requireDefinitionSize(json: string): void {
  const bytes = Buffer.byteLength(json);
  if (bytes > MODEL_DEFINITION_MAX_BYTES) {
    throw new InvalidArgumentError(
      'model.cells',
      `the definition takes ${bytes} bytes as stored (JSON); a model's definition holds at most ${MODEL_DEFINITION_MAX_BYTES}: define fewer or shorter cells`,
    );
  }
}

function normaliseIndex(index: IndexSpec, path: string): IndexSpec {
  if (!isIdentifier(index.name)) {
    throw new InvalidArgumentError(
      `${path}.name`,
      `must be a lowercase identifier, got ${JSON.stringify(index.name)}`,
    );
  }
  if (index.fields.length === 0) {
    throw new InvalidArgumentError(`${path}.fields`, 'an index needs at least one field');
  }
  const names = new Set<string>();
  index.fields.forEach((field, i) => {
    if (!isIdentifier(field.name) || field.name === 'uuid' || field.name === 'id') {
      throw new InvalidArgumentError(
        `${path}.fields[${i}].name`,
        `must be a lowercase identifier other than uuid and id, got ${JSON.stringify(field.name)}`,
      );
    }
    if (field.type !== 'integer' && field.type !== 'string') {
      throw new InvalidArgumentError(`${path}.fields[${i}].type`, 'must be integer or string');
    }
    if (names.has(field.name)) {
      throw new InvalidArgumentError(
        `${path}.fields[${i}].name`,
        `field ${field.name} appears twice`,
      );
    }
    names.add(field.name);
  });
  const shardOn = index.fields.find((field) => field.name === index.shardOn);
  if (!shardOn) {
    throw new InvalidArgumentError(
      `${path}.shard_on`,
      `must name one of the index's fields (${[...names].join(', ')}), got ${JSON.stringify(index.shardOn)}`,
    );
  }
  if (shardOn.type !== 'integer') {
    throw new InvalidArgumentError(
      `${path}.shard_on`,
      `field ${shardOn.name} must be an integer field`,
    );
  }
  const keyBytes =
    index.fields.reduce((sum, field) => sum + FIELD_KEY_BYTES[field.type], 0) + UUID_KEY_BYTES;
  if (keyBytes > KEY_BYTES_MAX) {
    throw new InvalidArgumentError(
      `${path}.fields`,
      `the index key would take up to ${keyBytes} bytes; MySQL allows ${KEY_BYTES_MAX} (use fewer string fields)`,
    );
  }
  return { name: index.name, fields: index.fields.map((f) => ({ ...f })), shardOn: index.shardOn };
}

/**
 * What redefining `stored` as `requested` means: nothing, added cells, or a refusal saying why.
 * A definition listing fewer cells than stored is not a removal but an older client (a rolling
 * deploy): the stored cells stay. Any index change would remap or orphan stored rows.
 */
export function compareDefinitions(
  stored: ModelSpec,
  requested: ModelSpec,
): { change: 'none' | 'adds_cells'; cells: string[] } | { change: 'conflict'; reason: string } {
  const differences = indexDifferences(stored, requested);
  if (differences.length > 0) {
    return {
      change: 'conflict',
      reason:
        `model ${stored.name} is already defined with other indices: ${differences.join('; ')}; ` +
        'only cells may be added, so define the new shape under another model name (or namespace)',
    };
  }
  const cells = [...new Set([...stored.cells, ...requested.cells])].sort();
  return { change: cells.length > stored.cells.length ? 'adds_cells' : 'none', cells };
}

/** Each index that the requested definition drops, adds or changes, with both shapes. */
function indexDifferences(stored: ModelSpec, requested: ModelSpec): string[] {
  const byName = (spec: ModelSpec) =>
    new Map([spec.primaryIndex, ...spec.secondaryIndices].map((index) => [index.name, index]));
  const before = byName(stored);
  const after = byName(requested);
  const differences: string[] = [];
  for (const [name, index] of before) {
    const other = after.get(name);
    if (!other) {
      differences.push(`stored index ${name} ${describeIndex(index)} is not in the request`);
    } else if (describeIndex(other) !== describeIndex(index)) {
      differences.push(
        `index ${name} is stored as ${describeIndex(index)}, requested as ${describeIndex(other)}`,
      );
    }
  }
  for (const [name, index] of after) {
    if (!before.has(name))
      differences.push(`the request adds index ${name} ${describeIndex(index)}`);
  }
  return differences;
}

/** An index's shape as a message shows it: `(hotel_id integer, room_type string; shard_on hotel_id)`. */
function describeIndex(index: IndexSpec): string {
  const fields = index.fields.map((field) => `${field.name} ${field.type}`).join(', ');
  return `(${fields}; shard_on ${index.shardOn})`;
}

/** A model with everything the engine looks up on each request precomputed. */
export class CompiledModel {
  readonly indices: ReadonlyMap<string, IndexSpec>;
  /** Every index field, with the first index (primary first) that holds it. */
  readonly indexOfField: ReadonlyMap<string, { index: string; type: FieldType }>;
  /** The fields of secondary indices that the primary index lacks, each once. */
  readonly secondaryFields: readonly FieldSpec[];
  readonly cellNames: ReadonlySet<string>;

  constructor(readonly spec: ModelSpec) {
    const all = [spec.primaryIndex, ...spec.secondaryIndices];
    this.indices = new Map(all.map((index) => [index.name, index]));
    const owners = new Map<string, { index: string; type: FieldType }>();
    const secondaryFields: FieldSpec[] = [];
    for (const index of all) {
      for (const field of index.fields) {
        if (owners.has(field.name)) continue;
        owners.set(field.name, { index: index.name, type: field.type });
        if (index !== spec.primaryIndex) secondaryFields.push(field);
      }
    }
    this.indexOfField = owners;
    this.secondaryFields = secondaryFields;
    this.cellNames = new Set([BASE_CELL, ...spec.cells]);
  }

  get name(): string {
    return this.spec.name;
  }

  get primaryIndex(): IndexSpec {
    return this.spec.primaryIndex;
  }
}
