// A map bounded by entries, in two generations of half the capacity each: entries go into the
// young one; when it is full, the old one is dropped and the young one becomes old. An entry
// read from the old generation moves back to the young one, so what is in use stays, and a
// lookup or an insert costs a Map operation or two (no per-entry list as in a strict LRU).

export class GenerationalMap<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private readonly generationSize: number;

  /** At most `capacity` entries are held (an odd capacity is rounded up); 0 holds nothing. */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`capacity must be a whole number ≥ 0, got ${capacity}`);
    }
    this.generationSize = Math.ceil(capacity / 2);
  }

  /** The value of `key`, if held; an entry of the old generation moves to the young one. */
  get(key: string): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.old.get(key);
    if (old === undefined) return undefined;
    this.old.delete(key);
    this.remember(key, old);
    return old;
  }

  set(key: string, value: V): void {
    if (this.capacity === 0) return;
    this.old.delete(key);
    this.remember(key, value);
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  /** Entries held now. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  private remember(key: string, value: V): void {
    if (!this.young.has(key) && this.young.size >= this.generationSize) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}
