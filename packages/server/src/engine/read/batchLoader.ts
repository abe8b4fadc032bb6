// Keyed lookups that callers ask for in the same turn of the event loop are made together, with
// one call of a batch function (as DataLoader does): concurrent GetCells, Where pages and Put
// lookups on a partition share one SELECT instead of one each. A lookup made while no batch is
// out goes once the current task has run; one made while a batch is out, at the end of the turn
// (batchTiming.ts). A batch runs until the last of its callers gives up.
//
// Answers are positional, each caller's aligned with the keys it gave: a GetCells of 1,000 cells
// is looked up without a string built or a map filled per cell to find its answer again. The one
// string per key is the id that finds keys asked for twice in a turn, which are looked up once.
import { scheduleFlush } from '../base/batchTiming.js';
import { type CallScope, sharedScope } from '../base/callScope.js';
import { type ReadParts, splitKeys } from '../mysql/readSplit.js';

/** What was found of each key, at its position; undefined where nothing was. */
export type Found<V> = readonly (V | undefined)[];

interface PendingLoad<K, V> {
  readonly keys: readonly K[];
  /** The caller's call: the batch's statements run until the last of its callers gives up. */
  readonly scope: CallScope;
  resolve(found: Found<V>): void;
  reject(error: unknown): void;
}

export class BatchLoader<K, V> {
  private pending: PendingLoad<K, V>[] = [];
  private scheduled = false;
  /** Batches sent and not yet answered. */
  private out = 0;

  /**
   * `loadAll` looks up distinct keys and answers what it found of each, at its position; a
   * turn's keys are split into calls as `parts` says (readSplit.ts), made in parallel, each told
   * whether it is one part of several (to be read apart from the others), and the scope of the
   * calls it serves. Keys with the same `idOf` are the same key.
   */
  constructor(
    private readonly loadAll: (
      keys: readonly K[],
      apart: boolean,
      scope: CallScope,
    ) => Promise<Found<V>>,
    private readonly idOf: (key: K) => string,
    private readonly parts: ReadParts,
  ) {}

  /** What was found of `keys`, at their positions, for the call of `scope`. */
  load(keys: readonly K[], scope: CallScope): Promise<Found<V>> {
    if (keys.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ keys, scope, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        scheduleFlush(() => void this.flush(), this.out === 0);
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = [];
    // Each caller's keys as positions among the turn's distinct keys.
    const distinct: K[] = [];
    const positionOf = new Map<string, number>();
    const positions = pending.map(({ keys }) =>
      keys.map((key) => {
        const id = this.idOf(key);
        let position = positionOf.get(id);
        if (position === undefined) {
          position = distinct.length;
          positionOf.set(id, position);
          distinct.push(key);
        }
        return position;
      }),
    );
    const chunks = splitKeys(distinct, this.parts);
    let found: Found<V>;
    this.out += 1;
    try {
      // The batch is everyone's: it runs until the last of its callers gives up.
      const scope = sharedScope(pending.map((load) => load.scope));
      const answers = await Promise.all(
        chunks.map((chunk) => this.loadAll(chunk, chunks.length > 1, scope)),
      );
      // The chunks are consecutive slices of the distinct keys: their answers, one after the
      // other, are the distinct keys' answers.
      found = answers.length === 1 ? answers[0]! : concatenated(answers);
    } catch (error) {
      for (const load of pending) load.reject(error);
      return;
    } finally {
      this.out -= 1;
    }
    // A lone caller whose keys were all distinct asked for them in this order.
    if (pending.length === 1 && distinct.length === pending[0]!.keys.length) {
      pending[0]!.resolve(found);
      return;
    }
    pending.forEach(({ resolve }, i) => resolve(positions[i]!.map((position) => found[position])));
  }
}

/** The answers of consecutive chunks as one; kept apart from flat(), which drops holes. */
function concatenated<V>(answers: readonly Found<V>[]): Found<V> {
  const all: (V | undefined)[] = [];
  for (const answer of answers) for (const value of answer) all.push(value);
  return all;
}
