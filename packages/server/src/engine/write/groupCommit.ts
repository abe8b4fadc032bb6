// Group commit: writes that arrive for a partition while its transactions are running wait and
// then go together in the next one, sharing its log locks, its reads, its multi-row INSERTs and
// its commit (each commit is a log flush). A lone write waits for nothing: with a transaction
// slot free it starts at the end of the current turn of the event loop, so that writes arriving
// together (a batch call, requests read from the same socket) still share one. A group large
// enough is shared among the free transaction slots, by shard (groupSplit.ts).
import { type CallScope, isAbandoned, latestDeadline } from '../base/callScope.js';
import { commitsOfAll } from '../base/consistency.js';
import { CancelledError, DeadlineExceededError, ResourceExhaustedError } from '../base/errors.js';
import { splitByShard } from './groupSplit.js';
import { itemBytes, type ItemOutcome, type WriteItem } from './writeItems.js';

export interface GroupLimits {
  /** Transactions one partition runs at once; writes queue while all are busy. */
  readonly concurrency: number;
  /** A group takes callers' items up to this many (a larger single call goes alone). */
  readonly maxItems: number;
  /** ... and up to this many bytes of bodies. */
  readonly maxBytes: number;
  /**
   * Bytes of bodies that may wait for a transaction; a write beyond is refused with
   * RESOURCE_EXHAUSTED rather than held in memory while the partition falls behind.
   */
  readonly maxQueuedBytes: number;
  /**
   * A group is shared among free transaction slots only in parts of at least this many items
   * (see groupSplit.ts); DEFAULT_GROUP_LIMITS' when left out.
   */
  readonly minSplitItems?: number;
}

export const DEFAULT_GROUP_LIMITS = {
  concurrency: 2,
  maxItems: 2000,
  // A group of callers this large still goes in one round trip from remembered versions: its
  // INSERTs' text (bodies as hex, twice their size, and each row's other values) stays within
  // the 4 MiB a round trip carries (shardTransaction.ts). A larger group would read its cells
  // under its locks first: at 8 MiB, WriteCells of 500 cells at 16 in flight formed groups of
  // some 1,200 writes, most of them too large for one trip, and ran a third slower. A merge
  // counts its patch here, and stores the merged body: merges onto large bodies may still
  // make a group too large for one trip.
  maxBytes: 1536 * 1024,
  maxQueuedBytes: 64 * 1024 * 1024,
  minSplitItems: 8,
} as const satisfies GroupLimits;

/** What a group commit has done so far. */
export interface GroupStats {
  /** Transactions run (each group is one, whatever its retries). */
  groups: number;
  /** Items written through them. */
  items: number;
}

/** Upper bounds of the group-size buckets of {@link GroupActivity.groupSizes}. */
export const GROUP_SIZE_BOUNDS: readonly number[] = [
  1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,
];

/** A partition's group commit now and so far, for metrics. */
export interface GroupActivity extends GroupStats {
  /** Transactions running now. */
  readonly running: number;
  /** Writes waiting for a transaction. */
  readonly waiting: number;
  /**
   * Groups by number of items: [i] counts groups of at most GROUP_SIZE_BOUNDS[i] items (and
   * more than the bound before); the last entry counts groups larger than every bound.
   */
  readonly groupSizes: readonly number[];
}

/** One caller's items: they stay together, in order, in one group. */
interface Unit {
  readonly items: readonly WriteItem[];
  /** The content shards the items write. */
  readonly shards: readonly number[];
  readonly bytes: number;
  /**
   * The caller's call: the group's statements run until the last of its callers' deadlines
   * passes. A caller that has gone before its items join a group takes them back; once they
   * have, they are written whatever becomes of it, all or nothing.
   */
  readonly scope: CallScope;
  resolve(outcomes: ItemOutcome[]): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private readonly queue: Unit[] = [];
  private running = 0;
  private scheduled = false;
  private queuedBytes = 0;
  private readonly counters: GroupStats = { groups: 0, items: 0 };
  private readonly groupSizes = new Array<number>(GROUP_SIZE_BOUNDS.length + 1).fill(0);

  /**
   * `runGroup` writes a group's items in one transaction, for the calls of `scope`, and answers
   * an outcome per item; `shardOf` is the content shard an item writes.
   */
  constructor(
    private readonly runGroup: (
      scope: CallScope,
      items: readonly WriteItem[],
    ) => Promise<ItemOutcome[]>,
    private readonly shardOf: (item: WriteItem) => number,
    private readonly limits: GroupLimits = DEFAULT_GROUP_LIMITS,
    /** Names the partition in errors. */
    private readonly partition = 0,
  ) {}

