// The idle server's rows (`--workloads idle`): its CPU and background statements at each shard
// count, with the health probe and without, and the targets of issue 55 beside them.
import { type IdleResult, probeLabel, withServerDefaults } from '../workloads/idleServer.js';
import { alignedColumns } from './alignedColumns.js';

/** Issue 55: an idle server's CPU, as a share of a core, at most. */
export const IDLE_CPU_TARGET = 0.005;
/** Issue 55: its background statements per second per partition, at most. */
export const IDLE_STATEMENTS_TARGET = 2;

export function formatIdleRows(result: IdleResult): string {
  const header = ['', 'health probe', 'CPU (% of a core)', 'statements/s per partition'];
  const rows = result.sides.map((side) => [
    `${side.shards.toLocaleString('en-US')} shards`,
    probeLabel(side.healthProbe, side.probeRests) + (withServerDefaults(side) ? ' (default)' : ''),
    (side.cpuShare * 100).toFixed(2),
    side.statementsPerSecond.toFixed(2),
  ]);
  const targets = result.sides.filter(withServerDefaults).map((side) => {
    const met =
      side.cpuShare <= IDLE_CPU_TARGET && side.statementsPerSecond <= IDLE_STATEMENTS_TARGET;
    return (
      `  ${met ? 'met    ' : 'NOT met'}  ${side.shards.toLocaleString('en-US')} shards: ` +
      `${(side.cpuShare * 100).toFixed(2)}% of a core (target ≤ ${IDLE_CPU_TARGET * 100}%), ` +
      `${side.statementsPerSecond.toFixed(2)} statements/s (target ≤ ${IDLE_STATEMENTS_TARGET})`
    );
  });
  return [
    `Idle server: no client, one partition on a MariaDB of its own, ${result.plan.windowMs / 1000} s measured ` +
      `after ${result.plan.settleMs / 1000} s to settle; CPU of every thread of the server (/proc)`,
    ...alignedColumns(header, rows),
    // A quick run measures the defaults only.
    ...(!result.sides.every(withServerDefaults)
      ? [
          '  never rests: --idle-health-check-ms 0, one statement per partition per second; off: --health-check-ms 3600000; the differences are what the probe costs',
        ]
      : []),
    'Targets (issue 55), with the server’s defaults:',
    ...targets,
  ].join('\n');
}
