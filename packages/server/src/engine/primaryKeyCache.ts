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
// Bounded by entries, in two generations of half the capacity each: entries go into the young
// one; when it is full, the old one is dropped and the young one becomes old. An entry read from
// the old generation moves back to the young one, so what is in use stays, and a lookup or an
// insert costs a Map operation or two (no per-entry list as in a strict LRU). An entry takes
// about 180 bytes of heap (a key of a three-field primary index, a uuid, the Map's share).

export class PrimaryKeyCache {
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  private readonly generationSize: number;
  private counters = { hits: 0, misses: 0 };

  /** At most `capacity` entries are held (an odd capacity is rounded up); 0 remembers nothing. */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`capacity must be a whole number ≥ 0, got ${capacity}`);
    }
    this.generationSize = Math.ceil(capacity / 2);
  }

  /** The uuid the key leads to, if remembered. */
  get(key: string): string | undefined {
    const young = this.young.get(key);
    if (young !== undefined) {
      this.counters.hits += 1;
      return young;
    }
    const old = this.old.get(key);
    if (old === undefined) {
      this.counters.misses += 1;
      return undefined;
    }
    this.counters.hits += 1;
    this.old.delete(key);
    this.remember(key, old);
    return old;
  }

  set(key: string, uuid: string): void {
    if (this.capacity === 0) return;
    // A uuid from randomUUID() is a concatenation of many short strings (about 600 bytes of
    // heap in all) until V8 flattens it, which reading a character does: about 60 bytes then.
    uuid.charCodeAt(0);
    this.old.delete(key);
    this.remember(key, uuid);
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  /** Entries held now. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** Lookups answered and not answered so far. */
  get stats(): { hits: number; misses: number } {
    return { ...this.counters };
  }

  private remember(key: string, uuid: string): void {
    if (!this.young.has(key) && this.young.size >= this.generationSize) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, uuid);
  }
}