  /**
   * Writes the items, in order, in one transaction shared with other callers' items; answers
   * their outcomes in order. Rejects when that transaction fails as a whole. `scope` is the
   * call that writes them.
   */
  submit(scope: CallScope, items: readonly WriteItem[]): Promise<ItemOutcome[]> {
    const bytes = items.reduce((sum, item) => sum + itemBytes(item), 0);
    // A call alone may exceed the bound (it is bounded by the message size): it waits only
    // for an empty queue.
    if (this.queuedBytes > 0 && this.queuedBytes + bytes > this.limits.maxQueuedBytes) {
      const waitingMiB = (this.queuedBytes / 1024 / 1024).toFixed(1);
      return Promise.reject(
        new ResourceExhaustedError(
          `partition ${this.partition} has ${waitingMiB} MiB of writes waiting for MySQL; retry after a backoff`,
        ),
      );
    }
    this.queuedBytes += bytes;
    return new Promise((resolve, reject) => {
      const shards = [...new Set(items.map(this.shardOf))];
      this.queue.push({ items, shards, bytes, scope, resolve, reject });
      this.schedule();
    });
  }

  get stats(): GroupStats {
    return { ...this.counters };
  }

  /** Writes waiting for a transaction. */
  get waiting(): number {
    return this.queue.reduce((sum, unit) => sum + unit.items.length, 0);
  }

  get activity(): GroupActivity {
    return {
      ...this.counters,
      running: this.running,
      waiting: this.waiting,
      groupSizes: [...this.groupSizes],
    };
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.limits.concurrency) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.startGroups();
    });
  }

  private startGroups(): void {
    while (this.running < this.limits.concurrency && this.queue.length > 0) {
      const group = this.takeGroup();
      if (group.length === 0) return;
      const parts = splitByShard(
        group,
        this.limits.concurrency - this.running,
        this.limits.minSplitItems ?? DEFAULT_GROUP_LIMITS.minSplitItems,
        (unit) => unit.shards,
        (unit) => unit.items.length,
      );
      for (const units of parts) {
        this.running += 1;
        void this.runUnits(units).finally(() => {
          this.running -= 1;
          // Whatever queued meanwhile has waited a whole transaction: go at once.
          this.startGroups();
        });
      }
    }
  }

  /**
   * The next group: units from the head of the queue within the limits, at least one unless
   * every unit left has outlived its caller's deadline or lost its caller (those are refused).
   */
  private takeGroup(): Unit[] {
    const units: Unit[] = [];
    let items = 0;
    let bytes = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      const gaveUp =
        next.scope.deadline <= Date.now()
          ? new DeadlineExceededError(
              `the call's deadline passed while its writes waited for partition ${this.partition}; nothing was written`,
            )
          : isAbandoned(next.scope)
            ? new CancelledError(
                `the call was cancelled while its writes waited for partition ${this.partition}; nothing was written`,
              )
            : undefined;
      if (gaveUp) {
        // Its caller has given up: written now, it would commit a write reported as failed.
        this.queue.shift();
        this.queuedBytes -= next.bytes;
        next.reject(gaveUp);
        continue;
      }
      const fits =
        items + next.items.length <= this.limits.maxItems &&
        bytes + next.bytes <= this.limits.maxBytes;
      if (units.length > 0 && !fits) break;
      units.push(this.queue.shift()!);
      items += next.items.length;
      bytes += next.bytes;
      this.queuedBytes -= next.bytes;
    }
    return units;
  }

  private async runUnits(units: readonly Unit[]): Promise<void> {
    const items = units.flatMap((unit) => unit.items);
    this.counters.groups += 1;
    this.counters.items += items.length;
    const bucket = GROUP_SIZE_BOUNDS.findIndex((bound) => items.length <= bound);
    this.groupSizes[bucket === -1 ? GROUP_SIZE_BOUNDS.length : bucket]! += 1;
    try {
      // No caller's cancel stops the group: its statements all go, and it commits all or
      // nothing.
      // Every caller's answer carries the group's commits (its session token).
      const scope: CallScope = {
        deadline: latestDeadline(units.map((unit) => unit.scope.deadline)),
        commits: commitsOfAll(units.map((unit) => unit.scope.commits)),
      };
      const outcomes = await this.runGroup(scope, items);
      let offset = 0;
      for (const unit of units) {
        unit.resolve(outcomes.slice(offset, offset + unit.items.length));
        offset += unit.items.length;
      }
    } catch (error) {
      for (const unit of units) unit.reject(error);
    }
  }
}
