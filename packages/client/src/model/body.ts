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
// a value read and written back is the same MessagePack. So is an extension value, read as a
// MessagePackExtension of its type and bytes (see @shameless/proto's messagePackReader.ts).

import {
  MalformedMessagePack,
  MessagePackTooDeep,
  UnencodableValueError,
  encodeMessagePack,
  isPlainObject,
  readMessagePack,
  setOwnKey,
} from '@shameless/proto';
import { InvalidArgumentError } from '../transport/index.js';
import { type BodySource, UnreadableBodyError } from './errors.js';
import type { Body } from './schema.js';

/**
 * Encodes a body (a plain object) as a MessagePack map, each integer in the smallest format
 * that holds it (as Ruby's msgpack writes it): 2^40 is `cf 00 00 01 00 00 00 00 00`.
 *
 * @throws InvalidArgumentError for a value with no MessagePack form (a bigint outside
 *   -2^63 .. 2^64-1, a symbol, a function, an object that holds itself); the message starts
 *   with `what` and the value's key path: `cell meta of <uuid>: prices.20261201: ...`.
 */
export function encodeBody(body: Readonly<Body>, what = 'body'): Buffer {
  try {
    return encodeMessagePack(body);
  } catch (error) {
    if (!(error instanceof UnencodableValueError)) throw error;
    throw new InvalidArgumentError(`${what}: ${error.message}`);
  }
}

/**
 * Decodes a stored body. An empty blob reads as `{}`. Bytes that are not a MessagePack map
 * (every writer stores maps), or one nested deeper than the SDK reads, fail with an
 * UnreadableBodyError naming the cell. A body's own keys are strings (the server takes no
 * other); a key of another type, which only a writer that went around the server could
 * store, reads as its string.
 */
export function decodeBody(bytes: Uint8Array, source: BodySource): Body {
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = readMessagePack(bytes);
  } catch (error) {
    if (error instanceof MessagePackTooDeep) {
      throw new UnreadableBodyError(source, error.message, error);
    }
    if (!(error instanceof MalformedMessagePack)) throw error;
    throw new UnreadableBodyError(source, `not valid MessagePack (${error.message})`, error);
  }
  if (value instanceof Map) {
    const body: Body = {};
    for (const [key, item] of value) setOwnKey(body, String(key), item);
    return body;
  }
  if (!isPlainObject(value)) {
    throw new UnreadableBodyError(source, 'not a MessagePack map');
  }
  return value;
}
