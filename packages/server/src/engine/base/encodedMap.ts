// MessagePack maps handled as bytes. A body is checked, read key by key and merged without
// decoding the values it carries, so every value keeps the exact bytes its writer chose: a
// float written by Ruby stays a float, a 64-bit integer keeps its width, whoever merges.
import { isUtf8 } from 'node:buffer';
import { Unpackr } from 'msgpackr';
import { type BodyLimits, BodyWalk } from './bodyRules.js';
import { MalformedMapError, readHeader } from './messagePackHeader.js';

export { MalformedMapError } from './messagePackHeader.js';

/** One top-level entry: its key (undefined when the key is not a string) and byte ranges. */
interface Entry {
  readonly key: string | undefined;
  /** Where the key starts: the entry is bytes [start, end). */
  readonly start: number;
  readonly valueStart: number;
  readonly end: number;
}

// Values are decoded one at a time, only when asked for (an index field's value): maps stay
// Maps and 64-bit integers stay exact.
const unpackr = new Unpackr({ mapsAsObjects: false, int64AsType: 'bigint', useRecords: false });

/** The encoding of an empty map. */
export const EMPTY_MAP: Buffer = Buffer.from([0x80]);

/** A MessagePack map read into its top-level entries; values are decoded only on demand. */
export class EncodedMap {
  private constructor(
    readonly bytes: Buffer,
    private readonly entries: readonly Entry[],
    /** The last entry of each string key, as a decoder would resolve a repeated key. */
    private readonly lastOf: ReadonlyMap<string, number>,
  ) {}

  /**
   * Reads a map, checking that every byte of it is well-formed MessagePack, and with `limits`
   * that every value in it is what readers take (bodyRules.ts); a body already stored is read
   * without them.
   * @throws MalformedMapError when it is not a map, or not well-formed, or has trailing bytes.
   * @throws BodyRuleError (with `limits`) for a value past a limit or that readers refuse.
   */
  static parse(bytes: Buffer, limits?: BodyLimits): EncodedMap {
    if (bytes.length === 0) throw new MalformedMapError('no bytes');
    const header = readHeader(bytes, 0);
    if (header.kind !== 'map') throw new MalformedMapError('not a map');
    const walk = limits && new BodyWalk(bytes, limits);
    const entries: Entry[] = [];
    const lastOf = new Map<string, number>();
    let offset = header.next;
    for (let i = 0; i < header.count; i++) {
      const start = offset;
      const keyHeader = readHeader(bytes, start);
      let key: string | undefined;
      let valueStart: number;
      if (keyHeader.kind === 'str') {
        walk?.key(keyHeader.next, keyHeader.end, start);
        key = bytes.toString('utf8', keyHeader.next, keyHeader.end);
        valueStart = keyHeader.end;
      } else {
        valueStart = skipValues(bytes, start, 1);
      }
      const end = walk ? walk.value(valueStart, start) : skipValues(bytes, valueStart, 1);
      if (key !== undefined) lastOf.set(key, entries.length);
      entries.push({ key, start, valueStart, end });
      offset = end;
    }
    if (offset !== bytes.length) throw new MalformedMapError('trailing bytes after the map');
    return new EncodedMap(bytes, entries, lastOf);
  }

  /** The number of entries (a repeated key counts each time). */
  get size(): number {
    return this.entries.length;
  }

  /** The string keys, each once, in order of first appearance. */
  keys(): IterableIterator<string> {
    return this.lastOf.keys();
  }

  /** Whether some entry has a key that is not a string. */
  get hasNonStringKey(): boolean {
    return this.entries.some((entry) => entry.key === undefined);
  }

  has(key: string): boolean {
    return this.lastOf.has(key);
  }

  /** The decoded value of `key` (undefined when absent). */
  get(key: string): unknown {
    const entry = this.entryOf(key);
    if (!entry) return undefined;
    // A string or an integer of up to 32 bits, what index values are, is read here: msgpackr's
    // decoder costs about three times as much for one short value. (A string that is not UTF-8
    // reads with U+FFFD, as Buffer decodes it; index values refuse one before they read it.)
    const bytes = this.bytes;
    const { valueStart, end } = entry;
    const type = bytes[valueStart]!;
    if (type <= 0x7f) return type;
    if (type >= 0xe0) return type - 0x100;
    if (type >= 0xa0 && type <= 0xbf) return bytes.toString('utf8', valueStart + 1, end);
    switch (type) {
      case 0xd9:
        return bytes.toString('utf8', valueStart + 2, end);
      case 0xcc:
        return bytes.readUInt8(valueStart + 1);
      case 0xcd:
        return bytes.readUInt16BE(valueStart + 1);
      case 0xce:
        return bytes.readUInt32BE(valueStart + 1);
      case 0xd0:
        return bytes.readInt8(valueStart + 1);
      case 0xd1:
        return bytes.readInt16BE(valueStart + 1);
      case 0xd2:
        return bytes.readInt32BE(valueStart + 1);
      default:
        return unpackr.unpack(bytes.subarray(valueStart, end));
    }
  }

