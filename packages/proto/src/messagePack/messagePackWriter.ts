// The MessagePack encoder of cell bodies (the SDK writes bodies with it). It exists for
// integers: msgpackr writes every number outside 32 bits as a float64, so 2^40 would reach the
// store, and the Ruby gem, as 1099511627776.0. This writer puts every integer in the smallest
// format that holds it, exactly as Ruby's msgpack does, so that a body written here and one
// written by the gem are the same bytes:
//
// - a safe-integer number or a bigint: positive fixint, uint8/16/32/64 when >= 0; negative
//   fixint, int8/16/32/64 when < 0 (a bigint outside int64/uint64 is refused);
// - any other number (a fraction, NaN, ±Infinity, -0, and integral numbers past 2^53, which
//   stay numbers when read back only as floats), and a MessagePackFloat: float64.
//
// Maps, arrays, strings, binaries, booleans and nil are written here too, each in its
// smallest format; any typed array, DataView or ArrayBuffer is a binary of its bytes, and a
// MessagePackExtension (an extension read from a body) the extension of its type and bytes.
// So are the values msgpackr would write as a map or an array, so that the integers inside
// them keep their formats: a Set as an array, a class instance as its `toJSON()` if it has
// one, else as a map of its own keys. A Date, an Error and a RegExp are written by msgpackr as
// before (a Date as the standard timestamp extension).
//
// A value with no MessagePack form (a bigint past 64 bits, a symbol, a function, an object
// that holds itself) is refused with an UnencodableValueError naming its key path
// (`prices.20261201`, `rates[0].cents`): a caller with a large body must learn which value to
// fix, and a function must not be stored as nil unnoticed.

import { Packr } from 'msgpackr';
import { MessagePackExtension } from './messagePackExtension.js';
import { MessagePackFloat } from './messagePackFloat.js';
import { isPlainObject } from './plainObjects.js';

const fallback = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  moreTypes: false,
  encodeUndefinedAsNil: true,
});

/**
 * Bodies are written by one reused writer and copied out at their length: a buffer of their
 * own, grown as they are written, cost more than the copy (most of the time of a 1 KB body).
 */
const FIRST_BYTES = 16 << 10;
/** The most a reused writer's buffer holds on to: a writer grown past this is not reused. */
const RETAINED_BYTES = 1 << 20;

const UINT64_MAX = 2n ** 64n - 1n;
/** Strings shorter than this are encoded to UTF-8 here rather than by Buffer.write. */
const SHORT_STRING = 64;
const INT64_MIN = -(2n ** 63n);
/** The writer waiting for the next body; undefined while it writes one. */
let idleWriter: MessagePackWriter | undefined;
/** The str8, str16 and str32 type bytes, by the width of their length field. */
const STRING_HEADER_TYPE = { 1: 0xd9, 2: 0xda, 4: 0xdb } as const;
/** The bytes of a long string header's length field (str8, str16, str32). */
const stringHeaderWidth = (length: number): 1 | 2 | 4 =>
  length < 0x100 ? 1 : length < 0x10000 ? 2 : 4;
/** The fixext type byte of each data length that has one. */
const FIXEXT = new Map([
  [1, 0xd4],
  [2, 0xd5],
  [4, 0xd6],
  [8, 0xd7],
  [16, 0xd8],
]);

/** A value with no MessagePack form; the message starts with its key path, if it has one. */
export class UnencodableValueError extends Error {
  override name = 'UnencodableValueError';
}

/**
 * `value` as MessagePack; see the file comment for the formats chosen.
 *
 * @throws UnencodableValueError for a value with no MessagePack form.
 */
export function encodeMessagePack(value: unknown): Buffer {
  // A toJSON() that encodes a body while this one is written takes a writer of its own.
  const writer = idleWriter ?? new MessagePackWriter();
  idleWriter = undefined;
  try {
    writer.write(value);
    return Buffer.from(writer.written);
  } catch (error) {
    if (isStackOverflow(error)) {
      // The writer recurses once per level: thousands of levels run it out of stack, and no
      // server would take such a body (DescribeStore's max_body_depth: 1000 at most).
      throw new UnencodableValueError(`nested too deep to write (${error.message})`);
    }
    if (!(error instanceof Unencodable)) throw error;
    const at = error.path.length === 0 ? '' : `${pathText(error.path)}: `;
    throw new UnencodableValueError(`${at}${error.message}`);
  } finally {
    if (writer.rewind()) idleWriter = writer;
  }
}

