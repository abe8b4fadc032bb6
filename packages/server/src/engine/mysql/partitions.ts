// The store's partitions: one MySQL pool each, routed by shard, with partition-level failures
// turned into UnavailableError so that one partition being down never affects the others.
import type { CallScope } from '../base/callScope.js';
import type { ReadConsistency } from '../base/consistency.js';
import { UnavailableError } from '../base/errors.js';
import type {
  MysqlLocation,
  MysqlPool,
  PoolUsage,
  ScopedPool,
  SqlConnection,
  SqlSession,
} from './mysqlPool.js';
import type { GaleraNodes } from './galeraNodes.js';
import type { Replica } from './replicas.js';
import { ReadCoalescer } from './readCoalescer.js';
import { partitionOfShard } from '../model/sharding.js';
import type { ReadTimeLimit } from './sql/readTimeLimit.js';
import { ROLLBACK, runTogether, type StatementReader } from './sql/statement.js';
import { isCallerGone, isConnectionError, translateSqlError } from './sqlErrors.js';

export class Partition {
  private reader: ReadCoalescer;
  /**
   * Whether the rows of a multi-row INSERT take consecutive ids from its first
   * (readConsecutiveInsertIds): read at start; until then, and where not, writes read their
   * ids back.
   */
  insertIdsConsecutive = false;

  /** Which replica each call in progress reads, so that all of one call's reads see one server. */
  private readonly replicaOfCall = new WeakMap<CallScope, Replica>();
  private nextReplica = 0;

  constructor(
    readonly index: number,
    private readonly firstLocation: MysqlLocation,
    private readonly pool: MysqlPool,
    /** Servers replicating this one, that may answer reads that are not `strong`. */
    readonly replicas: readonly Replica[] = [],
    /** How long a `session` read waits for a replica to apply its writes before reading here. */
    private readonly replicaWaitMs = 0,
    /** The nodes of a partition on a Galera cluster; `pool` is then this. */
    readonly galera?: GaleraNodes,
  ) {
    this.reader = new ReadCoalescer(pool);
  }

  /** The server the partition talks to now: its only one, or its current Galera node. */
  get location(): MysqlLocation {
    return this.galera?.current.location ?? this.firstLocation;
  }

  /**
   * From now on the partition's servers stop reads themselves at their deadline (or the
   * statement timeout), with the limit their flavour understands: set once at start.
   */
  limitReadsOnServer(timeLimit: ReadTimeLimit): void {
    this.reader = new ReadCoalescer(this.pool, undefined, timeLimit);
    for (const replica of this.replicas) replica.limitReadsOnServer(timeLimit);
  }

  /** Reads on the primary, one round trip each, for probes. */
  primaryReads(scope: CallScope): SqlSession {
    return this.pool.for(scope).reads;
  }

