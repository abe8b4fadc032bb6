// What `pnpm bench` runs: the full suite (about 13 minutes on 2 cores) or `--quick` (about 4).
import type { SuitePlan } from './suite.js';
import { BATCH_WORKLOADS } from './workloads/batchWorkloads.js';
import { CONSUMER_WORKLOAD, consumerPlan } from './workloads/consumerWorkload.js';
import { IDLE_WORKLOAD, idlePlan } from './workloads/idleServer.js';
import { REPLICA_WORKLOAD, replicaPlan } from './workloads/replicaReads.js';
import { MOVES_WORKLOAD, movesPlan } from './workloads/shardMoveCopy.js';
import { type Workload, UNARY_WORKLOADS } from './workloads/workloads.js';

const KB = 1024;

export interface PlanOptions {
  readonly quick: boolean;
  /** Workload ids to keep; all when empty. */
  readonly only: readonly string[];
  readonly durationMs?: number;
  readonly warmupMs?: number;
  readonly serverWarmupMs?: number;
}

const ALL_WORKLOADS: readonly Workload[] = [...UNARY_WORKLOADS, ...BATCH_WORKLOADS];

/**
 * Every id `--workloads` takes: the closed-loop workloads, the read-replica row, the idle
 * server, the consumer groups' figures, then the shard move's copy (only when named).
 */
export function workloadIds(): string[] {
  return [
    ...ALL_WORKLOADS.map((workload) => workload.id),
    REPLICA_WORKLOAD,
    IDLE_WORKLOAD,
    CONSUMER_WORKLOAD,
    MOVES_WORKLOAD,
  ];
}

/** Workloads also run with 16 KB bodies in the full suite. */
const LARGE_BODY = new Set(['put-update', 'write-cell', 'get-cell', 'where-100']);
/**
 * Latency targets are set at half of the peak load: these run open-loop at that rate too, the
 * reads with the gem-shaped service at the same rate (issue 55's p99 targets).
 */
const HALF_LOAD = new Set(['get-cell', 'where-1', 'write-cell', 'put-update']);
/**
 * Workloads that read their records' primary-index rows and latest base cells: each of their runs
 * starts with a pass over the records it works on (touchRecords.ts).
 */
const TOUCHES_RECORDS = new Set(['put-update', 'get-cell', 'where-1']);
/** Calls that move hundreds of cells each (a megabyte or more): fewer in flight. */
const BATCH = new Set(['write-cells', 'get-cells', 'fetch-latest', 'each']);

export function buildPlan(options: PlanOptions): SuitePlan {
  const unknown = options.only.filter((id) => !workloadIds().includes(id));
  if (unknown.length > 0) {
    throw new Error(
      `unknown workload ${unknown.join(', ')}; choose from ${workloadIds().join(', ')}`,
    );
  }
  const chosen = ALL_WORKLOADS.filter(
    (workload) => options.only.length === 0 || options.only.includes(workload.id),
  );
  // --quick keeps one call at a time for the workloads the gem has: their latency budget is
  // checked there.
  const concurrency = (workload: Workload) =>
    BATCH.has(workload.id)
      ? options.quick
        ? [4]
        : [1, 4, 16]
      : options.quick
        ? workload.gem
          ? [1, 16]
          : [16]
        : [1, 16, 64];
  // A call of a single cell warms up over 1,000 calls; a batch call runs hundreds of cells
  // through the same code each time, so a few suffice.
  const warmupOperations = (workload: Workload) => (BATCH.has(workload.id) ? 8 : 1000);
  const runs = chosen.map((workload) => ({
    workload,
    bodyBytes: KB,
    concurrency: concurrency(workload),
    warmupOperations: warmupOperations(workload),
    touchesRecords: TOUCHES_RECORDS.has(workload.id),
  }));
  if (!options.quick) {
    for (const workload of chosen.filter((w) => LARGE_BODY.has(w.id))) {
      runs.push({
        workload,
        bodyBytes: 16 * KB,
        concurrency: [1, 16, 64],
        warmupOperations: warmupOperations(workload),
        touchesRecords: TOUCHES_RECORDS.has(workload.id),
      });
    }
  }
  return {
    serverWarmupMs: options.serverWarmupMs ?? (options.quick ? 20_000 : 40_000),
    warmupMs: options.warmupMs ?? (options.quick ? 200 : 400),
    durationMs: options.durationMs ?? (options.quick ? 1000 : 2000),
    seedHotels: options.quick ? 10 : 40,
    roundsInTurn: options.quick ? 20 : 30,
    // A quarter of a second measured (some 200 to 1,000 reads) after 100 ms unmeasured: a
    // round of four sides takes 1.4 s, within the seconds the machine's pace holds.
    roundWindow: { warmupMs: 100, durationMs: 250 },
    runs,
    follow: { writers: 16, durationMs: options.quick ? 2000 : 5000 },
    halfLoad: chosen.filter((workload) => HALF_LOAD.has(workload.id)),
    ...(options.only.length === 0 || options.only.includes(REPLICA_WORKLOAD)
      ? { replicas: replicaPlan(options.quick) }
      : {}),
    ...(options.only.length === 0 || options.only.includes(IDLE_WORKLOAD)
      ? { idle: idlePlan(options.quick) }
      : {}),
    ...(options.only.length === 0 || options.only.includes(CONSUMER_WORKLOAD)
      ? { consumer: consumerPlan(options.quick) }
      : {}),
    // Not in the default suite: it starts a MariaDB of its own and writes 100 MB.
    ...(options.only.includes(MOVES_WORKLOAD) ? { moves: movesPlan(options.quick) } : {}),
  };
}
