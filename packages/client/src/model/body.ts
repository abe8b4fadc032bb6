// Cell bodies on the wire: plain MessagePack maps with string keys, readable by any MessagePack
// library (the Ruby gem included). The server passes bodies through untouched.
//
// Numbers. MessagePack, like Ruby, tells integers from floats; a JS number does not. Writing,
// an integral number (a safe integer) is an integer and anything else a float64; a bigint is an
// integer. Reading, an integer is a number when it is a safe integer and a bigint beyond; a
// float is a number. So a float with an integral value (Ruby's 120.0) reads as 120 and would
// be written back as the integer 120: the SDK keeps it a float by never writing a field the
// caller did not set (a save sends only the fields set since the version was read).
//
// Maps. A map whose keys are all strings reads as a plain object, a key "__proto__" included
// (an own key; the prototype is left alone); any other map reads as a Map whose keys keep
// their types (Ruby's { 20261201 => 120 }), and a Map is written with its keys as they are. So
// a value read and written back is the same MessagePack. (msgpackr's own objects would turn
// every key into a string, and "__proto__" into "__proto_".)

import { Unpackr, type Options } from 'msgpackr';
import { InternalError } from '../transport/index.js';
import { encodeMessagePack } from './messagePackWriter.js';
import type { Body } from './schema.js';

// 64-bit integers read as bigints, made numbers below when they are safe integers (msgpackr's
// 'auto' makes ±2^53 numbers too, which are not safe integers and would be written back as
// floats); maps read as Maps, made objects below.
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: false,
  int64AsType: 'bigint' as Options['int64AsType'],
});

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Encodes a body (a plain object) as a MessagePack map, each integer in the smallest format
 * that holds it (as Ruby's msgpack writes it): 2^40 is `cf 00 00 01 00 00 00 00 00`.
 *
 * @throws InvalidArgumentError for a value with no MessagePack form (a bigint outside
 *   -2^63 .. 2^64-1, a symbol, a function, an object that holds itself); the message starts
 *   with `what` and the value's key path: `cell meta of <uuid>: prices.20261201: ...`.
 */
export function encodeBody(body: Readonly<Body>, what = 'body'): Buffer {
  return encodeMessagePack(body, what);
}

/**
 * Decodes a stored body. An empty blob reads as `{}`; anything but a map is a corrupt cell
 * (every writer stores maps) and fails with an InternalError naming `what`. A body's own keys
 * are strings (the server takes no other); a key of another type, which only a writer that
 * went around the server could store, reads as its string.
 */
export function decodeBody(bytes: Uint8Array, what: string): Body {
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = unpackr.unpack(bytes);
  } catch (error) {
    throw new InternalError(`${what}: the body is not valid MessagePack`, { cause: error });
  }
  if (!(value instanceof Map)) {
    throw new InternalError(`${what}: the body is not a MessagePack map`);
  }
  const body: Body = {};
  for (const [key, item] of value) setOwn(body, String(key), objectsInside(item));
  return body;
}

/** `value` with every map inside it whose keys are all strings made a plain object. */
function objectsInside(value: unknown): unknown {
  if (typeof value === 'bigint') {
    return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
  }
  if (value instanceof Map) return allStringKeys(value) ? objectOf(value) : mapOf(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = objectsInside(value[i]);
  }
  return value;
}

function allStringKeys(map: Map<unknown, unknown>): boolean {
  for (const key of map.keys()) if (typeof key !== 'string') return false;
  return true;
}

function objectOf(map: Map<unknown, unknown>): Body {
  const object: Body = {};
  for (const [key, item] of map) setOwn(object, key as string, objectsInside(item));
  return object;
}

function mapOf(map: Map<unknown, unknown>): Map<unknown, unknown> {
  const exact = new Map<unknown, unknown>();
  for (const [key, item] of map) exact.set(objectsInside(key), objectsInside(item));
  return exact;
}

/** Sets an own key, `__proto__` included (a plain assignment would change the prototype). */
function setOwn(object: Body, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    object[key] = value;
  }
}
