// Reading typed index-field values out of request bodies and conditions.
import { InvalidArgumentError } from '../base/errors.js';
import { exactInteger } from '../base/exactInteger.js';
import type { CompiledModel, FieldSpec, IndexSpec } from './model.js';
import type { Body } from '../base/body.js';
import type { IndexScalar } from './model.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const STRING_MAX = 255;

/**
 * Checks a value against its field's type; `path` names the request field for errors. An
 * integer comes back as an ExactInteger (a number when safe, else a bigint), so SQL parameters
 * carry it exactly; a float with an integral value (another writer's 5.0) counts as that
 * integer, as MySQL would store it.
 */
export function toIndexScalar(field: FieldSpec, value: unknown, path: string): IndexScalar {
  if (field.type === 'integer') {
    const integral =
      typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value));
    if (!integral) {
      throw new InvalidArgumentError(
        path,
        `${field.name} must be an integer, got ${describe(value)}`,
      );
    }
    const integer = exactInteger(value);
    if (integer < INT64_MIN || integer > INT64_MAX) {
      throw new InvalidArgumentError(
        path,
        `${field.name} must be a signed 64-bit integer (-2^63 to 2^63-1), got ${String(value)}`,
      );
    }
    return integer;
  }
  // A string has at least as many UTF-16 units as characters: only a long one is counted.
  if (
    typeof value === 'string' &&
    (value.length <= STRING_MAX || [...value].length <= STRING_MAX)
  ) {
    return value;
  }
  throw new InvalidArgumentError(
    path,
    typeof value === 'string'
      ? `${field.name} must be at most ${STRING_MAX} characters`
      : `${field.name} must be a string, got ${describe(value)}`,
  );
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (value instanceof Map) return 'a map';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'binary';
  return `${typeof value} ${JSON.stringify(typeof value === 'bigint' ? String(value) : value)}`;
}

/**
 * A body's index values, each read and checked against its field's type once however often it
 * is asked for: a create reads its primary values for the lookup, and every index value again
 * for its index rows. A field has one type in every index of a model (normaliseModelSpec refuses
 * another), so a value checked for one index holds for all of them.
 */
export class IndexValues {
  readonly #body: Body;
  readonly #checked = new Map<string, IndexScalar>();

  constructor(body: Body) {
    this.#body = body;
  }

  /** The index's values, in field order; every field is required. */
  of(index: IndexSpec, path: string): IndexScalar[] {
    return index.fields.map((field) => {
      if (!this.#body.has(field.name)) {
        throw new InvalidArgumentError(
          path,
          `${field.name} is required (a field of index ${index.name})`,
        );
      }
      return this.#valueOf(field, path);
    });
  }

  /**
   * Checks the value of each of `fields` that the body holds against its field's type; fields
   * it lacks are left to whoever requires them (a create does, an update does not). So values
   * that an update would not store are refused as a create would refuse them.
   */
  requireTypes(fields: readonly FieldSpec[], path: string): void {
    for (const field of fields) {
      if (this.#body.has(field.name)) this.#valueOf(field, path);
    }
  }

  #valueOf(field: FieldSpec, path: string): IndexScalar {
    let value = this.#checked.get(field.name);
    if (value === undefined) {
      value = indexValueOf(field, this.#body, path);
      this.#checked.set(field.name, value);
    }
    return value;
  }
}

/** The value of a field the body holds, checked against the field's type. */
function indexValueOf(field: FieldSpec, body: Body, path: string): IndexScalar {
  if (!body.isUtf8(field.name)) {
    // Read with replacement characters, other bytes would find this record's index row.
    throw new InvalidArgumentError(path, `${field.name} must be UTF-8 text`);
  }
  const container = body.containerAt(field.name);
  if (container !== undefined) {
    // Never decoded: an index value is an integer or a string. A deeply nested container would
    // overflow the decoder's stack, and an extension read by the decoder's table of types could
    // pass for an integer the body does not hold (the gem reads the extension, not the integer).
    const type = field.type === 'integer' ? 'an integer' : 'a string';
    throw new InvalidArgumentError(path, `${field.name} must be ${type}, got ${container}`);
  }
  return toIndexScalar(field, body.get(field.name), path);
}

export function shardOnValue(index: IndexSpec, values: readonly IndexScalar[]): number | bigint {
  const position = index.fields.findIndex((field) => field.name === index.shardOn);
  return values[position] as number | bigint;
}

/** The body without any index field: what an update may change. */
export function withoutIndexFields(model: CompiledModel, body: Body): Body {
  return body.without(model.indexOfField);
}

/** Refuses a cell body that would write an index field (index values never change). */
export function rejectIndexFields(model: CompiledModel, body: Body, path: string): void {
  for (const key of body.keys()) {
    const owner = model.indexOfField.get(key);
    if (owner) {
      throw new InvalidArgumentError(
        path,
        `${key} cannot be written: it is part of the ${owner.index} index of ${model.name}`,
      );
    }
  }
}
