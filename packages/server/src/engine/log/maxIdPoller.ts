// Writes made through other servers reach this process's followers only by reading the max id
// of their tables. Were each follower to read them itself, idle followers would cost MySQL a
// query each per poll interval, a cost set by how many clients follow (SPEC §4.7 bounds query
// cost by configuration). So one poller per process reads, once per interval, every followed
// table of a partition in one statement, and hands the max ids to every follower of them.
import { UNBOUNDED } from '../base/callScope.js';
import { UnavailableError } from '../base/errors.js';
import type { RowId } from '../base/exactInteger.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { readMaxIds } from '../mysql/sql/contentReads.js';

export interface WatchedTable {
  readonly partition: number;
  readonly table: string;
}

/** What one read of a partition found: each table it read has a max id or an error. */
export interface MaxIdPoll {
  readonly maxIds: ReadonlyMap<string, RowId>;
  readonly errors: ReadonlyMap<string, unknown>;
}

/** Called with every poll of a partition it watches (the poll may hold other tables too). */
export type MaxIdListener = (poll: MaxIdPoll) => void;

/** One partition's polling: running while some listener watches one of its tables. */
interface PartitionPolling {
  /** Each watched table, and how many watches hold it. */
  readonly tables: Map<string, number>;
  readonly listeners: Set<MaxIdListener>;
  timer: NodeJS.Timeout | undefined;
  reading: boolean;
  /** When the next read may start: an interval after the last one started. */
  nextAt: number;
}

export class MaxIdPoller {
  private readonly polling = new Map<number, PartitionPolling>();
  private stopped = false;

  constructor(
    private readonly partitions: PartitionSet,
    readonly intervalMs: number,
  ) {}

  /**
   * Calls `listener` with each poll of the tables' partitions until the returned function is
   * called. The first poll of a partition no one watched starts an interval later: a follower
   * reads its shards itself before it waits.
   */
  watch(tables: readonly WatchedTable[], listener: MaxIdListener): () => void {
    if (this.stopped) throw closing(tables[0]?.partition ?? -1);
    const byPartition = new Map<number, string[]>();
    for (const { partition, table } of tables) {
      const some = byPartition.get(partition);
      if (some) some.push(table);
      else byPartition.set(partition, [table]);
    }
    for (const [partition, some] of byPartition) {
      let polling = this.polling.get(partition);
      if (!polling) {
        polling = {
          tables: new Map(),
          listeners: new Set(),
          timer: undefined,
          reading: false,
          nextAt: Date.now() + this.intervalMs,
        };
        this.polling.set(partition, polling);
      }
      for (const table of some) polling.tables.set(table, (polling.tables.get(table) ?? 0) + 1);
      polling.listeners.add(listener);
      this.schedule(partition, polling);
    }
    let watching = true;
    return () => {
      if (!watching) return;
      watching = false;
      for (const [partition, some] of byPartition) {
        const polling = this.polling.get(partition);
        if (!polling) continue;
        for (const table of some) {
          const holders = (polling.tables.get(table) ?? 1) - 1;
          if (holders > 0) polling.tables.set(table, holders);
          else polling.tables.delete(table);
        }
        polling.listeners.delete(listener);
        if (polling.listeners.size > 0) continue;
        clearTimeout(polling.timer);
        // A read out finds itself forgotten when it ends, and schedules nothing.
        this.polling.delete(partition);
      }
    };
  }

  /** Stops every partition's polling; watchers are told the partitions are unavailable. */
  stop(): void {
    this.stopped = true;
    const polling = [...this.polling];
    this.polling.clear();
    for (const [partition, { timer, tables, listeners }] of polling) {
      clearTimeout(timer);
      const error = closing(partition);
      const poll: MaxIdPoll = {
        maxIds: new Map(),
        errors: new Map([...tables.keys()].map((table) => [table, error])),
      };
      for (const listener of listeners) listener(poll);
    }
  }

  private schedule(partition: number, polling: PartitionPolling): void {
    if (polling.timer !== undefined || polling.reading) return;
    polling.timer = setTimeout(
      () => {
        polling.timer = undefined;
        void this.poll(partition, polling);
      },
      Math.max(0, polling.nextAt - Date.now()),
    );
  }

  private async poll(partition: number, polling: PartitionPolling): Promise<void> {
    polling.reading = true;
    polling.nextAt = Date.now() + this.intervalMs;
    const poll = await this.read(partition, [...polling.tables.keys()]);
    polling.reading = false;
    if (this.polling.get(partition) !== polling) return;
    for (const listener of [...polling.listeners]) listener(poll);
    this.schedule(partition, polling);
  }

  /**
   * The tables' max ids, or why each could not be read: never throws. The read serves no call
   * (not the one whose watch started the timer, whose cancel would leave it unsent for every
   * other follower).
   */
  private async read(partition: number, tables: readonly string[]): Promise<MaxIdPoll> {
    try {
      const maxIds = await this.partitions
        .at(partition)
        .read(UNBOUNDED, (reader) => readMaxIds(reader, tables));
      return { maxIds: new Map(tables.map((table, i) => [table, maxIds[i]!])), errors: new Map() };
    } catch (error) {
      if (tables.length === 1 || error instanceof UnavailableError) {
        return { maxIds: new Map(), errors: new Map(tables.map((table) => [table, error])) };
      }
      // One table's own failure (one dropped by hand) must not end the follows of the
      // partition's other tables: each table alone tells whose it is.
      const alone = await Promise.all(tables.map((table) => this.read(partition, [table])));
      return {
        maxIds: new Map(alone.flatMap((poll) => [...poll.maxIds])),
        errors: new Map(alone.flatMap((poll) => [...poll.errors])),
      };
    }
  }
}

function closing(partition: number): UnavailableError {
  return new UnavailableError(partition, 'the server is closing; follow through another');
}
