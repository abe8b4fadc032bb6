// What one follow stream (Each with follow) learns of its shards between its own reads: which
// of them a write through this server touched, and their max ids as the process's poller last
// read them. The stream reads a shard again only when one of these says it moved past its
// cursor, so an idle follower costs MySQL nothing of its own.
import type { RowId } from './exactInteger.js';
import type { LogNotifier } from './logNotifier.js';
import type { MaxIdPoll, MaxIdPoller } from './maxIdPoller.js';

export interface FollowedShard {
  readonly shard: number;
  readonly partition: number;
  /** The shard's content table of the followed model. */
  readonly table: string;
}

export class ShardWatch {
  private readonly shardOf: ReadonlyMap<string, number>;
  /**
   * Shards written through this server since their last read began. A notified shard is read
   * whatever the polls say: a poll that started before the write's commit would say it had
   * not moved.
   */
  private readonly notified = new Set<number>();
  /** The highest max id polls have read of each shard: it stays news until read past. */
  private readonly maxIds = new Map<number, RowId>();
  /** Shards whose last poll failed, and why: the stream ends with it, as with its own reads. */
  private readonly failures = new Map<number, unknown>();
  private wake: (() => void) | undefined;
  private readonly unsubscribe: () => void;
  private readonly unwatch: () => void;

  constructor(
    shards: readonly FollowedShard[],
    /** The stream's cursors, as it advances them. */
    private readonly cursors: ReadonlyMap<number, RowId>,
    notifier: LogNotifier,
    poller: MaxIdPoller,
  ) {
    this.shardOf = new Map(shards.map(({ shard, table }) => [table, shard]));
    this.unsubscribe = notifier.subscribe(
      shards.map(({ table }) => table),
      (table) => {
        this.notified.add(this.shardOf.get(table)!);
        this.wake?.();
      },
    );
    try {
      this.unwatch = poller.watch(shards, (poll) => this.polled(poll));
    } catch (error) {
      this.unsubscribe();
      throw error;
    }
  }

  /** A read of these shards is about to start: it will see every write notified so far. */
  reading(shards: Iterable<number>): void {
    for (const shard of shards) this.notified.delete(shard);
  }

  /**
   * The shards that may have cells past their cursor: at once when some may, else once a
   * write or a poll says so; none after `timeoutMs` or once `signal` aborts. Throws why the
   * last poll of one of the shards failed.
   */
  async moved(timeoutMs: number, signal: AbortSignal): Promise<Set<number>> {
    const moved = this.take();
    if (moved.size > 0 || signal.aborted) return moved;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
    return signal.aborted ? new Set() : this.take();
  }

  /** Leaves the notifier and the poller: a stream that ended leaves nothing registered. */
  close(): void {
    this.unsubscribe();
    this.unwatch();
  }

  private take(): Set<number> {
    for (const error of this.failures.values()) throw error;
    const moved = new Set(this.notified);
    for (const [shard, maxId] of this.maxIds) {
      if (maxId > (this.cursors.get(shard) ?? 0)) moved.add(shard);
    }
    return moved;
  }

  private polled(poll: MaxIdPoll): void {
    let news = false;
    for (const [table, maxId] of poll.maxIds) {
      const shard = this.shardOf.get(table);
      if (shard === undefined) continue;
      this.failures.delete(shard);
      if (maxId > (this.maxIds.get(shard) ?? 0)) this.maxIds.set(shard, maxId);
      if (maxId > (this.cursors.get(shard) ?? 0)) news = true;
    }
    for (const [table, error] of poll.errors) {
      const shard = this.shardOf.get(table);
      if (shard === undefined) continue;
      this.failures.set(shard, error);
      news = true;
    }
    if (news) this.wake?.();
  }
}
