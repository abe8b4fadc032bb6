// Cell bodies: MessagePack maps with string keys. Bodies are validated on the way in and
// re-encoded only when merged; reads return the stored bytes untouched.
import { Packr, Unpackr } from 'msgpackr';
import { InvalidArgumentError } from './errors.js';

// Maps stay Maps (so nested maps keep non-string keys), 64-bit integers stay exact, and
// nothing msgpackr-specific (records, structured clones) is ever written: the gem must be able
// to read every body.
const unpackr = new Unpackr({ mapsAsObjects: false, int64AsType: 'bigint', useRecords: false });
const packr = new Packr({
  mapsAsObjects: false,
  useRecords: false,
  moreTypes: false,
  int64AsType: 'bigint',
});

export type Body = Map<string, unknown>;

/** Decodes a body, or says which request field is malformed. */
export function decodeBody(bytes: Buffer, field: string): Body {
  if (bytes.length === 0) {
    throw new InvalidArgumentError(
      field,
      'must be a MessagePack map (empty map: 0x80), got no bytes',
    );
  }
  let value: unknown;
  try {
    value = unpackr.unpack(bytes);
  } catch {
    throw new InvalidArgumentError(field, 'is not valid MessagePack');
  }
  if (!(value instanceof Map)) {
    throw new InvalidArgumentError(field, 'must be a MessagePack map with string keys');
  }
  for (const key of value.keys()) {
    if (typeof key !== 'string') {
      throw new InvalidArgumentError(field, `must have string keys only, found key ${String(key)}`);
    }
  }
  return value as Body;
}

/** Decodes a stored body; a corrupt one reads as empty rather than failing every later write. */
export function decodeStoredBody(bytes: Buffer | undefined): Body {
  if (!bytes || bytes.length === 0) return new Map();
  try {
    const value = unpackr.unpack(bytes);
    return value instanceof Map ? (value as Body) : new Map();
  } catch {
    return new Map();
  }
}

export function encodeBody(body: Body): Buffer {
  return packr.pack(body);
}

/** The gem's shallow merge: the patch's keys written over the base. */
export function mergeBodies(base: Body, patch: Body): Body {
  const merged = new Map(base);
  for (const [key, value] of patch) merged.set(key, value);
  return merged;
}
