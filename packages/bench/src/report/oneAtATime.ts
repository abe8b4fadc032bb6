// One call at a time, the server and the SDK may add at most 0.2 ms to what the call cannot
// avoid: the transport (the same run's echo p50) and the database's own work for the operation
// (the gem-shaped baseline's p50, the gem's statements alone). Checked for every workload the
// gem has, at one call in flight. The issue's transport is a unary echo; the SDK's calls travel
// as messages of one stream, whose echo is cheaper, so the check against the stream echo is
// printed too: what the server and the SDK add beyond the road they take.
import type { RunRow } from './report.js';

/** What the server and the SDK may add to a call beyond the transport and the database. */
export const ALLOWANCE_MS = 0.2;

export interface OneAtATimeCheck {
  readonly workloadId: string;
  readonly workload: string;
  readonly bodyBytes: number;
  readonly sdkP50: number;
  readonly echoP50: number;
  readonly gemP50: number;
  /** echoP50 + gemP50 + the allowance checked. */
  readonly budget: number;
  readonly met: boolean;
  /** The same budget over the stream echo, when it ran. */
  readonly overStream?: {
    readonly echoP50: number;
    readonly budget: number;
    readonly met: boolean;
  };
}

/**
 * A check for each closed-loop row at one call in flight that has an echo and a gem-shaped run,
 * against `allowanceMs` (issue 10's by default; issue 55 allows 0.1 ms).
 */
export function oneAtATimeChecks(
  rows: readonly RunRow[],
  allowanceMs = ALLOWANCE_MS,
): OneAtATimeCheck[] {
  return rows.flatMap((row) => {
    if (row.openLoopRate !== undefined || row.concurrency !== 1) return [];
    const { echo, gem, streamEcho } = row;
    if (!echo || !gem) return [];
    const over = (echoP50: number) => {
      const budget = echoP50 + gem.p50 + allowanceMs;
      return { echoP50, budget, met: row.latency.p50 <= budget };
    };
    return [
      {
        workloadId: row.workloadId,
        workload: row.workload,
        bodyBytes: row.bodyBytes,
        sdkP50: row.latency.p50,
        gemP50: gem.p50,
        ...over(echo.p50),
        ...(streamEcho ? { overStream: over(streamEcho.p50) } : {}),
      },
    ];
  });
}

export function formatOneAtATime(checks: readonly OneAtATimeCheck[]): string {
  if (checks.length === 0) return '';
  const lines = checks.map(
    (check) =>
      `  ${`${check.workload}, ${Math.round(check.bodyBytes / 1024)} KB:`.padEnd(28)} SDK p50 ${check.sdkP50.toFixed(2)} ms` +
      ` vs budget ${check.budget.toFixed(2)} ms (echo ${check.echoP50.toFixed(2)} + gem-shaped ${check.gemP50.toFixed(2)} + ${ALLOWANCE_MS})` +
      `: ${check.met ? 'met' : 'NOT met'}` +
      (check.overStream
        ? `; over the stream echo (${check.overStream.echoP50.toFixed(2)}): budget ${check.overStream.budget.toFixed(2)} ms, ${check.overStream.met ? 'met' : 'NOT met'}`
        : ''),
  );
  return [
    `One call at a time: p50 ≤ echo p50 + gem-shaped p50 + ${ALLOWANCE_MS} ms`,
    ...lines,
  ].join('\n');
}
