// What one follow stream (Each with follow) learns of its shards between its own reads: which
// of them a write through this server touched, and their max ids as the process's poller last
// read them. The stream reads a shard again only when one of these says it moved past its
// cursor, so an idle follower costs MySQL nothing of its own.
//
// A commit through this server also hands over the cells it stored, and the stream sends them
// without reading the shard when they begin right after its cursor and follow one another:
// ids are unique, so no other cell lies between them. Any other case (cells of another
// server's commit first, a stream still catching up, more than it keeps) falls back to the
// read, and a write the cells did not show is found by the poll as before.
import { type RowId, offsetId } from '../base/exactInteger.js';
import type { LogNotifier } from './logNotifier.js';
import type { MaxIdPoll, MaxIdPoller } from './maxIdPoller.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';

/**
 * The most bytes of committed cells a stream keeps to send without a read; past them it drops
 * them and reads. Admission reserves them with the stream's read-ahead.
 */
export const MAX_HANDED_OVER_BYTES = 64 * 1024;
/** About what a kept cell weighs besides its body (its object, id, uuid and name). */
const CELL_OVERHEAD_BYTES = 128;

/**
 * The cells one commit stored in one table, as handed over: their bodies share one buffer
 * (logNotifier.ts), held until the last of them is sent, so they count as one.
 */
interface Commit {
  readonly bytes: number;
  kept: number;
}

interface KeptCell {
  readonly cell: StoredCell;
  readonly commit: Commit;
}

/** Whether `id` is the one right after `previous`; by order, not ===: an id may be a bigint. */
const comesRightAfter = (id: RowId, previous: RowId) => {
  const next = offsetId(previous, 1);
  return !(id < next) && !(id > next);
};

export interface FollowedShard {
  readonly shard: number;
  readonly partition: number;
  /** The shard's content table of the followed model. */
  readonly table: string;
}

export class ShardWatch {
  private readonly shardOf: ReadonlyMap<string, number>;
  /**
   * Shards written through this server since their last read began. A notified shard is read,
   * or sent from the cells its commits handed over, whatever the polls say: a poll that
   * started before the write's commit would say it had not moved.
   */
  private readonly notified = new Set<number>();
  /** The highest max id polls have read of each shard: it stays news until read past. */
  private readonly maxIds = new Map<number, RowId>();
  /**
   * Shards read since the last poll of them. A read that did not reach the max id a poll of
   * the primary read (the read was a replica's, behind it) waits for the next poll before the
   * shard is read again, instead of reading the replica again at once, round after round.
   */
  private readonly readSincePoll = new Set<number>();
  /**
   * Cells commits through this server stored in each shard, one after another by id, kept
   * until sent or dropped; a shard in `mustRead` has none kept.
   */
  private readonly handedOver = new Map<number, KeptCell[]>();
  private handedOverBytes = 0;
  /** Shards a commit wrote with cells not kept: only a read sees them. */
  private readonly mustRead = new Set<number>();
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
    /** Bytes of cells handed over by commits it holds at most; the rest it reads. */
    private readonly maxHandedOverBytes = MAX_HANDED_OVER_BYTES,
  ) {
    this.shardOf = new Map(shards.map(({ shard, table }) => [table, shard]));
    this.unsubscribe = notifier.subscribe(
      shards.map(({ table }) => table),
      (table, cells) => {
        const shard = this.shardOf.get(table)!;
        this.notified.add(shard);
        this.keep(shard, cells);
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
    for (const shard of shards) {
      this.notified.delete(shard);
      this.mustRead.delete(shard);
      this.readSincePoll.add(shard);
    }
  }

  /**
   * The next at most `limit` cells of `shard` after `cursor` from what commits handed over,
   * when they are the very next ones (none when the stream has sent them all); undefined when
   * the shard must be read. Once every kept cell is sent, so is every write notified: the
   * shard needs no read for them.
   */
  handedOverPage(shard: number, cursor: RowId, limit: number): StoredCell[] | undefined {
    const kept = this.handedOver.get(shard);
    if (!kept || this.mustRead.has(shard)) return undefined;
    let sent = 0;
    while (sent < kept.length && !(kept[sent]!.cell.id > cursor)) sent += 1;
    const next = kept.slice(sent, sent + limit).map(({ cell }) => cell);
    if (next.length > 0 && !comesRightAfter(next[0]!.id, cursor)) return undefined;
    this.drop(shard, sent + next.length);
    if (!this.handedOver.has(shard)) this.notified.delete(shard);
    return next;
  }

  /** Whether cells handed over for `shard` are still kept. */
  holdsHandedOver(shard: number): boolean {
    return this.handedOver.has(shard);
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
    this.handedOver.clear();
    this.handedOverBytes = 0;
  }

  /**
   * Keeps a commit's cells of `shard` when they follow those kept, one id after another, and
   * fit; otherwise the shard must be read, and nothing of it is kept until then.
   */
  private keep(shard: number, cells: readonly StoredCell[]): void {
    if (this.mustRead.has(shard)) return;
    const kept = this.handedOver.get(shard) ?? [];
    let last = kept[kept.length - 1]?.cell.id;
    let follows = cells.length > 0;
    for (const cell of cells) {
      if (last !== undefined && !comesRightAfter(cell.id, last)) follows = false;
      last = cell.id;
    }
    const commit: Commit = {
      bytes: cells.reduce((sum, cell) => sum + cell.body.length + CELL_OVERHEAD_BYTES, 0),
      kept: cells.length,
    };
    if (!follows || this.handedOverBytes + commit.bytes > this.maxHandedOverBytes) {
      this.drop(shard, kept.length);
      this.mustRead.add(shard);
      return;
    }
    for (const cell of cells) kept.push({ cell, commit });
    this.handedOver.set(shard, kept);
    this.handedOverBytes += commit.bytes;
  }

  /** Drops the first `count` cells kept of `shard`; a commit counts until its last goes. */
  private drop(shard: number, count: number): void {
    const kept = this.handedOver.get(shard);
    if (!kept) return;
    for (const { commit } of kept.slice(0, count)) {
      commit.kept -= 1;
      if (commit.kept === 0) this.handedOverBytes -= commit.bytes;
    }
    if (count >= kept.length) this.handedOver.delete(shard);
    else this.handedOver.set(shard, kept.slice(count));
  }

  private take(): Set<number> {
    for (const error of this.failures.values()) throw error;
    const moved = new Set(this.notified);
    for (const [shard, maxId] of this.maxIds) {
      if (maxId > (this.cursors.get(shard) ?? 0) && !this.readSincePoll.has(shard)) {
        moved.add(shard);
      }
    }
    return moved;
  }

  private polled(poll: MaxIdPoll): void {
    let news = false;
    for (const [table, maxId] of poll.maxIds) {
      const shard = this.shardOf.get(table);
      if (shard === undefined) continue;
      this.failures.delete(shard);
      this.readSincePoll.delete(shard);
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
