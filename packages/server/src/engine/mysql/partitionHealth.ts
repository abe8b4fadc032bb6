// Whether each partition answers: one statement on every partition (each node's wsrep status on
// a Galera partition, galeraNodes.ts) at a fixed interval, bounded like any statement, so that
// health checks and DescribeStore can say which partitions are down before a caller finds out
// (a hung partition otherwise looks healthy until a call times out). The statement reads the
// partition map's highest version too, so that a server learns of a shard move within a period
// at no cost of its own (openStore creates the map table on every partition).
import { withDeadline } from '../base/callScope.js';
import { ShardMovedError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import type { Row } from './mysqlPool.js';
import type { PartitionSet } from './partitions.js';
import { maxPartitionMapVersion, versionOf } from './sql/partitionMap.js';

export type PartitionListener = (partition: number, up: boolean) => void;

export class PartitionHealth {
  private readonly up: boolean[];
  private readonly listeners = new Set<PartitionListener>();
  private timer: NodeJS.Timeout | undefined;
  private probing = false;

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
    this.timer ??= setInterval(() => void this.probeAll(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

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
              await withDeadline(Date.now() + this.intervalMs, () =>
                partition.run((pool) => probe(pool)),
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
        await withDeadline(Date.now() + this.intervalMs, () =>
          partitions[0]!.run((pool) => probe(pool.reads)),
        ).catch(() => undefined);
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
