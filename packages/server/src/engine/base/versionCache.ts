// The latest version of each cell this server has written, or read under its table's log lock,
// with its body: what an append needs to know to write the next version without reading first
// (shardTransaction.ts writes from it in one round trip instead of two).
//
// An entry is a hint, never trusted: another server, the gem or a manual INSERT may have
// written a later version since. The write from it inserts version refKey + 1 under the log
// lock, and the content table's unique (uuid, column_name, ref_key) key refuses that row when
// the cell has moved on; the transaction then goes back to its savepoint and writes the group
// the usual way, which reads the cell. So a stale entry costs a round trip, never a gap, a duplicate or a merge onto
// the wrong body: versions are never changed or deleted, so a version seen committed with a
// body still has that body, and when version refKey + 1 goes in, refKey was the latest.
//
// A record this server created has no version of its other cells yet: each is remembered at
// NO_VERSION, so that its first write, the usual next step after a create, goes in one round trip
// too. Such an entry is a hint like any other: the insert of version 0 is refused when another
// writer got there first, because versions start at 0 and follow one another.
//
// Bounded by bytes: an entry counts its key, its objects and its body, as measured below. Bodies
// over MAX_REMEMBERED_BODY_BYTES are not kept (a merge onto such a cell reads it). The cells of
// records just created are kept apart, in a quarter of the bytes, until a write asks for one; the
// cells written to or read for a write take the rest. Each part is a generationalMap.ts weighed in
// bytes. So a stream of creates or an import, whose records may never be written again, replaces
// itself and never pushes out the cells that writes keep coming back to. With one part for all, the
// tens of thousands of creates of a full `pnpm bench` between its warm-up and its updates of 4,000
// records pushed those out, and most updates went the usual way, a round trip more each.
//
// A body is kept as a copy, a Latin-1 string of its bytes (one character a byte). It reaches
// the cache as a view into memory it does not own: a network chunk of mysql2's holding a whole
// result, or a slab of Node's allocation pool shared with a request's short-lived buffers. Kept
// as it came, it would keep all of that alive (single writes of 22-byte bodies held 1.6 KB each
// beyond what the cache counted: its bound did not bound its memory). A buffer of its own costs
// an allocation outside V8's heap, which V8 frees late (measured, a 1 KB body: 6 µs a copy,
// against nothing for the string, which V8 allocates and frees as any small object). Only a
// merge from memory needs the body, and turns the string back into a buffer.

import { GenerationalMap } from './generationalMap.js';

/** Larger bodies are not remembered. */
export const MAX_REMEMBERED_BODY_BYTES = 4 * 1024;
// Measured: 100,000 entries of random uuids held 262 bytes each without a body (the key, the
// entry, the maps' share); a body's string holds its bytes and 16 more, rounded up to 8.
const ENTRY_OVERHEAD_BYTES = 280;
const BODY_OVERHEAD_BYTES = 24;

/** The ref_key of a cell remembered to have no version. */
export const NO_VERSION = -1;

export interface CachedVersion {
  /** {@link NO_VERSION} for a cell remembered to have none. */
  readonly refKey: number;
  /** The version's body; undefined when it was not read or is too large to keep. */
  readonly body: Buffer | undefined;
}

interface Entry {
  readonly refKey: number;
  /** The body's bytes as a Latin-1 string; undefined when not kept. */
  readonly body: string | undefined;
  readonly bytes: number;
}

/** What a lookup answers: the entry, with its body made a buffer when first asked for. */
class Remembered implements CachedVersion {
  readonly refKey: number;
  private buffer: Buffer | undefined;

  constructor(private readonly entry: Entry) {
    this.refKey = entry.refKey;
  }

  get body(): Buffer | undefined {
    if (this.entry.body === undefined) return undefined;
    return (this.buffer ??= Buffer.from(this.entry.body, 'latin1'));
  }
}

/** The share of the bytes that the cells of records just created may hold. */
const CREATED_SHARE = 1 / 4;

export class VersionCache {
  private readonly created: GenerationalMap<Entry>;
  private readonly inUse: GenerationalMap<Entry>;
  private counters = { hits: 0, misses: 0, stale: 0 };

  /** Remembers cells up to about `capacityBytes` (bodies and keys); 0: none. */
  constructor(readonly capacityBytes: number) {
    if (!Number.isInteger(capacityBytes) || capacityBytes < 0) {
      throw new RangeError(`capacityBytes must be a whole number ≥ 0, got ${capacityBytes}`);
    }
    const createdBytes = Math.floor(capacityBytes * CREATED_SHARE);
    this.created = new GenerationalMap(createdBytes, weighEntry);
    this.inUse = new GenerationalMap(capacityBytes - createdBytes, weighEntry);
  }

  /** The latest version of the cell of `table` this server knows, if any. */
  get(table: string, uuid: string, cell: string): CachedVersion | undefined {
    const key = keyOf(table, uuid, cell);
    let entry = this.inUse.get(key);
    if (entry === undefined) {
      entry = this.created.delete(key);
      if (entry !== undefined) this.inUse.set(key, entry);
    }
    if (entry === undefined) {
      this.counters.misses += 1;
      return undefined;
    }
    this.counters.hits += 1;
    return new Remembered(entry);
  }

  /** Remembers a version seen committed (written, or read under the log lock). */
  set(table: string, uuid: string, cell: string, refKey: number, body: Buffer | undefined): void {
    if (this.capacityBytes === 0) return;
    const key = keyOf(table, uuid, cell);
    this.created.delete(key);
    this.inUse.set(key, entryOf(refKey, body));
  }

  /** Remembers a cell of a record this server just created: its base version 0, or no version. */
  setCreated(
    table: string,
    uuid: string,
    cell: string,
    refKey: number,
    body: Buffer | undefined,
  ): void {
    if (this.capacityBytes === 0) return;
    const key = keyOf(table, uuid, cell);
    const entry = entryOf(refKey, body);
    if (this.inUse.has(key)) this.inUse.set(key, entry);
    else this.created.set(key, entry);
  }

  /** Forgets a cell whose entry turned out stale. */
  forget(table: string, uuid: string, cell: string): void {
    this.counters.stale += 1;
    const key = keyOf(table, uuid, cell);
    this.created.delete(key);
    this.inUse.delete(key);
  }

  /** What is remembered now, and lookups answered, not answered and found stale so far. */
  stats() {
    return {
      entries: this.created.size + this.inUse.size,
      bytes: this.created.weight + this.inUse.weight,
      createdBytes: this.created.weight,
      capacityBytes: this.capacityBytes,
      ...this.counters,
    };
  }
}

function entryOf(refKey: number, body: Buffer | undefined): Entry {
  const kept =
    body !== undefined && body.length <= MAX_REMEMBERED_BODY_BYTES
      ? body.toString('latin1')
      : undefined;
  const bytes = ENTRY_OVERHEAD_BYTES + (kept === undefined ? 0 : BODY_OVERHEAD_BYTES + kept.length);
  return { refKey, body: kept, bytes };
}

const weighEntry = (entry: Entry) => entry.bytes;

// Table names are identifiers and uuids hold no space; a cell name may, so it comes last.
const keyOf = (table: string, uuid: string, cell: string) => `${table} ${uuid} ${cell}`;
