// Cell bodies on the wire: plain MessagePack maps with string keys, readable by any MessagePack
// library (the Ruby gem included). The server passes bodies through untouched.
//
// Numbers. MessagePack, like Ruby, tells integers from floats; a JS number does not. Writing,
// an integral number (a safe integer) is an integer and anything else a float64; a bigint is an
// integer. Reading, an integer is a number when it is a safe integer and a bigint beyond; a
// float is a number. So a float with an integral value (Ruby's 120.0) reads as 120 and would
// be written back as the integer 120: the SDK keeps it a float by never writing a field the
// caller did not set (a save sends only the fields set since the version was read).

import { Unpackr, type Options } from 'msgpackr';
import { InternalError } from '../transport/index.js';
import { encodeMessagePack } from './messagePackWriter.js';
import type { Body } from './schema.js';

// 64-bit integers read as numbers when they are safe integers and as bigints otherwise, instead
// of always as bigints; maps read as plain objects. msgpackr supports 'auto' but its typings
// do not list it.
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  int64AsType: 'auto' as Options['int64AsType'],
});

/**
 * Encodes a body (a plain object) as a MessagePack map, each integer in the smallest format
 * that holds it (as Ruby's msgpack writes it): 2^40 is `cf 00 00 01 00 00 00 00 00`.
 *
 * @throws InvalidArgumentError for a bigint outside -2^63 .. 2^64-1.
 */
export function encodeBody(body: Readonly<Body>): Buffer {
  return encodeMessagePack(body);
}

/**
 * Decodes a stored body. An empty blob reads as `{}`; anything but a map is a corrupt cell
 * (every writer stores maps) and fails with an InternalError naming `what`.
 */
export function decodeBody(bytes: Uint8Array, what: string): Body {
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = unpackr.unpack(bytes);
  } catch (error) {
    throw new InternalError(`${what}: the body is not valid MessagePack`, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InternalError(`${what}: the body is not a MessagePack map`);
  }
  return value as Body;
}
