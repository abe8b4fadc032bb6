// The read-replica row (`--workloads replicas`): the same reads against a server with the primary
// only and one with a replica, side by side, with the share of read statements the replica ran.
import type { ReplicaResult } from '../workloads/replicaReads.js';
import { alignedColumns } from './alignedColumns.js';

export function formatReplicaRows(result: ReplicaResult): string {
  const { plan, settings } = result;
  const header = ['', 'reads/s', 'p50 ms', 'p99 ms', 'on replica', 'errors'];
  const rows = result.sides.map((side) => [
    side.subject,
    Math.round(side.load.opsPerSecond).toLocaleString('en-US'),
    side.load.latency.p50.toFixed(2),
    side.load.latency.p99.toFixed(2),
    `${(side.replicaShare * 100).toFixed(1)}%`,
    String(side.load.errors),
  ]);
  const statements = result.sides.map(
    (side) =>
      `${side.subject}: Com_select primary ${side.primarySelects}, replica ${side.replicaSelects} ` +
      `(${side.replicaGtidWaits} MASTER_GTID_WAIT, at most ${side.probes} lag probes)`,
  );
  return [
    `Read replicas: GetCell of ${plan.hotels * plan.perHotel} records of ${plan.bodyBytes / 1024} KB through the SDK, ` +
      `${plan.concurrency} in flight, session consistency (connect's default), no recent write; ` +
      `a primary and one replica on this machine (--replica-check-ms ${settings.checkMs}, ` +
      `--replica-max-lag-ms ${settings.maxLagMs}, --replica-wait-ms ${settings.waitMs})`,
    ...alignedColumns(header, rows),
    `  on replica: the share of read statements the replica ran (Com_select on each, less MASTER_GTID_WAITs and lag probes; the primary's every SELECT counted), over each side's whole run`,
    ...statements.map((text) => `  ${text}`),
  ].join('\n');
}
