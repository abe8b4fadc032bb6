// The partition map a server routes by, kept current while it runs (SPEC §7, moving shards):
// read from the store, published by a move, noticed by the health probe, and the fence that
// sends an operation to a shard's new partition. The map itself is pure (model/partitionMap.ts);
// its SQL is in sql/partitionMap.ts.
//
// The fence is the absence of the shard's tables: a move's cut-over renames the shard's tables
// away at its old place, then publishes the next map on every partition. A statement of a
// server still routing by the older map then fails with ER_NO_SUCH_TABLE (ShardMovedError,
// sqlErrors.ts); the operation reads the map and runs again where the shard now is. A write
// whose transaction failed so was rolled back whole: running it again is a fresh attempt, and
// request ids keep it exactly-once.
import { type CallScope, UNBOUNDED } from '../base/callScope.js';
import { FailedPreconditionError, ShardMovedError, UnavailableError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { StoreLayout } from '../model/layout.js';
import { PartitionMap, type PartitionMapRecord } from '../model/partitionMap.js';
import type { Partition, PartitionSet } from './partitions.js';
import { storeTableName } from '../model/tableNames.js';
import { readActiveMoves } from './sql/shardMoves.js';
import {
  ensurePartitionMapTable,
  insertPartitionMap,
  readLatestPartitionMap,
} from './sql/partitionMap.js';

/** Connects to a partition the map names and this server has no pool for yet. */
export type ConnectPartition = (id: number, location: string) => Partition | Promise<Partition>;

/** How often one operation is run again after a missing table, and the first wait between. */
const FENCE_ATTEMPTS = 6;
const FENCE_FIRST_WAIT_MS = 20;

export class PartitionRouting {
  private reloading: Promise<boolean> | undefined;
  /** Partitions known to have the map table (made by this server's publish or prepare). */
  private readonly mapTableReady = new Set<number>();
  private readonly listeners = new Set<(map: PartitionMap) => void>();

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly connect: ConnectPartition,
    private readonly logger: Logger,
  ) {}

  /** The map routing now. */
  get map(): PartitionMap {
    return this.layout.map;
  }

  /** Calls `listener` with each map this server switches to. */
  onChange(listener: (map: PartitionMap) => void): void {
    this.listeners.add(listener);
  }

  /**
   * Routes by `map` from now on, connecting first to the partitions it names that this server
   * has no pool for. A map no newer than the current one changes nothing.
   */
  async use(map: PartitionMap): Promise<void> {
    if (map.version <= this.layout.map.version) return;
    await this.connectUpTo(map);
    if (map.version <= this.layout.map.version) return;
    this.layout.useMap(map);
    this.logger.info('routing by partition map', {
      version: map.version,
      partitions: map.partitionCount,
    });
    for (const listener of this.listeners) listener(map);
  }

  /** Pools for the partitions `map` names that this server has none for, in id order. */
  private async connectUpTo(map: PartitionMap): Promise<void> {
    for (let id = this.partitions.count; id < map.partitionCount; id++) {
      const partition = await this.connect(id, map.locations[id]!);
      // Another caller may have connected it meanwhile: ids are taken once, in order.
      if (this.partitions.count === id) this.partitions.add(partition);
      else await partition.end();
    }
  }

  /**
   * The highest version stored on the partitions with these ids (each partition of the current
   * map when left out), or undefined when none has one. A partition that does not answer is
   * passed over unless none answers.
   */
  async readHighest(ids?: readonly number[]): Promise<PartitionMapRecord | undefined> {
    const partitions = (ids ?? this.partitions.partitions.map((p) => p.index)).map((id) =>
      this.partitions.at(id),
    );
    const settled = await Promise.allSettled(
      partitions.map((partition) =>
        partition.run(UNBOUNDED, (pool) =>
          readLatestPartitionMap(pool, this.layout.partitionMapTable),
        ),
      ),
    );
    let highest: PartitionMapRecord | undefined;
    for (const result of settled) {
      if (result.status === 'rejected') continue;
      if (result.value && (!highest || result.value.version > highest.version)) {
        highest = result.value;
      }
    }
    if (!settled.some((result) => result.status === 'fulfilled')) {
      throw (settled[0] as PromiseRejectedResult).reason;
    }
    return highest;
  }

  /**
   * Reads the highest map version on the map's partitions and routes by it when it is newer;
   * true when it was. Calls made while one reload runs share it.
   */
  reload(): Promise<boolean> {
    this.reloading ??= (async () => {
      try {
        const record = await this.readHighest();
        if (!record || record.version <= this.layout.map.version) return false;
        await this.use(PartitionMap.fromRecord(record, this.layout.shardsCount));
        return true;
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  /**
   * The map as partition 0 holds it (every publish lands there first), routed by from now on
   * when newer: the answer a decision that must not miss a publish needs. Throws when partition
   * 0 does not answer, rather than answer with what another partition has.
   */
  async readHome(): Promise<PartitionMap> {
    const record = await this.readHighest([0]);
    if (record && record.version > this.layout.map.version) {
      await this.use(PartitionMap.fromRecord(record, this.layout.shardsCount));
    }
    return this.layout.map;
  }

  /** A version seen by the health probe: a newer one than the current is loaded now. */
  noticeVersion(version: number): void {
    if (version <= this.layout.map.version) return;
    this.reload().catch((error: unknown) =>
      this.logger.warn('could not load the newer partition map', {
        version,
        reason: (error as Error).message,
      }),
    );
  }

  /**
   * Publishes `next` (the current map's next version): connects to the partitions it adds,
   * creates the map table where missing and inserts the version on every partition it names,
   * partition 0 first (two movers publishing the same version meet there, and the second is
   * refused), then routes by it.
   */
  async publish(next: PartitionMap): Promise<void> {
    const { everywhere } = await this.publishFirst(next);
    await everywhere;
  }

  /**
   * Publishes `next` as publish does, answering once partition 0 has it: from then on it is
   * the store's map (a rival publishing the same version is refused there, and a server reading
   * the map finds it there), and this server routes by it. `everywhere` settles once every other
   * partition the map names has it too; a cut-over lets the shard's writes go in between.
   */
  async publishFirst(next: PartitionMap): Promise<{ everywhere: Promise<void> }> {
    if (next.shardsCount !== this.layout.shardsCount) {
      throw new FailedPreconditionError(
        `the map maps ${next.shardsCount} shards; the store has ${this.layout.shardsCount}`,
      );
    }
    // The next version of the map served now needs no reload first (a cut-over publishes under
    // its hold, prepared just before): a rival that published that version meanwhile is
    // refused by partition 0's INSERT below, as after a reload.
    if (next.version !== this.layout.map.version + 1) await this.reload();
    const current = this.layout.map;
    // The same map again: a publish that failed part way (a partition down) is run again, and
    // puts the version where it is missing.
    const again =
      next.version === current.version &&
      JSON.stringify(next.toRecord()) === JSON.stringify(current.toRecord());
    if (next.version !== current.version + 1 && !again) {
      throw new FailedPreconditionError(
        `partition map version ${next.version} cannot follow version ${current.version}, the store's latest: ` +
          'make the next map from the latest one',
      );
    }
    if (next.partitionCount < current.partitionCount) {
      throw new FailedPreconditionError(
        `partition map version ${next.version} names ${next.partitionCount} partitions; ` +
          `version ${current.version} names ${current.partitionCount}, and ids are never dropped`,
      );
    }
    await this.connectUpTo(next);
    const record = next.toRecord();
    const insert = async (id: number) => {
      const inserted = await this.partitions.at(id).run(UNBOUNDED, async (pool) => {
        if (!this.mapTableReady.has(id)) {
          await ensurePartitionMapTable(pool, this.layout.partitionMapTable);
          this.mapTableReady.add(id);
        }
        return insertPartitionMap(pool, this.layout.partitionMapTable, record);
      });
      if (!inserted) {
        throw new FailedPreconditionError(
          `partition map version ${next.version} was published by another mover (found on partition ${id}); ` +
            'read the latest map and try again',
        );
      }
    };
    await insert(0);
    // This server routes by it at once: its own calls (a consumer group's turn among them, whose
    // tables are not fenced) must not reach the shard's old place once its writes are let go.
    await this.use(next);
    const everywhere = (async () => {
      await Promise.all(Array.from({ length: next.partitionCount - 1 }, (_, i) => insert(i + 1)));
    })();
    // Its failure is the awaiting caller's to hear, not an unhandled rejection meanwhile.
    everywhere.catch(() => {});
    return { everywhere };
  }

  /**
   * Whether the store's moves table (partition 0) has a move not finished or aborted; false
   * when it cannot say (no such table: nothing ever moved).
   */
  private async moveUnderWay(): Promise<boolean> {
    const table = storeTableName(this.layout.namespace, 'shard_moves');
    try {
      const active = await this.partitions
        .at(0)
        .run(UNBOUNDED, (pool) => readActiveMoves(pool, table));
      return active.length > 0;
    } catch {
      return false;
    }
  }

  /**
   * What publishing `next` needs besides its inserts, done ahead (a cut-over calls it before it
   * holds the shard's writes): pools on the partitions it adds, the map table on each of its
   * partitions.
   */
  async prepare(next: PartitionMap): Promise<void> {
    await this.reload();
    await this.connectUpTo(next);
    await Promise.all(
      Array.from({ length: next.partitionCount }, async (_, id) => {
        if (this.mapTableReady.has(id)) return;
        await this.partitions
          .at(id)
          .run(UNBOUNDED, (pool) => ensurePartitionMapTable(pool, this.layout.partitionMapTable));
        this.mapTableReady.add(id);
      }),
    );
  }

  /**
   * Runs `work` for the call of `scope`, and again where the shard now is when a move fenced it
   * (see above).
   */
  async fenced<T>(scope: CallScope, work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const before = this.layout.map.version;
      try {
        return await work();
      } catch (error) {
        await this.recover(error, before, attempt, scope);
      }
    }
  }

  /**
   * After work that began under map version `before` failed with `error`: returns when it is
   * to run again (the attempt'th time), else throws what its caller gets. A missing table
   * loads the map now: a newer version says where to run again. No newer one, in a store that
   * moved shards or has a move under way, may be a cut-over between its renames and its publish:
   * it waits a little (within the call's deadline) and tries again, and in the end says a move is
   * in progress. In a store that never moved (version 0, no move under way) a missing table is
   * no move: its own failure. The map's reads serve every call that waits on them (reload), so
   * they run for none of them: the statement timeout bounds them, the call's deadline its wait.
   */
  async recover(error: unknown, before: number, attempt: number, scope: CallScope): Promise<void> {
    if (!(error instanceof ShardMovedError)) throw error;
    if (attempt + 1 >= FENCE_ATTEMPTS) throw moving(error);
    try {
      await this.reload();
    } catch (reloadError) {
      throw new UnavailableError(
        error.partition,
        `partition ${error.partition} lacks a table the call needs, and the partition map could not be read; retry`,
        { cause: reloadError },
      );
    }
    const now = this.layout.map.version;
    if (now !== before) return;
    // Version 0 with a move under way is a first cut-over between its renames and its publish
    // (the renames come first): the shard is moving, not missing.
    if (now === 0 && !(await this.moveUnderWay())) throw error.cause ?? error;
    const waitMs = FENCE_FIRST_WAIT_MS * 2 ** attempt;
    if (Date.now() + waitMs >= scope.deadline) throw moving(error);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

function moving(error: ShardMovedError): UnavailableError {
  return new UnavailableError(
    error.partition,
    'a shard this call needs is being moved to another partition; retry in a moment',
    { cause: error.cause ?? error },
  );
}
