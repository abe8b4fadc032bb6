// What a body may hold besides being a well-formed map: what every reader of the store can
// read back. A valid MessagePack body can still be one that no client reads, and one careless
// or hostile writer would make its record unreadable to every reader and stall the followers
// and consumers of its shard. Measured (docs/limits.md, "What a body may hold"):
// - nesting: Ruby's msgpack (the gem's reader, 1.4.2) reads 128 levels and no more, Python's
//   msgpack 1024, the SDK's reader about 3,800 (it recurses: the stack decides);
// - strings: Python's msgpack (raw=False, its default) refuses a str that is not UTF-8, and
//   the SDK reads one with U+FFFD, so its bytes change when written back;
// - keys: a map or an array as a map key cannot be a key in Python (unhashable) or in JSON;
// - a timestamp extension (type -1) whose data is not one of the spec's three layouts, or
//   whose nanoseconds pass 999,999,999: Python's msgpack refuses it;
// - values: each costs a reader an object (16 MB of empty arrays took the SDK 6.9 s and
//   800 MiB of heap, Python 4.7 s and 1.2 GiB).
// A body sent to the server is held to these rules where it enters (body.ts). Bodies already
// stored (written by the gem, or before these rules) are read and merged as they are.
import { isUtf8 } from 'node:buffer';
import { Unpackr } from 'msgpackr';
import { MalformedMapError, readHeader } from './messagePackHeader.js';

/** How deep and how large a body may be; both are server settings. */
export interface BodyLimits {
  /** Levels of maps and arrays: the body's own map is level 1, a map or array in it level 2. */
  readonly maxDepth: number;
  /** Values a body holds, counting the body, every key, every value and every item. */
  readonly maxValues: number;
}

/** Half of what Ruby's msgpack reads (128); about 64 KB of reader objects at most. */
export const DEFAULT_BODY_LIMITS: BodyLimits = { maxDepth: 64, maxValues: 1_000_000 };

/** A body that breaks a rule: `path` leads to the value (empty: the body as a whole). */
export class BodyRuleError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(path === '' ? reason : `${path}: ${reason}`);
  }
}

/** The timestamp extension's type; its data is 4, 8 or 12 bytes (MessagePack spec). */
const TIMESTAMP_TYPE = -1;
const MAX_NANOSECONDS = 999_999_999;
/** Strings up to this many bytes are checked for ASCII before UTF-8. */
const SHORT_STRING = 64;
/** Path segments shown before the rest are summed up: enough to say which value it is. */
const PATH_SEGMENTS_SHOWN = 8;
/** A key longer than this is cut short in a path. */
const KEY_CHARACTERS_SHOWN = 40;
/** Keys that print as they are in a path; any other string key prints JSON-quoted. */
const PLAIN_KEY = /^[A-Za-z0-9_$-]+$/;

const keyReader = new Unpackr({ mapsAsObjects: false, int64AsType: 'bigint', useRecords: false });

/**
 * Holds the entries of one body's map to the rules, one top-level value at a time, walking
 * without recursion (the depth a body claims costs this walk nothing but an array's length).
 * The open maps and arrays are kept in parallel arrays, so the walk allocates nothing per
 * value; a path is built only for an error.
 */
export class BodyWalk {
  #values = 1;
  /** Per open map or array, outermost first: items not read yet (a map's count twice). */
  readonly #remaining: number[] = [];
  /** Its items in all. */
  readonly #items: number[] = [];
  /** Whether it is a map. */
  readonly #isMap: boolean[] = [];
  /** For a map: where the key of the entry being read starts. */
  readonly #keyAt: number[] = [];

  constructor(
    private readonly bytes: Buffer,
    private readonly limits: BodyLimits,
  ) {}

  /** A top-level key that is a string: counted, and held to UTF-8. */
  key(next: number, end: number, keyAt: number): void {
    this.#count(keyAt);
    if (!isUtf8Text(this.bytes, next, end)) {
      throw new BodyRuleError(
        keyText(this.bytes, keyAt),
        'a key that is not UTF-8 (send such bytes as a binary)',
      );
    }
  }

