// Which record a tuple of primary values leads to, remembered, so that a put coming back to
// the same values (the common case: a rate updated many times) needs no lookup round trip.
//
// A record's primary-index row is written once, by the transaction that creates the record,
// and never changed; nothing deletes one except a create that a gem-made unique index refuses
// (putOperation.ts), which evicts it here. An entry is only ever a hint, though: the
// transaction that appends through it reads the row again under the log lock and gives the
// append up when the row no longer leads to that record (shardTransaction.ts), so a row changed
// behind our back (another process, manual SQL) costs a retry, never a misplaced version.
//
// Bounded by entries (generationalMap.ts). An entry takes about 180 bytes of heap (a key of a
// three-field primary index, a uuid, the Map's share).
import { GenerationalMap } from '../base/generationalMap.js';

export class PrimaryKeyCache {
  private readonly entries: GenerationalMap<string>;
  private counters = { hits: 0, misses: 0 };

  /** At most `capacity` entries are held (an odd capacity is rounded up); 0 remembers nothing. */
  constructor(readonly capacity: number) {
    this.entries = new GenerationalMap(capacity);
  }

  /** The uuid the key leads to, if remembered. */
  get(key: string): string | undefined {
    const uuid = this.entries.get(key);
    if (uuid === undefined) this.counters.misses += 1;
    else this.counters.hits += 1;
    return uuid;
  }

  set(key: string, uuid: string): void {
    this.entries.set(key, uuid);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  /** Lookups answered and not answered so far. */
  get stats(): { hits: number; misses: number } {
    return { ...this.counters };
  }
}
