// The MessagePack decoder of cell bodies (the SDK reads bodies with it), the reading half of
// messagePackWriter.ts. It exists for extension types: msgpackr (which the SDK read bodies with
// before) looks them up in one table shared by the whole process, where type 0 means undefined,
// 0x42, 0x62, 0x65, 0x69, 0x70, 0x73, 0x74 and 0x78 have msgpackr's own meanings and any other
// type throws. So a Ruby writer's extension (msgpack-ruby's README registers Symbol as type 0)
// read as undefined, as a wrong value, or made the whole cell unreadable. Here every extension
// but the timestamp reads as a MessagePackExtension, its type and bytes, which the writer
// writes back as they were.
//
// Every other value reads as it did through msgpackr with the SDK's options, unless the
// caller's MessagePackReadOptions say otherwise (the CLI, which prints every value exactly,
// reads floats, extensions and maps its own way):
// - an integer is a number while it is a safe integer and a bigint beyond (±2^53 included:
//   as numbers they would be written back as floats);
// - a float (32 or 64 bits) is a number, a string a string (bytes that are not UTF-8 read as
//   U+FFFD), a binary a Buffer of its own, nil null, a timestamp (-1) a Date (to the
//   millisecond, rounded down; one past a Date's range stays a MessagePackExtension);
// - a map whose keys are all strings is a plain object, a "__proto__" key an own key (the
//   prototype is left alone); any other map is a Map whose keys keep their types.
// Anything that is not one MessagePack value throws (a 0xc1 byte, data cut short, bytes after
// the value). So does a value nested deeper than MAX_READ_DEPTH levels: the reader recurses once
// per level, and a deep enough value would otherwise overflow the stack wherever it is read.

import { MessagePackExtension } from './messagePackExtension.js';
import { isStackOverflow } from './messagePackWriter.js';
import { setOwnKey } from './plainObjects.js';
import { TIMESTAMP_TYPE, readTimestamp } from './timestamp.js';

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Strings shorter than this are decoded here when they are ASCII. */
const SHORT_STRING = 32;

/**
 * The most levels of maps and arrays read (the outermost is level 1): the most a server takes
 * (its --max-body-depth goes up to 1000), with the stack to spare. A value of 3,800 levels
 * overflowed Node's default stack from the top of a call; this reader uses about a quarter.
 */
export const MAX_READ_DEPTH = 1000;

/** Bytes that are not one MessagePack value. */
export class MalformedMessagePack extends Error {}

/**
 * Bytes that are one MessagePack value, but nested deeper than this reader reads
 * ({@link MAX_READ_DEPTH} levels, or less where the caller left too little stack).
 */
export class MessagePackTooDeep extends Error {}

/**
 * What a reader makes of the values a JS type cannot tell apart or hold; each, when left out,
 * is read as the file comment says.
 */
export interface MessagePackReadOptions {
  /** A float (32 or 64 bits); by default its number, which a whole float shares with an integer. */
  readonly float?: (value: number) => unknown;
  /** An extension (its data a copy); by default a MessagePackExtension, a timestamp a Date. */
  readonly extension?: (type: number, data: Buffer) => unknown;
  /**
   * A map, as its entries in order (keys of any type, a repeated key as often as it comes); by
   * default a plain object when every key is a string (the last of a repeated key wins), else
   * a Map.
   */
  readonly map?: (entries: [unknown, unknown][]) => unknown;
}

/** Every value read as the file comment says (the SDK's reading): one object for every read. */
const DEFAULT_READING: MessagePackReadOptions = {};

/** The one MessagePack value `bytes` holds. @throws MalformedMessagePack */
export function readMessagePack(
  bytes: Uint8Array,
  options: MessagePackReadOptions = DEFAULT_READING,
): unknown {
  const buffer = Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const reader = new MessagePackReader(buffer, options);
  let value: unknown;
  try {
    value = reader.read();
  } catch (error) {
    // The stack ran out before MAX_READ_DEPTH: a caller deep in its own calls.
    if (isStackOverflow(error)) {
      throw new MessagePackTooDeep(`nested too deep for the stack left (${error.message})`);
    }
    throw error;
  }
  if (reader.position !== buffer.length) {
    throw new MalformedMessagePack(
      `${buffer.length - reader.position} bytes after the value (at byte ${reader.position})`,
    );
  }
  return value;
}

