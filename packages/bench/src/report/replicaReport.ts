// The read-replica row (`--workloads replicas`): the same reads against a server with the primary
// only and one with a replica, side by side, with the share of read statements the replica ran.
import type { ReplicaResult } from '../workloads/replicaReads.js';

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
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => row[column]!.length)),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ');
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
    line(header),
    ...rows.map(line),
    `  on replica: the share of read statements the replica ran (Com_select on each, less MASTER_GTID_WAITs and lag probes; the primary's every SELECT counted), over each side's whole run`,
    ...statements.map((text) => `  ${text}`),
  ].join('\n');
}
