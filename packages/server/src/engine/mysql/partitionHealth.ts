// Whether each partition answers: one statement on every partition (each node's wsrep status on
// a Galera partition, galeraNodes.ts) at a fixed interval, bounded like any statement, so that
// health checks and DescribeStore can say which partitions are down before a caller finds out
// (a hung partition otherwise looks healthy until a call times out). The statement reads the
// partition map's highest version too, so that a server learns of a shard move within a period
// at no cost of its own (openStore creates the map table on every partition).
//
// A server nobody calls needs none of this promptly (issue 55: an idle server should cost next to
// nothing, and the probe was most of what it cost, 3-5 ms of CPU a probe on a busy 2-core
// machine, a quarter of it the socket write to MariaDB). So the gRPC server may let the probe
// rest: with no call for a while and no stream open, it probes every `rest.intervalMs` instead,
// and the first call after that probes at once and brings the period back.
import { deadlineScope } from '../base/callScope.js';
import { ShardMovedError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { Row } from './mysqlPool.js';
import type { PartitionSet } from './partitions.js';
import { maxPartitionMapVersion, versionOf } from './sql/partitionMap.js';

export type PartitionListener = (partition: number, up: boolean) => void;

/** When and how slowly the probe rests (see restWhileIdle). */
export interface ProbeRest {
  /** The probe's period while the server is idle; the server is idle after this long unused. */
  readonly intervalMs: number;
  /** Whether anything keeps the server in use now (a stream open), calls aside. */
  readonly busy: () => boolean;
}

export class PartitionHealth {
  private readonly up: boolean[];
  private readonly listeners = new Set<PartitionListener>();
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private rest: ProbeRest | undefined;
  /** A call came since the last tick. */
  private called = false;
  /** When the server was last seen in use (a call, or `rest.busy()`). */
  private usedAt = Date.now();
  /** The next probe is a rest period away. */
  private resting = false;

  constructor(
    private readonly partitions: PartitionSet,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    /** The partition map's table, read by each probe; none read when left out. */
    private readonly mapTable?: string,
    /** Called with the highest map version each probe read. */
    private readonly onMapVersion?: (version: number) => void,
  ) {
    this.up = partitions.partitions.map(() => true);
  }

  /** Probes every interval until stop(); the store is known to be up when it opens. */
  start(): void {
    if (this.timer) return;
    this.usedAt = Date.now();
    this.schedule(this.intervalMs);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.resting = false;
  }

  /**
   * From now on the probe slows to `rest.intervalMs` once the server has had no call (noteCall)
   * and nothing `rest.busy()` counts for that long; noteCall ends the rest with a probe at once.
   */
  restWhileIdle(rest: ProbeRest): void {
    this.rest = { intervalMs: Math.max(rest.intervalMs, this.intervalMs), busy: rest.busy };
  }

  /** A call arrived: cheap, for every call. A resting probe runs now and its period is back. */
  noteCall(): void {
    this.called = true;
    if (!this.resting) return;
    this.resting = false;
    clearTimeout(this.timer);
    // On a timer of its own, so that the call's statements take their connections first.
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(this.tick, delayMs);
    // A timer that keeps nothing alive: shutdown does not wait for it.
    this.timer.unref();
  }

  private readonly tick = (): void => {
    const now = Date.now();
    const rest = this.rest;
    if (this.called || rest?.busy()) {
      this.called = false;
      this.usedAt = now;
    }
    const restMs = rest && now - this.usedAt >= rest.intervalMs ? rest.intervalMs : undefined;
    this.resting = restMs !== undefined;
    this.schedule(restMs ?? this.intervalMs);
    void this.probeAll();
  };

  isUp(partition: number): boolean {
    // A partition a newer map added is up until a probe says otherwise, as at start.
    return this.up[partition] ?? partition < this.partitions.count;
  }

  /** Calls the listener whenever a partition goes down or comes back. */
  onChange(listener: PartitionListener): void {
    this.listeners.add(listener);
  }

  /** One probe of every partition (a probe still running makes this one a no-op). */
  async probeAll(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    let highest = 0;
    const versionStatement = this.mapTable ? maxPartitionMapVersion(this.mapTable) : undefined;
    const probe = async (pool: { query<T = Row[]>(sql: string): Promise<T> }) => {
      if (!versionStatement) {
        await pool.query('SELECT 1');
        return;
      }
      const rows = await pool.query<Row[]>(versionStatement.sql);
      highest = Math.max(highest, versionOf(rows));
    };
    const partitions = this.partitions.partitions;
    try {
      await Promise.all(
        partitions.map(async (partition) => {
          let answered = true;
          try {
            // A probe waits no longer than the interval: a hung partition is down. A partition
            // on Galera is up while one of its nodes serves (and moves off a node that does not).
            if (partition.galera) answered = await partition.galera.probe(this.intervalMs);
            else {
              await partition.run(deadlineScope(Date.now() + this.intervalMs), (pool) =>
                probe(pool),
              );
            }
          } catch (error) {
            // A partition without the map table (an engine not opened by openStore) answered.
            answered = error instanceof ShardMovedError;
          }
          this.set(partition.index, answered);
        }),
      );
      // Only Galera partitions, whose probe reads node states: the map is read on the first.
      if (versionStatement && partitions.length > 0 && partitions.every((p) => p.galera)) {
        await partitions[0]!
          .run(deadlineScope(Date.now() + this.intervalMs), (pool) => probe(pool.reads))
          .catch(() => undefined);
      }
      if (highest > 0) this.onMapVersion?.(highest);
    } finally {
      this.probing = false;
    }
  }

  private set(partition: number, up: boolean): void {
    if ((this.up[partition] ?? true) === up) return;
    this.up[partition] = up;
    if (up) this.logger.info('partition answers again', { partition });
    else this.logger.warn('partition does not answer', { partition });
    for (const listener of this.listeners) listener(partition, up);
  }
}
