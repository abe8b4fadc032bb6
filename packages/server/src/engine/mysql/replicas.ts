// A partition's read replicas: MariaDB servers that replicate its primary (GTID replication,
// set up by the operator), each with a pool of its own. Replication copies the data; this file
// only decides which replica may answer a read, from what the replica monitor
// (replicaMonitor.ts) last measured and what a read asks for (consistency.ts).
import { type CallScope, deadlineScope } from '../base/callScope.js';
import {
  type GtidPosition,
  EMPTY_POSITION,
  covers,
  formatPosition,
  mergePositions,
} from '../base/gtidPosition.js';
import type { MysqlLocation, MysqlPool, PoolUsage } from './mysqlPool.js';
import { ReadCoalescer } from './readCoalescer.js';
import type { ReadTimeLimit } from './sql/readTimeLimit.js';
import { waitForPosition } from './sql/replication.js';
import { type StatementReader, runTogether } from './sql/statement.js';

export type ReplicaState =
  /** Answering and no staler than the rotation allows: it serves reads. */
  | 'serving'
  /** Answering, but behind by more than the rotation allows (or replication stopped). */
  | 'lagging'
  /** Not answering (or not yet measured): its reads go to the primary. */
  | 'down';

export interface ReplicaStatus {
  readonly partition: number;
  readonly replica: number;
  readonly state: ReplicaState;
  /** How far behind the primary it is, in ms: an upper bound; Infinity when unknown. */
  readonly lagMs: number;
}

export class Replica {
  private coalescer: ReadCoalescer;
  /** The position it has applied, as last measured (or waited for). */
  applied: GtidPosition = EMPTY_POSITION;
  /**
   * When (ms since the epoch) the primary had last logged nothing that this replica has not
   * applied, as last measured: its data is at most `now - caughtUpAt` stale.
   */
  caughtUpAt = -Infinity;
  private answeringNow = false;
  /** Lets go of each read waiting on it (untilDown), once it is found down. */
  private readonly waiting = new Set<() => void>();
  /** Reads (round trips) it has answered, for metrics. */
  reads = 0;

  constructor(
    readonly partition: number,
    readonly index: number,
    readonly location: MysqlLocation,
    readonly pool: MysqlPool,
    /** How stale a replica may be and stay in the rotation, in ms. */
    private readonly maxLagMs: number,
  ) {
    this.coalescer = new ReadCoalescer(pool);
  }

  /** Whether it answered the monitor's last probe (and no read since found it gone). */
  get answering(): boolean {
    return this.answeringNow;
  }

  /**
   * Records whether it answers (the monitor's probe, or a read that found it gone). Found gone,
   * it leaves the rotation at once, and the reads still waiting on it are let go (untilDown), so
   * that a server that hangs instead of closing its connections (stopped, or cut off without a
   * reset) holds no read longer than the monitor takes to notice.
   */
  setAnswering(answering: boolean): void {
    const foundDown = this.answeringNow && !answering;
    this.answeringNow = answering;
    if (!foundDown) return;
    const letGo = [...this.waiting];
    this.waiting.clear();
    for (const release of letGo) release();
  }

  /**
   * `work` on this replica, or a rejection with ReplicaDownError as soon as the replica is found
   * down (setAnswering(false)) before it settles, or at once if it is down already. The work
   * itself runs on: its answer, or its failure, is then no one's.
   */
  untilDown<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onDown = () => reject(new ReplicaDownError(this.partition, this.index));
      // Found down after it was chosen for this read: no later finding would let go of it.
      if (!this.answeringNow) {
        work.catch(() => undefined); // Its answer, or its failure, is no one's.
        onDown();
        return;
      }
      this.waiting.add(onDown);
      work.then(
        (answer) => {
          this.waiting.delete(onDown);
          resolve(answer);
        },
        (error: unknown) => {
          this.waiting.delete(onDown);
          reject(error);
        },
      );
    });
  }

  limitReadsOnServer(timeLimit: ReadTimeLimit): void {
    this.coalescer = new ReadCoalescer(this.pool, undefined, timeLimit);
  }

  /** Reads on this replica for the call of `scope` (see ReadCoalescer.readerFor). */
  readerFor(scope: CallScope, apart = false): StatementReader {
    return this.coalescer.readerFor(scope, apart);
  }

  /** An upper bound of how stale its data is now, in ms; Infinity when not known. */
  lagMs(now = Date.now()): number {
    return Math.max(0, now - this.caughtUpAt);
  }

  /** Whether it serves reads: answering, and no staler than the rotation allows. */
  get serving(): boolean {
    return this.answering && this.lagMs() <= this.maxLagMs;
  }

  status(): ReplicaStatus {
    const lagMs = this.lagMs();
    return {
      partition: this.partition,
      replica: this.index,
      state: !this.answering ? 'down' : lagMs <= this.maxLagMs ? 'serving' : 'lagging',
      lagMs,
    };
  }

  /** Whether it has applied `wanted`, as far as is known without asking it. */
  hasApplied(wanted: GtidPosition): boolean {
    return covers(this.applied, wanted);
  }

  /**
   * Waits (MASTER_GTID_WAIT) up to `waitMs`, and never past the call's deadline, for the
   * replica to apply `wanted`; true once it has. A replica that does not answer counts as not
   * there yet: the caller reads the primary. `scope` is the call that waits.
   */
  async waitFor(scope: CallScope, wanted: GtidPosition, waitMs: number): Promise<boolean> {
    const deadline = Math.min(scope.deadline, Date.now() + waitMs);
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) return false;
    try {
      // The statement itself waits remainingMs; the client's bound leaves it time to answer.
      const reads = this.pool.for(deadlineScope(deadline + 1000)).reads;
      const [rows] = (await this.untilDown(
        runTogether(reads, [waitForPosition(formatPosition(wanted), remainingMs)]),
      )) as { reached: number | null }[][];
      if (rows?.[0]?.reached !== 0) return false;
    } catch {
      return false;
    }
    this.applied = mergePositions(this.applied, wanted);
    return true;
  }

  poolUsage(): PoolUsage {
    return this.pool.usage();
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}

/** A read let go because its replica was found down while it waited (Replica.untilDown). */
export class ReplicaDownError extends Error {
  constructor(partition: number, replica: number) {
    super(`replica ${replica} of partition ${partition} was found down while a read waited on it`);
  }
}
