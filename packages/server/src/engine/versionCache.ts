// The latest version of each cell this server has written, or read under its table's log lock,
// with its body: what an append needs to know to write the next version without reading first
// (shardTransaction.ts writes from it in one round trip instead of two).
//
// An entry is a hint, never trusted: another server, the gem or a manual INSERT may have
// written a later version since. The write from it inserts version refKey + 1 under the log
// lock, and the content table's unique (uuid, column_name, ref_key) key refuses that row when
// the cell has moved on; the transaction is then rolled back and written the usual way, which
// reads the cell. So a stale entry costs a round trip, never a gap, a duplicate or a merge onto
// the wrong body: versions are never changed or deleted, so a version seen committed with a
// body still has that body, and when version refKey + 1 goes in, refKey was the latest.
//
// Bounded by entries (generationalMap.ts); bodies over MAX_REMEMBERED_BODY_BYTES are not kept
// (a merge onto such a cell reads it), so the cache holds at most about capacity × 4 KiB.
import { GenerationalMap } from './generationalMap.js';

/** Larger bodies are not remembered: the bound on the cache's bytes is the entries' bound. */
export const MAX_REMEMBERED_BODY_BYTES = 4 * 1024;

export interface CachedVersion {
  readonly refKey: number;
  /** The version's body; undefined when it was not read or is too large to keep. */
  readonly body: Buffer | undefined;
}

export class VersionCache {
  private readonly entries: GenerationalMap<CachedVersion>;
  private counters = { hits: 0, misses: 0, stale: 0 };

  /** At most `capacity` cells are remembered (an odd capacity is rounded up); 0: none. */
  constructor(readonly capacity: number) {
    this.entries = new GenerationalMap(capacity);
  }

  /** The latest version of the cell of `table` this server knows, if any. */
  get(table: string, uuid: string, cell: string): CachedVersion | undefined {
    const version = this.entries.get(keyOf(table, uuid, cell));
    if (version === undefined) this.counters.misses += 1;
    else this.counters.hits += 1;
    return version;
  }

  /** Remembers a version seen committed (written, or read under the log lock). */
  set(table: string, uuid: string, cell: string, refKey: number, body: Buffer | undefined): void {
    const kept = body !== undefined && body.length <= MAX_REMEMBERED_BODY_BYTES ? body : undefined;
    this.entries.set(keyOf(table, uuid, cell), { refKey, body: kept });
  }

  /** Forgets a cell whose entry turned out stale. */
  forget(table: string, uuid: string, cell: string): void {
    this.counters.stale += 1;
    this.entries.delete(keyOf(table, uuid, cell));
  }

  /** Cells remembered now, and lookups answered, not answered and found stale so far. */
  stats(): { entries: number; capacity: number; hits: number; misses: number; stale: number } {
    return { entries: this.entries.size, capacity: this.capacity, ...this.counters };
  }
}

// Table names are identifiers and uuids hold no space; a cell name may, so it comes last.
const keyOf = (table: string, uuid: string, cell: string) => `${table} ${uuid} ${cell}`;