  /**
   * 'a map', 'an array' or 'an extension' when the value of `key` is one, else undefined. A
   * caller that wants a scalar asks this first: decoding a container recurses once per level of
   * nesting (a value nested a few thousand deep, which a body of a few KB holds, overflows the
   * stack), and the decoder reads an extension by its process-wide table of types (msgpackr's
   * 0x42 reads as a bigint), so an extension could pass for a value it is not.
   */
  containerAt(key: string): 'a map' | 'an array' | 'an extension' | undefined {
    const entry = this.entryOf(key);
    if (!entry) return undefined;
    const { kind } = readHeader(this.bytes, entry.valueStart);
    if (kind === 'map') return 'a map';
    if (kind === 'array') return 'an array';
    return kind === 'ext' ? 'an extension' : undefined;
  }

  /**
   * False when the value of `key` is a string whose bytes are not UTF-8: decoded, each bad
   * sequence would read as U+FFFD, so different bytes could read as the same text.
   */
  isUtf8(key: string): boolean {
    const entry = this.entryOf(key);
    if (!entry) return true;
    const header = readHeader(this.bytes, entry.valueStart);
    return header.kind !== 'str' || isUtf8(this.bytes.subarray(header.next, header.end));
  }

  /**
   * This map without the given keys; the other entries keep their bytes. Their places in the
   * new bytes are known, so it is not parsed again.
   */
  without(keys: { has(key: string): boolean }): EncodedMap {
    const kept = this.entries.filter((entry) => entry.key === undefined || !keys.has(entry.key));
    if (kept.length === this.entries.length) return this;
    const bytes = writeMap(
      kept.length,
      kept.map((entry) => this.bytes.subarray(entry.start, entry.end)),
    );
    const entries: Entry[] = [];
    const lastOf = new Map<string, number>();
    let start = bytes.length - kept.reduce((sum, entry) => sum + entry.end - entry.start, 0);
    for (const entry of kept) {
      const shift = start - entry.start;
      if (entry.key !== undefined) lastOf.set(entry.key, entries.length);
      entries.push({
        key: entry.key,
        start,
        valueStart: entry.valueStart + shift,
        end: entry.end + shift,
      });
      start = entry.end + shift;
    }
    return new EncodedMap(bytes, entries, lastOf);
  }

  /**
   * This map with `patch`'s keys written over it, as bytes (the gem's shallow merge): a key of
   * both takes the patch's value in the position it had here, a key only in the patch is added
   * at the end in the patch's order, and every other entry keeps its bytes as they are.
   */
  mergedWith(patch: EncodedMap): Buffer {
    if (patch.size === 0) return this.bytes;
    // An empty map takes the patch as it is, unless the patch repeats a key.
    if (this.size === 0 && patch.lastOf.size === patch.size) return patch.bytes;
    const parts: Buffer[] = [];
    const written = new Set<string>();
    for (const entry of this.entries) {
      if (entry.key === undefined || !patch.has(entry.key)) {
        parts.push(this.bytes.subarray(entry.start, entry.end));
      } else if (!written.has(entry.key)) {
        written.add(entry.key);
        parts.push(patch.entryBytes(entry.key));
      }
    }
    for (const key of patch.keys()) {
      if (!written.has(key)) parts.push(patch.entryBytes(key));
    }
    return writeMap(parts.length, parts);
  }

  private entryOf(key: string): Entry | undefined {
    const index = this.lastOf.get(key);
    return index === undefined ? undefined : this.entries[index];
  }

  private entryBytes(key: string): Buffer {
    const entry = this.entryOf(key)!;
    return this.bytes.subarray(entry.start, entry.end);
  }
}

/** A map of `count` entries whose encoded key/value pairs are `parts`, in order. */
function writeMap(count: number, parts: readonly Buffer[]): Buffer {
  let header: Buffer;
  if (count <= 0x0f) {
    header = Buffer.from([0x80 | count]);
  } else if (count <= 0xffff) {
    header = Buffer.alloc(3);
    header[0] = 0xde;
    header.writeUInt16BE(count, 1);
  } else {
    header = Buffer.alloc(5);
    header[0] = 0xdf;
    header.writeUInt32BE(count, 1);
  }
  return Buffer.concat([header, ...parts]);
}

/**
 * Where the `count` values starting at `offset` end, without recursion (nesting depth costs
 * nothing). Every value takes at least one byte, so a declared count larger than the bytes left
 * is refused at once instead of being walked.
 */
function skipValues(bytes: Buffer, offset: number, count: number): number {
  let pending = count;
  let position = offset;
  while (pending > 0) {
    const header = readHeader(bytes, position);
    pending -= 1;
    if (header.kind === 'map' || header.kind === 'array') {
      pending += header.kind === 'map' ? 2 * header.count : header.count;
      position = header.next;
      if (pending > bytes.length - position) throw new MalformedMapError('truncated');
    } else {
      position = header.end;
    }
  }
  return position;
}