  /**
   * Where the value at `offset`, a value of the body's map whose key starts at `keyAt`, ends,
   * having held every value inside it to the rules.
   * @throws BodyRuleError naming the rule and the path to the value that breaks it
   * @throws MalformedMapError for bytes that are not well-formed
   */
  value(offset: number, keyAt: number): number {
    const bytes = this.bytes;
    const remaining = this.#remaining;
    let position = offset;
    do {
      const top = remaining.length - 1;
      // Items of a map alternate key, value: a key comes when an even number is left.
      const isKey = top >= 0 && this.#isMap[top]! && remaining[top]! % 2 === 0;
      if (isKey) this.#keyAt[top] = position;
      if (top >= 0) remaining[top]!--;
      this.#count(keyAt);
      const header = readHeader(bytes, position);
      switch (header.kind) {
        case 'map':
        case 'array': {
          if (isKey)
            this.#refuse(
              keyAt,
              `a map key is ${header.kind === 'map' ? 'a map' : 'an array'}; keys must be strings, numbers, booleans, nil, binaries or extensions`,
            );
          // The body's map is level 1, so a value of it that is a map or array is level 2.
          if (remaining.length + 2 > this.limits.maxDepth) {
            this.#refuse(
              keyAt,
              `nested deeper than ${this.limits.maxDepth} levels (the server's --max-body-depth)`,
            );
          }
          const items = header.kind === 'map' ? 2 * header.count : header.count;
          // Every item takes at least a byte: a count past the bytes left is never walked.
          if (items > bytes.length - header.next) throw new MalformedMapError('truncated');
          if (items > 0) {
            remaining.push(items);
            this.#items.push(items);
            this.#isMap.push(header.kind === 'map');
            this.#keyAt.push(-1);
          }
          position = header.next;
          break;
        }
        case 'str':
          if (!isUtf8Text(bytes, header.next, header.end)) {
            this.#refuse(
              keyAt,
              `${isKey ? 'a key' : 'a string'} that is not UTF-8 (send such bytes as a binary)`,
            );
          }
          position = header.end;
          break;
        case 'ext':
          if (header.type === TIMESTAMP_TYPE) {
            const problem = timestampProblem(bytes, header.data, header.end);
            if (problem) this.#refuse(keyAt, problem);
          }
          position = header.end;
          break;
        default:
          position = header.end;
      }
      while (remaining.length > 0 && remaining[remaining.length - 1] === 0) this.#close();
    } while (remaining.length > 0);
    return position;
  }

  #count(keyAt: number): void {
    if (++this.#values > this.limits.maxValues) {
      this.#refuse(
        keyAt,
        `holds more than ${this.limits.maxValues} values (keys, values and items, at any depth; the server's --max-body-values)`,
        false,
      );
    }
  }

  #close(): void {
    this.#remaining.pop();
    this.#items.pop();
    this.#isMap.pop();
    this.#keyAt.pop();
  }

  /** Throws `reason` at the value being read, below the top-level key at `keyAt`. */
  #refuse(keyAt: number, reason: string, located = true): never {
    if (!located) throw new BodyRuleError('', reason);
    const segments = [keyText(this.bytes, keyAt)];
    for (let level = 0; level < this.#remaining.length; level++) {
      const keyOfEntry = this.#keyAt[level]!;
      if (!this.#isMap[level]) {
        segments.push(`[${this.#items[level]! - this.#remaining[level]! - 1}]`);
      } else if (keyOfEntry >= 0 && this.#remaining[level]! % 2 === 0) {
        // The entry's key was read and its value is where the walk is.
        segments.push(`.${keyText(this.bytes, keyOfEntry)}`);
      }
    }
    throw new BodyRuleError(pathText(segments), reason);
  }
}

/**
 * Whether bytes [start, end) are UTF-8. Most strings of a body are short ASCII, checked here
 * byte by byte: a Buffer view for isUtf8 would cost each of them an object.
 */
function isUtf8Text(bytes: Buffer, start: number, end: number): boolean {
  if (end - start <= SHORT_STRING) {
    let i = start;
    while (i < end && bytes[i]! < 0x80) i++;
    if (i === end) return true;
  }
  return isUtf8(bytes.subarray(start, end));
}

/** The first segments of a path, and how many levels more there are. */
function pathText(segments: readonly string[]): string {
  if (segments.length <= PATH_SEGMENTS_SHOWN) return segments.join('');
  const more = segments.length - PATH_SEGMENTS_SHOWN;
  return `${segments.slice(0, PATH_SEGMENTS_SHOWN).join('')}…(${more} levels more)`;
}

/** A map key as a path shows it: a plain string as it is, other strings quoted, numbers too. */
function keyText(bytes: Buffer, keyAt: number): string {
  const header = readHeader(bytes, keyAt);
  if (header.kind === 'str') {
    const text = bytes.toString('utf8', header.next, header.end);
    const shown =
      text.length > KEY_CHARACTERS_SHOWN ? `${text.slice(0, KEY_CHARACTERS_SHOWN)}…` : text;
    return PLAIN_KEY.test(text) ? shown : JSON.stringify(shown);
  }
  if (header.kind !== 'scalar') return `<${header.kind === 'ext' ? 'extension' : header.kind}>`;
  const value: unknown = keyReader.unpack(bytes.subarray(keyAt, header.end));
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return '<binary>';
  return String(value);
}

/** Why an extension of the timestamp type is not a timestamp, or undefined when it is one. */
function timestampProblem(bytes: Buffer, data: number, end: number): string | undefined {
  const length = end - data;
  let nanoseconds = 0;
  if (length === 8) nanoseconds = bytes.readUInt32BE(data) >>> 2;
  else if (length === 12) nanoseconds = bytes.readUInt32BE(data);
  else if (length !== 4) {
    return `a timestamp (extension -1) of ${length} bytes; the spec's are 4, 8 or 12`;
  }
  return nanoseconds > MAX_NANOSECONDS
    ? `a timestamp (extension -1) of ${nanoseconds} nanoseconds; at most ${MAX_NANOSECONDS}`
    : undefined;
}
