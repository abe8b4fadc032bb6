// An open-loop load: operations start at a fixed rate whether or not earlier ones finished,
// as independent clients would send them. Latency at a given load (e.g. half the peak a
// closed loop reached) is measured this way; a closed loop only shows latency at saturation.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadResult } from './closedLoop.js';
import { LatencyRecorder } from './latency.js';
import { type MeasuredWindow, scheduleWindow } from './measuredWindow.js';

/**
 * Starts `operation` `ratePerSecond` times a second for the warm-up plus the duration. The
 * measured window (`options.window`) runs from the end of the warm-up until the last call
 * started in it has settled: those are the calls counted.
 */
export async function runOpenLoop(
  operation: (worker: number) => Promise<number | void>,
  options: {
    ratePerSecond: number;
    warmupMs: number;
    durationMs: number;
    window?: MeasuredWindow;
  },
): Promise<LoadResult> {
  const latencies = new LatencyRecorder();
  const intervalMs = 1000 / options.ratePerSecond;
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const end = measureFrom + options.durationMs;
  const edges = scheduleWindow(options.window, options.warmupMs);
  const pending = new Set<Promise<void>>();
  let completed = 0;
  let errors = 0;
  let firstError: string | undefined;
  for (let sent = 0; ; sent++) {
    const due = start + sent * intervalMs;
    if (due >= end) break;
    const now = performance.now();
    // Timers are coarse: sleep only when a whole millisecond ahead, else send the due ones.
    if (due - now >= 1) await sleep(due - now);
    const scheduled = due;
    const call = operation(sent).then(
      () => {
        const finished = performance.now();
        if (scheduled < measureFrom) return;
        completed += 1;
        // From when the call was due, so a late start counts against it (no coordinated omission).
        latencies.record(finished - scheduled);
      },
      (error: unknown) => {
        if (scheduled < measureFrom) return;
        errors += 1;
        firstError ??= error instanceof Error ? error.message : String(error);
      },
    );
    const tracked = call.finally(() => pending.delete(tracked));
    pending.add(tracked);
  }
  await Promise.all(pending);
  edges.finish();
  return {
    operations: completed,
    windowMs: options.durationMs,
    opsPerSecond: completed / (options.durationMs / 1000),
    unitsPerSecond: completed / (options.durationMs / 1000),
    latency: latencies.summary(),
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
}
