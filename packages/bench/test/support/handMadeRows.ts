// Rows of a run built by hand, for the tests of the target tables: each verdict is read off
// rows like these, so the tests make exactly the rows a verdict needs.
import type { Baseline, RunRow } from '../../src/report/report.js';

export const latency = (p50: number, p99 = p50 * 2) => ({
  count: 100,
  p50,
  p99,
  p999: p99,
  max: p99,
});

export const baseline = (
  opsPerSecond: number,
  p50 = 1,
  fields: Partial<Baseline> = {},
): Baseline => ({
  opsPerSecond,
  p50,
  p99: p50 * 2,
  p999: p50 * 2,
  errors: 0,
  ...fields,
});

/** A closed-loop row of 1 KB bodies (an open loop with `openLoopRate`), as `fields` change it. */
export function row(
  workloadId: string,
  fields: Partial<RunRow> & { concurrency: number; opsPerSecond: number },
): RunRow {
  return {
    workloadId,
    workload: workloadId,
    bodyBytes: 1024,
    unit: 'calls',
    unitsPerSecond: fields.opsPerSecond,
    latency: latency(1),
    errors: 0,
    cpu: {},
    ...fields,
  };
}