class MessagePackReader {
  position = 0;
  /** Maps and arrays open around the value being read. */
  #depth = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly options: MessagePackReadOptions,
  ) {}

  read(): unknown {
    const type = this.#uint(1);
    if (type < 0x80) return type;
    if (type < 0x90) return this.#map(type & 0x0f);
    if (type < 0xa0) return this.#array(type & 0x0f);
    if (type < 0xc0) return this.#string(type & 0x1f);
    if (type >= 0xe0) return type - 0x100;
    switch (type) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#binary(this.#uint(1));
      case 0xc5:
        return this.#binary(this.#uint(2));
      case 0xc6:
        return this.#binary(this.#uint(4));
      case 0xc7:
        return this.#extension(this.#uint(1));
      case 0xc8:
        return this.#extension(this.#uint(2));
      case 0xc9:
        return this.#extension(this.#uint(4));
      case 0xca:
        return this.#float(this.bytes.readFloatBE(this.#take(4)));
      case 0xcb:
        return this.#float(this.bytes.readDoubleBE(this.#take(8)));
      case 0xcc:
        return this.#uint(1);
      case 0xcd:
        return this.#uint(2);
      case 0xce:
        return this.#uint(4);
      case 0xcf:
        return exact(this.bytes.readBigUInt64BE(this.#take(8)));
      case 0xd0:
        return this.bytes.readInt8(this.#take(1));
      case 0xd1:
        return this.bytes.readInt16BE(this.#take(2));
      case 0xd2:
        return this.bytes.readInt32BE(this.#take(4));
      case 0xd3:
        return exact(this.bytes.readBigInt64BE(this.#take(8)));
      case 0xd4:
        return this.#extension(1);
      case 0xd5:
        return this.#extension(2);
      case 0xd6:
        return this.#extension(4);
      case 0xd7:
        return this.#extension(8);
      case 0xd8:
        return this.#extension(16);
      case 0xd9:
        return this.#string(this.#uint(1));
      case 0xda:
        return this.#string(this.#uint(2));
      case 0xdb:
        return this.#string(this.#uint(4));
      case 0xdc:
        return this.#array(this.#uint(2));
      case 0xdd:
        return this.#array(this.#uint(4));
      case 0xde:
        return this.#map(this.#uint(2));
      case 0xdf:
        return this.#map(this.#uint(4));
      default:
        throw new MalformedMessagePack(`0x${type.toString(16)} at byte ${this.position - 1}`);
    }
  }

  #float(value: number): unknown {
    return this.options.float ? this.options.float(value) : value;
  }

  #map(size: number): unknown {
    this.#enter();
    const map = this.#mapOfSize(size);
    this.#depth--;
    return map;
  }

  /** Notes one more level open, refusing one past MAX_READ_DEPTH. */
  #enter(): void {
    if (++this.#depth > MAX_READ_DEPTH) {
      throw new MessagePackTooDeep(
        `nested deeper than ${MAX_READ_DEPTH} levels (at byte ${this.position - 1})`,
      );
    }
  }

  #mapOfSize(size: number): unknown {
    if (this.options.map) return this.options.map(this.#entries(size));
    // Read as an object until a key is not a string (rare: a Ruby writer's integer keys); then
    // read again from the first entry as a Map, which keeps the entries in their order.
    const start = this.position;
    const object: { [key: string]: unknown } = {};
    for (let i = 0; i < size; i++) {
      const key = this.read();
      if (typeof key !== 'string') {
        this.position = start;
        return this.#mapOf(size);
      }
      setOwnKey(object, key, this.read());
    }
    return object;
  }

  #mapOf(size: number): Map<unknown, unknown> {
    const map = new Map<unknown, unknown>();
    for (let i = 0; i < size; i++) map.set(this.read(), this.read());
    return map;
  }

  #entries(size: number): [unknown, unknown][] {
    const entries: [unknown, unknown][] = [];
    for (let i = 0; i < size; i++) entries.push([this.read(), this.read()]);
    return entries;
  }

  #array(length: number): unknown[] {
    this.#enter();
    // Not preallocated: a declared length is what the bytes claim, not what they hold.
    const array: unknown[] = [];
    for (let i = 0; i < length; i++) array.push(this.read());
    this.#depth--;
    return array;
  }

  #string(length: number): string {
    const start = this.#take(length);
    if (length < SHORT_STRING) {
      // Most keys and many values are short ASCII: a loop is cheaper than a call into
      // Buffer.toString; any other byte goes there, to be read as UTF-8.
      let text = '';
      for (let i = start; i < start + length; i++) {
        const byte = this.bytes[i]!;
        if (byte >= 0x80) return this.bytes.toString('utf8', start, start + length);
        text += String.fromCharCode(byte);
      }
      return text;
    }
    return this.bytes.toString('utf8', start, start + length);
  }

  #binary(length: number): Buffer {
    const start = this.#take(length);
    // A copy: a binary changed in place must not change the bytes the cell was read from.
    return Buffer.from(this.bytes.subarray(start, start + length));
  }

  #extension(length: number): unknown {
    const type = this.bytes.readInt8(this.#take(1));
    const start = this.#take(length);
    const data = this.bytes.subarray(start, start + length);
    if (this.options.extension) return this.options.extension(type, Buffer.from(data));
    return (type === TIMESTAMP_TYPE && dateOf(data)) || new MessagePackExtension(type, data);
  }

  #uint(width: 1 | 2 | 4): number {
    const at = this.#take(width);
    if (width === 1) return this.bytes[at]!;
    return width === 2 ? this.bytes.readUInt16BE(at) : this.bytes.readUInt32BE(at);
  }

  /** Answers where the next `length` bytes start, and moves past them. */
  #take(length: number): number {
    const at = this.position;
    if (at + length > this.bytes.length) {
      throw new MalformedMessagePack(`cut short: ${length} bytes wanted at byte ${at}`);
    }
    this.position = at + length;
    return at;
  }
}

function exact(value: bigint): number | bigint {
  return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
}

/** The most milliseconds a Date holds either side of the epoch. */
const MOST_DATE_MS = 8.64e15;

/**
 * The timestamp extension as a Date, to the millisecond rounded down; undefined for data of no
 * timestamp layout or an instant past a Date's range, read as the MessagePackExtension it is
 * (so that it is written back as it was, where a Date could only be invalid). The milliseconds
 * are added as a whole number: a fraction added to a count of milliseconds past 2^44 rounds to
 * the nearest representable double, so 999.999999 ms could make the next second, and a Date
 * cuts a negative instant's fraction towards the epoch.
 */
function dateOf(data: Buffer): Date | undefined {
  const instant = readTimestamp(data);
  if (!instant) return undefined;
  const milliseconds = Number(instant.seconds) * 1000 + Math.floor(instant.nanoseconds / 1e6);
  return Math.abs(milliseconds) <= MOST_DATE_MS ? new Date(milliseconds) : undefined;
}
