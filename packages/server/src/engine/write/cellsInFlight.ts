// Groups of one server that write the same cell go one after the other. Started together, both
// would take the cell's next version from the version cache, and the later one, once the
// earlier committed, would find that version taken: its INSERTs rolled back to the savepoint,
// then the read under locks it had hoped to skip. Waiting instead, it plans from what the
// earlier committed and goes in one round trip. MySQL would have made it wait anyway: a cell's
// versions are written under its shard's log lock.

export class CellsInFlight {
  /** Each cell being written, to when the group writing it is over. */
  private readonly writing = new Map<string, Promise<void>>();

  /** Cells being written now. */
  get size(): number {
    return this.writing.size;
  }

  /**
   * Waits until no earlier group writes any of `keys`, then holds them for the caller, who
   * calls the answer once its group is over (committed or not).
   */
  async enter(keys: readonly string[]): Promise<() => void> {
    for (;;) {
      const earlier = new Set<Promise<void>>();
      for (const key of keys) {
        const over = this.writing.get(key);
        if (over) earlier.add(over);
      }
      if (earlier.size === 0) break;
      await Promise.all(earlier);
    }
    let leave!: () => void;
    const over = new Promise<void>((resolve) => (leave = resolve));
    for (const key of keys) this.writing.set(key, over);
    return () => {
      for (const key of keys) if (this.writing.get(key) === over) this.writing.delete(key);
      leave();
    };
  }
}
