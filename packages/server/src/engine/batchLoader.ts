// Keyed lookups that callers ask for in the same turn of the event loop are made together, with
// one call of a batch function (as DataLoader does): concurrent GetCells, Where pages and Put
// lookups on a partition share one SELECT instead of one each. A lone lookup waits for nothing
// but the end of the current turn. A batch runs until the last of its callers gives up.
import { type CallScope, currentScope, sharedScope, withScope } from './callScope.js';
import { type ReadParts, splitKeys } from './readSplit.js';

interface PendingLoad<K, V> {
  readonly keys: readonly K[];
  /** The caller's call: the batch's statements run until the last of its callers gives up. */
  readonly scope: CallScope;
  resolve(found: Map<string, V>): void;
  reject(error: unknown): void;
}

export class BatchLoader<K, V> {
  private pending: PendingLoad<K, V>[] = [];
  private scheduled = false;

  /**
   * `loadAll` looks up distinct keys and answers what it found, by `keyOf`; a turn's keys are
   * split into calls as `parts` says (readSplit.ts), made in parallel, each told whether it is
   * one part of several (to be read apart from the others).
   */
  constructor(
    private readonly loadAll: (keys: readonly K[], apart: boolean) => Promise<Map<string, V>>,
    private readonly keyOf: (key: K) => string,
    private readonly parts: ReadParts,
  ) {}

  /** What was found of `keys`, by `keyOf`; keys not found are absent. */
  load(keys: readonly K[]): Promise<Map<string, V>> {
    if (keys.length === 0) return Promise.resolve(new Map());
    return new Promise((resolve, reject) => {
      this.pending.push({ keys, scope: currentScope(), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = [];
    // Each key's id once: ids are strings built from the key, and a turn may hold thousands.
    const distinct = new Map<string, K>();
    const idsOf = pending.map(({ keys }) =>
      keys.map((key) => {
        const id = this.keyOf(key);
        distinct.set(id, key);
        return id;
      }),
    );
    const chunks = splitKeys([...distinct.values()], this.parts);
    let found: Map<string, V>;
    try {
      // The turn that flushes ran under the first caller's scope; the batch is everyone's.
      const scope = sharedScope(pending.map((load) => load.scope));
      const answers = await withScope(scope, () =>
        Promise.all(chunks.map((chunk) => this.loadAll(chunk, chunks.length > 1))),
      );
      found = answers[0] ?? new Map();
      for (const answer of answers.slice(1)) {
        for (const [id, value] of answer) found.set(id, value);
      }
    } catch (error) {
      for (const load of pending) load.reject(error);
      return;
    }
    // A lone caller asked for every key looked up: what was found is its answer as it is.
    if (pending.length === 1) {
      pending[0]!.resolve(found);
      return;
    }
    pending.forEach(({ resolve }, i) => {
      const mine = new Map<string, V>();
      for (const id of idsOf[i]!) {
        const value = found.get(id);
        if (value !== undefined) mine.set(id, value);
      }
      resolve(mine);
    });
  }
}
