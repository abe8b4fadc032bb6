// 64-bit integers in the SDK's API. The store's ids, cursors and integer index values are
// 64-bit, wider than a JS number holds exactly; the wire carries them as bigints. The API
// hands them out as numbers while they are safe integers (what almost every id and index value
// is, and what arithmetic and JSON expect) and as bigints beyond, the same rule as integers in
// bodies; it takes either. `<` and `>` compare a number with a bigint correctly; `===` does
// not, so compare ids with `<`/`>` or convert first. The unsigned 32-bit arguments (shard
// numbers, page sizes) are checked here too, so that no argument fails as the request is
// encoded.

import { isPlainObject } from '@shameless/proto';
import { InvalidArgumentError } from '../transport/index.js';

/**
 * An integer held exactly: a `number` when it is a safe integer (|v| <= 2^53 - 1), a `bigint`
 * beyond. Cell ids, log cursors and the integers of bodies read from the store come as this.
 */
export type ExactInteger = number | bigint;

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const UINT32_MAX = 2 ** 32 - 1;

/** A 64-bit integer from the wire, as the API hands it out. */
export function fromWire(value: bigint): ExactInteger {
  return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
}

/**
 * A signed 64-bit integer for the wire (an integer index value, a shard value). `what` names
 * the argument in the error.
 *
 * @throws InvalidArgumentError for anything else: a number that is not a safe integer is
 *   refused rather than guessed at (past 2^53 it may already have lost its last digits; pass
 *   a bigint).
 */
export function toWireInt64(value: unknown, what: string): bigint {
  return toWire(value, what, INT64_MIN, INT64_MAX, 'a signed 64-bit integer');
}

/** An unsigned 64-bit integer for the wire (a log cursor); as {@link toWireInt64}. */
export function toWireUint64(value: unknown, what: string): bigint {
  return toWire(value, what, 0n, UINT64_MAX, 'an unsigned 64-bit integer');
}

/**
 * An unsigned 32-bit integer for the wire (a shard number, a page size, an interval); `what`
 * names the argument in the error. The server checks the value itself (a shard that does not
 * exist, a page past its cap); this only keeps the request encodable.
 *
 * @throws InvalidArgumentError for anything but an integer from 0 to 2^32 - 1.
 */
export function toWireUint32(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= UINT32_MAX) {
    return value;
  }
  throw new InvalidArgumentError(
    `${what} must be an unsigned 32-bit integer, got ${describe(value)}`,
  );
}

function toWire(value: unknown, what: string, min: bigint, max: bigint, kind: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value)) {
    const integer = BigInt(value);
    if (integer >= min && integer <= max) return integer;
  } else if (typeof value === 'bigint') {
    if (value >= min && value <= max) return value;
  } else if (typeof value === 'number' && Number.isInteger(value)) {
    throw new InvalidArgumentError(
      `${what}: ${value} is beyond a number's exact integers (±(2^53-1)); pass a bigint`,
    );
  }
  throw new InvalidArgumentError(`${what} must be ${kind}, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'bigint') return `${value}n`;
  return `${typeof value} ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
}

/**
 * `value` with every bigint inside arrays, plain objects and Maps replaced by its decimal
 * string, so that `JSON.stringify` can write it (it throws on a bigint). Proto3's JSON mapping
 * writes 64-bit integers as strings the same way, and a map with integer keys as an object
 * with their strings as keys: so is a Map here (JSON.stringify would write `{}`). Other values
 * are returned as they are.
 */
export function jsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(jsonSafe);
  const entries =
    value instanceof Map
      ? [...(value as Map<unknown, unknown>)]
      : isPlainObject(value)
        ? Object.entries(value)
        : undefined;
  if (entries === undefined) return value;
  const copy: { [key: string]: unknown } = {};
  for (const [key, item] of entries) {
    Object.defineProperty(copy, String(key), {
      value: jsonSafe(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}