/** Whether `error` is V8's: the call stack ran out. */
export function isStackOverflow(error: unknown): error is RangeError {
  return error instanceof RangeError && /call stack/i.test(error.message);
}

/** A value with no MessagePack form; `path` is filled in as the error leaves each container. */
class Unencodable extends Error {
  /** Keys from the outermost in; a number is an array index. */
  readonly path: (string | number)[] = [];
}

/** `error` with the key it was raised under, when it is an {@link Unencodable}. */
function under(error: unknown, key: string | number | undefined): unknown {
  if (error instanceof Unencodable && key !== undefined) error.path.unshift(key);
  return error;
}

function pathText(path: readonly (string | number)[]): string {
  return path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`))
    .join('');
}

class MessagePackWriter {
  #buffer = Buffer.allocUnsafe(FIRST_BYTES);
  #position = 0;
  /** The arrays, maps and objects being written, outermost first: a cycle's way back. */
  readonly #open: object[] = [];

  /** The bytes written so far, in the writer's buffer: the next write overwrites them. */
  get written(): Buffer {
    return this.#buffer.subarray(0, this.#position);
  }

  /** Makes the writer ready for the next value; false when its buffer is too large to keep. */
  rewind(): boolean {
    this.#position = 0;
    this.#open.length = 0;
    return this.#buffer.length <= RETAINED_BYTES;
  }

  write(value: unknown): void {
    switch (typeof value) {
      case 'undefined':
        return this.#byte(0xc0);
      case 'boolean':
        return this.#byte(value ? 0xc3 : 0xc2);
      case 'number':
        return Number.isSafeInteger(value) && !Object.is(value, -0)
          ? this.#integer(value)
          : this.#float64(value);
      case 'bigint':
        return this.#bigint(value);
      case 'string':
        return this.#string(value);
      case 'object':
        if (value === null) return this.#byte(0xc0);
        if (isPlainObject(value)) return this.#object(value);
        if (Array.isArray(value)) return this.#array(value);
        if (value instanceof Uint8Array) return this.#binary(value);
        // msgpackr writes another view's element count of bytes, each element cut to a byte,
        // under a header of its byte length: the rest is whatever its buffer held before.
        if (ArrayBuffer.isView(value)) {
          return this.#binary(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
        }
        if (value instanceof ArrayBuffer) return this.#binary(new Uint8Array(value));
        if (value instanceof MessagePackExtension) return this.#extension(value);
        if (value instanceof MessagePackFloat) return this.#float64(value.value);
        if (value instanceof Map) return this.#map(value);
        if (value instanceof Set) return this.#array([...(value as Set<unknown>)], value);
        if (value instanceof Date && Number.isNaN(value.getTime())) {
          throw new Unencodable('an Invalid Date has no MessagePack form');
        }
        if (value instanceof Date || value instanceof Error || value instanceof RegExp) {
          return this.#fallback(value);
        }
        return this.#instance(value);
      case 'symbol':
        throw new Unencodable('a symbol has no MessagePack form');
      case 'function':
        throw new Unencodable('a function has no MessagePack form');
    }
  }

  #fallback(value: object): void {
    let bytes: Buffer;
    try {
      bytes = fallback.pack(value);
    } catch (error) {
      throw new Unencodable((error as Error).message);
    }
    this.#raw(bytes);
  }

  #integer(value: number): void {
    if (value >= 0) {
      if (value < 0x80) return this.#byte(value);
      if (value < 0x100) return this.#header(0xcc, 1, value);
      if (value < 0x10000) return this.#header(0xcd, 2, value);
      if (value < 0x100000000) return this.#header(0xce, 4, value);
      return this.#integer64(0xcf, value);
    }
    if (value >= -0x20) return this.#byte(value & 0xff);
    if (value >= -0x80) return this.#header(0xd0, 1, value & 0xff);
    if (value >= -0x8000) return this.#header(0xd1, 2, value & 0xffff);
    if (value >= -0x80000000) return this.#header(0xd2, 4, value >>> 0);
    return this.#integer64(0xd3, value);
  }

  /**
   * A safe integer past 32 bits as a uint64 or int64, in two 32-bit halves: a BigInt made for
   * it costs more than the rest of a small body (a millisecond timestamp is one).
   */
  #integer64(type: 0xcf | 0xd3, value: number): void {
    const high = Math.floor(value / 0x100000000);
    this.#reserve(9);
    this.#buffer[this.#position] = type;
    this.#buffer.writeInt32BE(high, this.#position + 1);
    this.#buffer.writeUInt32BE(value - high * 0x100000000, this.#position + 5);
    this.#position += 9;
  }

  #bigint(value: bigint): void {
    if (value >= -0x80000000n && value < 0x100000000n) return this.#integer(Number(value));
    if (value > 0n && value <= UINT64_MAX) return this.#uint64(value);
    if (value < 0n && value >= INT64_MIN) return this.#int64(value);
    throw new Unencodable(
      `${value} does not fit a MessagePack integer (-2^63 to 2^64-1); store it as a string`,
    );
  }

  #uint64(value: bigint): void {
    this.#reserve(9);
    this.#buffer[this.#position] = 0xcf;
    this.#buffer.writeBigUInt64BE(value, this.#position + 1);
    this.#position += 9;
  }

  #int64(value: bigint): void {
    this.#reserve(9);
    this.#buffer[this.#position] = 0xd3;
    this.#buffer.writeBigInt64BE(value, this.#position + 1);
    this.#position += 9;
  }

  #float64(value: number): void {
    this.#reserve(9);
    this.#buffer[this.#position] = 0xcb;
    this.#buffer.writeDoubleBE(value, this.#position + 1);
    this.#position += 9;
  }

  #string(value: string): void {
    if (value.length >= SHORT_STRING) return this.#longString(value);
    // UTF-8 takes at most 3 bytes per UTF-16 unit (under 0x100 here): write after the largest
    // header that length could need, then move the bytes back if a fixstr header holds it.
    const most = value.length * 3;
    const reserved = most < 0x20 ? 1 : 2;
    this.#reserve(reserved + most);
    const start = this.#position;
    const length = this.#utf8Short(value, start + reserved);
    const needed = length < 0x20 ? 1 : 2;
    if (needed < reserved) {
      this.#buffer.copyWithin(start + needed, start + reserved, start + reserved + length);
    }
    if (needed === 1) this.#buffer[start] = 0xa0 | length;
    else this.#writeHeaderAt(start, 0xd9, 1, length);
    this.#position = start + needed + length;
  }

  /**
   * A long string is written where its header ends: the header's width follows from the
   * string's length alone whenever its UTF-8 (1 to 3 bytes per UTF-16 unit) cannot cross a
   * width's bound; only a string that could is measured first.
   */
  #longString(value: string): void {
    const least = value.length;
    const most = value.length * 3;
    const width = stringHeaderWidth(least);
    if (width !== stringHeaderWidth(most)) {
      const length = Buffer.byteLength(value, 'utf8');
      this.#stringHeader(length);
      this.#reserve(length);
      this.#position += this.#buffer.write(value, this.#position);
      return;
    }
    this.#reserve(1 + width + most);
    const start = this.#position;
    const length = this.#buffer.write(value, start + 1 + width);
    this.#writeHeaderAt(start, STRING_HEADER_TYPE[width], width, length);
    this.#position = start + 1 + width + length;
  }

  #stringHeader(length: number): void {
    const width = stringHeaderWidth(length);
    this.#header(STRING_HEADER_TYPE[width], width, length);
  }

  /**
   * Writes a short string's UTF-8 at `at` and answers its length: a loop here is cheaper than
   * a call into Buffer.write for the few characters of most keys and values.
   */
  #utf8Short(value: string, at: number): number {
    const buffer = this.#buffer;
    let position = at;
    for (let i = 0; i < value.length; i++) {
      let code = value.charCodeAt(i);
      if (code < 0x80) {
        buffer[position++] = code;
      } else if (code < 0x800) {
        buffer[position++] = 0xc0 | (code >> 6);
        buffer[position++] = 0x80 | (code & 0x3f);
      } else {
        const next = value.charCodeAt(i + 1);
        if (code >= 0xd800 && code < 0xdc00 && next >= 0xdc00 && next < 0xe000) {
          // A surrogate pair: one code point past U+FFFF, four bytes.
          code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
          i++;
          buffer[position++] = 0xf0 | (code >> 18);
          buffer[position++] = 0x80 | ((code >> 12) & 0x3f);
        } else {
          // A lone surrogate is written as U+FFFD, as Buffer.write does.
          if (code >= 0xd800 && code < 0xe000) code = 0xfffd;
          buffer[position++] = 0xe0 | (code >> 12);
        }
        buffer[position++] = 0x80 | ((code >> 6) & 0x3f);
        buffer[position++] = 0x80 | (code & 0x3f);
      }
    }
    return position - at;
  }

  #binary(value: Uint8Array): void {
    const length = value.length;
    if (length < 0x100) this.#header(0xc4, 1, length);
    else if (length < 0x10000) this.#header(0xc5, 2, length);
    else this.#header(0xc6, 4, length);
    this.#raw(value);
  }

  /** In the smallest format, as every MessagePack library writes one: fixext where it fits. */
  #extension({ type, data }: MessagePackExtension): void {
    const fixed = FIXEXT.get(data.length);
    if (fixed !== undefined) this.#byte(fixed);
    else if (data.length < 0x100) this.#header(0xc7, 1, data.length);
    else if (data.length < 0x10000) this.#header(0xc8, 2, data.length);
    else this.#header(0xc9, 4, data.length);
    this.#byte(type & 0xff);
    this.#raw(data);
  }

  /** As msgpackr writes an object of a class: its `toJSON()`, else its own keys. */
  #instance(value: object): void {
    const toJSON: unknown = (value as { toJSON?: unknown }).toJSON;
    const json: unknown = typeof toJSON === 'function' ? toJSON.call(value) : value;
    if (json !== value) return this.write(json);
    this.#object(value as { readonly [key: string]: unknown });
  }

  /** `container`: what a cycle would lead back to (the Set whose items `value` holds). */
  #array(value: readonly unknown[], container: object = value): void {
    this.#enter(container);
    this.#collectionHeader(value.length, 0x90, 0xdc, 0xdd);
    let i = 0;
    try {
      for (; i < value.length; i++) this.write(value[i]);
    } catch (error) {
      throw under(error, i);
    }
    this.#open.pop();
  }

  #map(value: ReadonlyMap<unknown, unknown>): void {
    this.#enter(value);
    this.#collectionHeader(value.size, 0x80, 0xde, 0xdf);
    let at: string | undefined;
    try {
      for (const [key, item] of value) {
        at = String(key);
        this.write(key);
        this.write(item);
      }
    } catch (error) {
      throw under(error, at);
    }
    this.#open.pop();
  }

  #object(value: { readonly [key: string]: unknown }): void {
    this.#enter(value);
    const keys = Object.keys(value);
    this.#collectionHeader(keys.length, 0x80, 0xde, 0xdf);
    let at: string | undefined;
    try {
      for (const key of keys) {
        at = key;
        this.#string(key);
        this.write(value[key]);
      }
    } catch (error) {
      throw under(error, at);
    }
    this.#open.pop();
  }

  /** Notes a container as being written, refusing one that is already (a cycle). */
  #enter(value: object): void {
    if (this.#open.includes(value)) {
      throw new Unencodable('holds itself (a cycle): MessagePack has no references');
    }
    this.#open.push(value);
  }

  #collectionHeader(size: number, fix: number, of16: number, of32: number): void {
    if (size < 0x10) this.#byte(fix | size);
    else if (size < 0x10000) this.#header(of16, 2, size);
    else this.#header(of32, 4, size);
  }

  /** A type byte followed by `value` as a big-endian unsigned integer of `width` bytes. */
  #header(type: number, width: number, value: number): void {
    this.#reserve(1 + width);
    this.#writeHeaderAt(this.#position, type, width, value);
    this.#position += 1 + width;
  }

  #writeHeaderAt(at: number, type: number, width: number, value: number): void {
    this.#buffer[at] = type;
    if (width === 1) this.#buffer[at + 1] = value;
    else if (width === 2) this.#buffer.writeUInt16BE(value, at + 1);
    else this.#buffer.writeUInt32BE(value, at + 1);
  }

  #byte(value: number): void {
    this.#reserve(1);
    this.#buffer[this.#position++] = value;
  }

  #raw(bytes: Uint8Array): void {
    this.#reserve(bytes.length);
    this.#buffer.set(bytes, this.#position);
    this.#position += bytes.length;
  }

  #reserve(bytes: number): void {
    const needed = this.#position + bytes;
    if (needed <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2));
    this.#buffer.copy(grown, 0, 0, this.#position);
    this.#buffer = grown;
  }
}
