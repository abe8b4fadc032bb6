// How far behind its primary each replica is, measured continuously: every interval the
// monitor reads each primary's position (@@gtid_binlog_pos) and then each of its replicas'
// (@@gtid_slave_pos). A replica that has applied everything a primary had logged when a probe
// was sent was caught up at that moment, so its data is at most `now - then` stale: an upper
// bound, exact to one interval, that needs no clock shared between the servers. A replica that
// stops replicating falls behind as soon as its primary takes a write, and leaves the rotation
// once that bound passes the allowed lag; one that does not answer leaves it at once. Both come
// back by themselves.
import { deadlineScope } from '../base/callScope.js';
import { type GtidPosition, covers, mergePositions, parsePosition } from '../base/gtidPosition.js';
import type { Logger } from '../base/logger.js';
import type { Partition } from './partitions.js';
import type { Replica, ReplicaState } from './replicas.js';
import { PRIMARY_POSITION, REPLICA_POSITION } from './sql/replication.js';
import { runTogether } from './sql/statement.js';

interface PrimarySample {
  /** When the probe was sent: the primary had logged at least `position` by then. */
  readonly at: number;
  readonly position: GtidPosition;
}

/** Samples kept per primary: enough to date a replica as far back as anyone asks. */
const MAX_SAMPLES = 256;

export class ReplicaMonitor {
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;
  private readonly samples = new Map<number, PrimarySample[]>();
  private readonly states = new Map<Replica, ReplicaState>();

  constructor(
    private readonly partitions: readonly Partition[],
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Probes every interval until stop(); the first probe at once. */
  start(): void {
    if (this.timer || !this.partitions.some((partition) => partition.replicas.length > 0)) return;
    void this.probeAll();
    this.timer = setInterval(() => void this.probeAll(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.probing;
  }

  /** One probe of every partition that has replicas (one still running makes it a no-op). */
  probeAll(): Promise<void> {
    this.probing ??= Promise.all(
      this.partitions
        .filter((partition) => partition.replicas.length > 0)
        .map((partition) => this.probe(partition)),
    ).then(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probe(partition: Partition): Promise<void> {
    // A probe waits no longer than the interval: a server that does not answer by then is down.
    const deadline = Date.now() + this.intervalMs;
    const scope = deadlineScope(deadline);
    const at = Date.now();
    const primary = await positionOf(partition.primaryReads(scope), PRIMARY_POSITION, deadline);
    const samples = this.samples.get(partition.index) ?? [];
    this.samples.set(partition.index, samples);
    if (primary) {
      samples.push({ at, position: primary });
      if (samples.length > MAX_SAMPLES) samples.shift();
    }
    await Promise.all(
      partition.replicas.map(async (replica) => {
        const applied = await positionOf(replica.pool.for(scope).reads, REPLICA_POSITION, deadline);
        replica.setAnswering(applied !== undefined);
        if (applied) {
          replica.applied = mergePositions(replica.applied, applied);
          for (let i = samples.length - 1; i >= 0; i -= 1) {
            if (samples[i]!.at <= replica.caughtUpAt) break;
            if (covers(replica.applied, samples[i]!.position)) {
              replica.caughtUpAt = samples[i]!.at;
              break;
            }
          }
        }
        this.noteState(replica);
      }),
    );
  }

  private noteState(replica: Replica): void {
    const { state, lagMs } = replica.status();
    const before = this.states.get(replica);
    if (before === state) return;
    this.states.set(replica, state);
    const fields = { partition: replica.partition, replica: replica.index, lagMs };
    if (state === 'serving') this.logger.info('replica serves reads', fields);
    else if (before !== undefined || state === 'down') {
      this.logger.warn(
        state === 'down' ? 'replica does not answer' : 'replica lags: its reads go to the primary',
        fields,
      );
    }
  }
}

/**
 * A server's position, or undefined when it does not answer by `deadline`. The statement's own
 * timeout starts only once it is sent: a server that hangs holds the connection it is sent on,
 * and a new connection's handshake waits out the connect timeout, so the deadline is kept here.
 */
async function positionOf(
  session: Parameters<typeof runTogether>[0],
  statement: typeof PRIMARY_POSITION,
  deadline: number,
): Promise<GtidPosition | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  try {
    const asked = runTogether(session, [statement]).then(
      (results) => {
        const [rows] = results as { position: string | null }[][];
        return parsePosition(rows?.[0]?.position ?? '');
      },
      () => undefined,
    );
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}
