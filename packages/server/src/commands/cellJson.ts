// Cell bodies between the CLI's JSON and the wire's MessagePack. Integers past 32 bits go out
// as bigints, because msgpackr writes such a number as a float64 (2^40 would be stored as
// 1099511627776.0); they come back as numbers while safe and as bigints beyond.
import type { Cell } from '@shameless/proto';
import { Packr, Unpackr, type Options } from 'msgpackr';
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
 * A JSON object (from parseExactJson) as a MessagePack map, integers kept integers. `name` is
 * the argument it came from, for the UsageError of an integer beyond 64 bits.
 */
export function encodeJsonBody(values: Record<string, unknown>, name: string): Buffer {
  return packr.pack(integersAsBigints(values, name));
}

function integersAsBigints(value: unknown, path: string): unknown {
  if (typeof value === 'number') {
    return Number.isInteger(value) && (value >= 2 ** 32 || value < -(2 ** 31))
      ? BigInt(value)
      : value;
  }
  if (typeof value === 'bigint' && (value < MIN_INTEGER || value > MAX_INTEGER)) {
    throw new UsageError(
      `${path}: ${value} is beyond MessagePack's 64-bit integers (${MIN_INTEGER} to ${MAX_INTEGER}); ` +
        'write it as a string, or with a fraction or exponent to store a float',
    );
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => integersAsBigints(item, `${path}[${index}]`));
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [
        key,
        integersAsBigints(field, `${path}.${key}`),
      ]),
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