  /**
   * Runs reads through a coalescer: reads issued in the same turn of the event loop share one
   * round trip, unless `apart` (each its own). On the primary, or on a replica when the call's
   * consistency allows one (replicaFor); a replica that fails a read is left for the primary,
   * so its failure never reaches the caller. Partition-level failures become UnavailableError.
   * The reads serve the call of `scope`.
   */
  async read<T>(
    scope: CallScope,
    work: (reader: StatementReader) => Promise<T>,
    apart = false,
  ): Promise<T> {
    const replica = this.replicas.length > 0 ? await this.replicaFor(scope) : undefined;
    if (replica) {
      try {
        // Let go if the replica is found down meanwhile: its answer may never come.
        const answer = await replica.untilDown(work(replica.readerFor(scope, apart)));
        replica.reads += 1;
        return answer;
      } catch (error) {
        if (isCallerGone(error)) throw translateSqlError(error, this.index);
        // Gone, found down, or missing what the primary has (a table not yet replicated): the
        // primary answers. A connection error takes the replica out of the rotation at once,
        // and lets go of the other reads waiting on it.
        if (isConnectionError(error)) replica.setAnswering(false);
      }
    }
    try {
      return await work(this.reader.readerFor(scope, apart));
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
  }

  /**
   * The replica that may answer the call's reads, or undefined for the primary: `strong` reads
   * the primary; `bounded` a serving replica no staler than its bound; `session` a serving
   * replica that has applied the call's positions on this partition, waiting up to
   * replicaWaitMs for one to, else the primary.
   */
  private async replicaFor(scope: CallScope): Promise<Replica | undefined> {
    const consistency: ReadConsistency | undefined = scope.consistency;
    if (consistency === undefined || consistency.mode === 'strong') return undefined;
    const chosen = this.replicaOfCall.get(scope);
    if (chosen?.serving && withinBound(chosen, consistency)) return chosen;
    const candidates = this.replicas.filter(
      (replica) => replica.serving && withinBound(replica, consistency),
    );
    if (candidates.length === 0) return undefined;
    let replica = candidates[this.nextReplica++ % candidates.length]!;
    if (consistency.mode === 'session') {
      const wanted = consistency.after.get(this.index);
      if (wanted && !replica.hasApplied(wanted)) {
        const applied = candidates.find((candidate) => candidate.hasApplied(wanted));
        if (applied) replica = applied;
        else if (!(await replica.waitFor(scope, wanted, this.replicaWaitMs))) return undefined;
      }
    }
    this.replicaOfCall.set(scope, replica);
    return replica;
  }

  /**
   * Runs work against the pool, on behalf of the call of `scope`; partition-level failures
   * become UnavailableError.
   */
  async run<T>(scope: CallScope, work: (pool: ScopedPool) => Promise<T>): Promise<T> {
    try {
      return await work(this.pool.for(scope));
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
  }

  /**
   * Runs work on one dedicated connection (for transactions and session locks). When the work
   * fails, its connection goes back to the pool only once a ROLLBACK has ended whatever
   * transaction it left open (a statement that failed mid-transaction, a lock wait timeout,
   * stops a multi-statement before its COMMIT); otherwise it is destroyed. So no half-open
   * transaction, its snapshot and its locks, is ever reused by the next caller. The
   * connection's statements serve the call of `scope`.
   */
  async withConnection<T>(
    scope: CallScope,
    work: (connection: SqlConnection) => Promise<T>,
  ): Promise<T> {
    let connection: SqlConnection;
    try {
      connection = await this.pool.for(scope).getConnection();
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
    let healthy = true;
    try {
      return await work(connection);
    } catch (error) {
      healthy =
        !isConnectionError(error) &&
        (await runTogether(connection, [ROLLBACK]).then(
          () => true,
          () => false,
        ));
      throw translateSqlError(error, this.index);
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  poolUsage(): PoolUsage {
    return this.pool.usage();
  }

  async end(): Promise<void> {
    await Promise.all([this.pool.end(), ...this.replicas.map((replica) => replica.end())]);
  }
}

/** Whether the replica is no staler than the read's bound (bounded, or session shared with bounded). */
function withinBound(replica: Replica, consistency: ReadConsistency): boolean {
  const bound = consistency.mode === 'strong' ? undefined : consistency.maxStalenessMs;
  return bound === undefined || replica.lagMs() <= bound;
}

/** Which partition serves a shard: the store's layout, under its current partition map. */
export interface ShardRouter {
  partitionOf(shard: number): number;
}

export class PartitionSet {
  private readonly byId: Partition[];
  private readonly router: ShardRouter;

  constructor(
    partitions: readonly Partition[],
    readonly shardsCount: number,
    /** The gem's contiguous ranges over `partitions` when left out. */
    router?: ShardRouter,
  ) {
    this.byId = [...partitions];
    this.router = router ?? {
      partitionOf: (shard) => partitionOfShard(shard, this.shardsCount, partitions.length),
    };
  }

  /** Every partition, by id; a partition a newer map names joins at run time (add). */
  get partitions(): readonly Partition[] {
    return this.byId;
  }

  get count(): number {
    return this.byId.length;
  }

  /**
   * Adds a partition the partition map names (a move's target): it takes the next id, never one
   * in use, so that ids stay stable.
   */
  add(partition: Partition): void {
    if (partition.index !== this.byId.length) {
      throw new RangeError(
        `partition ${partition.index} cannot join ${this.byId.length} partitions: ids are given in order`,
      );
    }
    this.byId.push(partition);
  }

  forShard(shard: number): Partition {
    const partition = this.byId[this.router.partitionOf(shard)];
    if (!partition) throw new UnavailableError(-1, `no partition holds shard ${shard}`);
    return partition;
  }

  at(index: number): Partition {
    const partition = this.byId[index];
    if (!partition) throw new UnavailableError(index, `no partition ${index}`);
    return partition;
  }

  async end(): Promise<void> {
    await Promise.allSettled(this.byId.map((partition) => partition.end()));
  }
}
