// A map bounded by the weight of its entries (by default one each), in two generations of half
// the capacity each: entries go into the young one; when it is full, the old one is dropped and
// the young one becomes old. An entry read from the old generation moves back to the young one,
// so what is in use stays, and a lookup or an insert costs a Map operation or two (no per-entry
// list as in a strict LRU).

export class GenerationalMap<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private youngWeight = 0;
  private oldWeight = 0;
  private readonly generationWeight: number;

  /**
   * Holds entries weighing at most about `capacity` in all (an odd capacity is rounded up; an
   * entry heavier than half of it is held alone in its generation); 0 holds nothing.
   */
  constructor(
    readonly capacity: number,
    private readonly weigh: (value: V) => number = () => 1,
    /** Told of each entry an old generation drops (not of one deleted or replaced). */
    private readonly dropped?: (key: string, value: V) => void,
  ) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`capacity must be a whole number ≥ 0, got ${capacity}`);
    }
    this.generationWeight = Math.ceil(capacity / 2);
  }

  /** The value of `key`, if held; an entry of the old generation moves to the young one. */
  get(key: string): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.takeOld(key);
    if (old === undefined) return undefined;
    this.remember(key, old);
    return old;
  }

  /** Whether `key` is held, without moving it. */
  has(key: string): boolean {
    return this.young.has(key) || this.old.has(key);
  }

  set(key: string, value: V): void {
    if (this.capacity === 0) return;
    this.takeOld(key);
    this.remember(key, value);
  }

  /** Removes `key`, answering what it held. */
  delete(key: string): V | undefined {
    const young = this.young.get(key);
    if (young === undefined) return this.takeOld(key);
    this.young.delete(key);
    this.youngWeight -= this.weigh(young);
    return young;
  }

  /** Entries held now. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** What the entries held now weigh. */
  get weight(): number {
    return this.youngWeight + this.oldWeight;
  }

  private takeOld(key: string): V | undefined {
    const old = this.old.get(key);
    if (old === undefined) return undefined;
    this.old.delete(key);
    this.oldWeight -= this.weigh(old);
    return old;
  }

  private remember(key: string, value: V): void {
    const previous = this.young.get(key);
    const weight = this.weigh(value);
    if (previous !== undefined) {
      this.youngWeight -= this.weigh(previous);
    } else if (this.young.size > 0 && this.youngWeight + weight > this.generationWeight) {
      if (this.dropped) for (const [oldKey, oldValue] of this.old) this.dropped(oldKey, oldValue);
      this.old = this.young;
      this.oldWeight = this.youngWeight;
      this.young = new Map();
      this.youngWeight = 0;
    }
    this.young.set(key, value);
    this.youngWeight += weight;
  }
}
