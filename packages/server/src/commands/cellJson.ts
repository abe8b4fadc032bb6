// Cell bodies between the CLI's JSON and the wire's MessagePack. Integers past 32 bits go out
// as bigints, because msgpackr writes such a number as a float64 (2^40 would be stored as
// 1099511627776.0); they come back as numbers while safe and as bigints beyond.
import type { Cell } from '@shameless/proto';
import { Packr, Unpackr, type Options } from 'msgpackr';

const packr = new Packr({ useRecords: false, moreTypes: false, encodeUndefinedAsNil: true });
// msgpackr supports int64AsType 'auto' but its typings do not list it.
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  int64AsType: 'auto' as Options['int64AsType'],
});

/** A JSON object (from parseExactJson) as a MessagePack map, integers kept integers. */
export function encodeJsonBody(values: Record<string, unknown>): Buffer {
  return packr.pack(integersAsBigints(values));
}

function integersAsBigints(value: unknown): unknown {
  if (typeof value === 'number') {
    return Number.isInteger(value) && (value >= 2 ** 32 || value < -(2 ** 31))
      ? BigInt(value)
      : value;
  }
  if (Array.isArray(value)) return value.map(integersAsBigints);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [key, integersAsBigints(field)]),
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
