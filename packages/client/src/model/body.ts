// Cell bodies on the wire: plain MessagePack maps with string keys, readable by any MessagePack
// library (the Ruby gem included). The server passes bodies through untouched.

import { Packr, type Options } from 'msgpackr';
import { InternalError } from '../transport/index.js';
import type { Body } from './schema.js';

const options: Options = {
  // Objects are written as plain MessagePack maps and maps are read back as objects: no
  // msgpackr record or structured-clone extensions, which other languages cannot read.
  useRecords: false,
  mapsAsObjects: true,
  moreTypes: false,
  // `undefined` as nil rather than msgpackr's private extension.
  encodeUndefinedAsNil: true,
};
// 64-bit integers (which other writers use for values past 32 bits, e.g. millisecond
// timestamps) read as numbers when they are safe integers and as bigints otherwise, instead of
// always as bigints. msgpackr supports 'auto' but its typings do not list it.
const packr = new Packr({ ...options, int64AsType: 'auto' as Options['int64AsType'] });

/** Encodes a body (a plain object) as a MessagePack map. */
export function encodeBody(body: Readonly<Body>): Buffer {
  return packr.pack(body);
}

/**
 * Decodes a stored body. An empty blob reads as `{}`; anything but a map is a corrupt cell
 * (every writer stores maps) and fails with an InternalError naming `what`.
 */
export function decodeBody(bytes: Uint8Array, what: string): Body {
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (error) {
    throw new InternalError(`${what}: the body is not valid MessagePack`, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InternalError(`${what}: the body is not a MessagePack map`);
  }
  return value as Body;
}
