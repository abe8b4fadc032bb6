// Model definition files, for `shameless plan --model <file>` and `shameless define --file`: the JSON of the
// ModelDefinition a DefineModel request carries, as a person writes it by hand. Accepted:
// - the definition itself, or a whole DefineModel request (`{"model": {...}}`);
// - proto JSON names or the .proto's own (`primaryIndex` or `primary_index`, `shardOn` or
//   `shard_on`, `secondaryIndices` or `secondary_indices`);
// - field types "integer" / "string" (as the SDK and the gem write them) or the enum's names
//   ("FIELD_TYPE_INTEGER") and numbers.
// Unknown keys are refused, so that a misspelt one cannot silently drop an index.
import { readFileSync } from 'node:fs';
import { FieldType, ModelDefinition } from '@shameless/proto';
import { InvalidArgumentError } from '../engine/base/errors.js';
import type { ModelSpec } from '../engine/model/model.js';
import { toModelSpec } from '../grpc/service/protoMapping.js';

/** A model file cannot be read as a definition; the message names the file and the key. */
export class ModelFileError extends Error {}

const MODEL_KEYS = [
  'name',
  'primaryIndex',
  'primary_index',
  'secondaryIndices',
  'secondary_indices',
  'cells',
];
const INDEX_KEYS = ['name', 'fields', 'shardOn', 'shard_on'];
const FIELD_KEYS = ['name', 'type'];

const FIELD_TYPES: Record<string, FieldType> = {
  integer: FieldType.FIELD_TYPE_INTEGER,
  string: FieldType.FIELD_TYPE_STRING,
  field_type_integer: FieldType.FIELD_TYPE_INTEGER,
  field_type_string: FieldType.FIELD_TYPE_STRING,
};

/** The definition in the file, mapped as DefineModel maps its request (not yet validated). */
export function readModelFile(path: string): ModelSpec {
  return fromFile(path, (json) => modelSpecFromJson(json));
}

/** The definition in the file as the ModelDefinition a DefineModel request carries. */
export function readModelDefinition(path: string): ModelDefinition {
  return fromFile(path, (json) => modelDefinitionFromJson(json));
}

function fromFile<T>(path: string, read: (json: unknown) => T): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ModelFileError(`cannot read model file ${path}: ${(error as Error).message}`);
  }
  try {
    return read(parsed);
  } catch (error) {
    if (error instanceof ModelFileError || error instanceof InvalidArgumentError) {
      throw new ModelFileError(`model file ${path}: ${error.message}`);
    }
    throw error;
  }
}

export function modelSpecFromJson(json: unknown): ModelSpec {
  return toModelSpec(modelDefinitionFromJson(json));
}

function modelDefinitionFromJson(json: unknown): ModelDefinition {
  const request = asObject(json, 'the file');
  const model =
    'model' in request && Object.keys(request).length === 1
      ? asObject(request.model, 'model')
      : request;
  checkKeys(model, MODEL_KEYS, 'model');
  const indices: [unknown, string][] = [
    [model.primaryIndex ?? model.primary_index, 'model.primary_index'],
    ...asList(model.secondaryIndices ?? model.secondary_indices, 'model.secondary_indices').map(
      (index, i): [unknown, string] => [index, `model.secondary_indices[${i}]`],
    ),
  ];
  for (const [index, path] of indices) {
    if (index === undefined) continue;
    const object = asObject(index, path);
    checkKeys(object, INDEX_KEYS, path);
    asList(object.fields, `${path}.fields`).forEach((field, i) => {
      const fieldObject = asObject(field, `${path}.fields[${i}]`);
      checkKeys(fieldObject, FIELD_KEYS, `${path}.fields[${i}]`);
      fieldObject.type = fieldType(fieldObject.type, `${path}.fields[${i}].type`);
    });
  }
  return ModelDefinition.fromJSON(model);
}

function fieldType(value: unknown, path: string): FieldType {
  const type =
    typeof value === 'string'
      ? FIELD_TYPES[value.toLowerCase()]
      : value === FieldType.FIELD_TYPE_INTEGER || value === FieldType.FIELD_TYPE_STRING
        ? value
        : undefined;
  if (type === undefined) {
    throw new ModelFileError(
      `${path}: must be "integer" or "string", got ${JSON.stringify(value)}`,
    );
  }
  return type;
}

function asObject(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ModelFileError(`${path}: must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

function asList(value: unknown, path: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ModelFileError(`${path}: must be a JSON array`);
  return value;
}

function checkKeys(object: Record<string, unknown>, known: readonly string[], path: string) {
  const unknown = Object.keys(object).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    throw new ModelFileError(
      `${path}: unknown key ${JSON.stringify(unknown)}; known: ${known.join(', ')}`,
    );
  }
}
