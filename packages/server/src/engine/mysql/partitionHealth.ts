// Whether each partition answers: a `SELECT 1` on every partition (each node's wsrep status on
// a Galera partition, galeraNodes.ts) at a fixed interval, bounded like any statement, so that
// health checks and DescribeStore can say which partitions are down before a caller finds out
// (a hung partition otherwise looks healthy until a call times out).
import { withDeadline } from '../base/callScope.js';
import type { Logger } from '../base/logger.js';
import type { PartitionSet } from './partitions.js';

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
    return this.up[partition] ?? false;
  }

  /** Calls the listener whenever a partition goes down or comes back. */
  onChange(listener: PartitionListener): void {
    this.listeners.add(listener);
  }

  /** One probe of every partition (a probe still running makes this one a no-op). */
  async probeAll(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await Promise.all(
        this.partitions.partitions.map(async (partition) => {
          let answered = true;
          try {
            // A probe waits no longer than the interval: a hung partition is down. A partition
            // on Galera is up while one of its nodes serves (and moves off a node that does not).
            if (partition.galera) answered = await partition.galera.probe(this.intervalMs);
            else {
              await withDeadline(Date.now() + this.intervalMs, () =>
                partition.run((pool) => pool.query('SELECT 1')),
              );
            }
          } catch {
            answered = false;
          }
          this.set(partition.index, answered);
        }),
      );
    } finally {
      this.probing = false;
    }
  }

  private set(partition: number, up: boolean): void {
    if (this.up[partition] === up) return;
    this.up[partition] = up;
    if (up) this.logger.info('partition answers again', { partition });
    else this.logger.warn('partition does not answer', { partition });
    for (const listener of this.listeners) listener(partition, up);
  }
}
