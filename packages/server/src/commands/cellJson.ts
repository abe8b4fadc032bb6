// Cell bodies between the CLI's JSON and the wire's MessagePack. Integer literals past 32 bits
// go out as bigints, because msgpackr writes such a number as a float64 (2^40 would be stored as
// 1099511627776.0); a number written with a fraction or exponent goes out as the float it is.
// Integers come back as numbers while safe and as bigints beyond.
import type { Cell } from '@shameless/proto';
import { Packr, Unpackr, type Options } from 'msgpackr';
import { parseExactJson } from './exactJson.js';
import { UsageError } from './usageError.js';

const packr = new Packr({ useRecords: false, moreTypes: false, encodeUndefinedAsNil: true });
// msgpackr supports int64AsType 'auto' but its typings do not list it.
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  int64AsType: 'auto' as Options['int64AsType'],
});

// MessagePack's integers: int64 and uint64. msgpackr refuses a bigint beyond them with advice
// about its own options, so the CLI says which value it is instead.
const MIN_INTEGER = -(2n ** 63n);
const MAX_INTEGER = 2n ** 64n - 1n;

/**
 * JSON text of a body: integer literals past 32 bits as bigints. Only the literal tells `1e20`
 * (a float) from `100000000000000000000` (an integer, refused past 64 bits), so it is decided
 * here, not from the number.
 */
export function parseJsonBody(text: string): unknown {
  return parseExactJson(text, (integer) => integer >= 2 ** 32 || integer < -(2 ** 31));
}

/**
 * A JSON object (from parseJsonBody) as a MessagePack map, integers kept integers. `name` is
 * the argument it came from, for the UsageError of an integer beyond 64 bits.
 */
export function encodeJsonBody(values: Record<string, unknown>, name: string): Buffer {
  return packr.pack(checkIntegers(values, name));
}

function checkIntegers(value: unknown, path: string): unknown {
  if (typeof value === 'bigint' && (value < MIN_INTEGER || value > MAX_INTEGER)) {
    throw new UsageError(
      `${path}: ${value} is beyond MessagePack's 64-bit integers (${MIN_INTEGER} to ${MAX_INTEGER}); ` +
        'write it as a string, or with a fraction or exponent to store a float',
    );
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => checkIntegers(item, `${path}[${index}]`));
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [key, checkIntegers(field, `${path}.${key}`)]),
    );
  }
  return value;
}

/** A cell as the CLI prints it: its coordinates, then its body decoded. */
export function cellToJson(cell: Cell): Record<string, unknown> {
  return {
    uuid: cell.uuid,
    cell: cell.name,
    refKey: cell.refKey,
    id: cell.id,
    shard: cell.shard,
    createdAt: cell.createdAt,
    body: cell.body.length === 0 ? {} : (unpackr.unpack(cell.body) as unknown),
  };
}
