// A closed-loop load: `concurrency` workers each run the operation again as soon as it
// returns, for a warm-up and then a measured window. Throughput is operations completed in the
// window divided by its length (an operation longer than the warm-up still counts when it
// completes inside the window); latency is per operation.
//
// The warm-up is counted in operations as well as in time: a run of one call at a time does a
// few hundred calls in a short warm-up, and V8 has not yet optimised the code they run (a
// GetCell's p50 measured 1.8-2.1 ms after 200 calls, 1.3 ms after 1,500, on this project's
// machine). Every run, the baselines' too, warms up the same way.
import { performance } from 'node:perf_hooks';
import { LatencyRecorder, type LatencySummary } from './latency.js';
import { type MeasuredWindow, scheduleWindow } from './measuredWindow.js';

export interface LoadOptions {
  readonly concurrency: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /**
   * Operations completed, all workers together, before the timed warm-up starts; this priming
   * stops after `primeMaxMs` (default 3 s) even if fewer completed. Default 0.
   */
  readonly warmupOperations?: number;
  readonly primeMaxMs?: number;
  /** Told when the measured window opens and closes (a CPU meter reads its clocks there). */
  readonly window?: MeasuredWindow;
}

export interface LoadResult {
  /** Operations completed in the measured window. */
  readonly operations: number;
  /** Operations per second over the measured window. */
  readonly opsPerSecond: number;
  /** Units per second (cells for batch operations, records for Where), when one op moves many. */
  readonly unitsPerSecond: number;
  readonly latency: LatencySummary;
  /** Operations that threw in the measured window; the first error's message is kept. */
  readonly errors: number;
  readonly firstError?: string;
}

/**
 * Runs `operation(worker)` in a closed loop. The operation returns how many units it moved
 * (1 for a plain call). Errors are counted, not thrown: a benchmark reports them.
 */
export async function runClosedLoop(
  operation: (worker: number) => Promise<number | void>,
  options: LoadOptions,
): Promise<LoadResult> {
  await prime(operation, options);
  const latencies = new LatencyRecorder();
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const end = measureFrom + options.durationMs;
  const edges = scheduleWindow(
    options.window,
    options.warmupMs,
    options.warmupMs + options.durationMs,
  );
  let operations = 0;
  let units = 0;
  let errors = 0;
  let firstError: string | undefined;

  const worker = async (index: number) => {
    for (;;) {
      const began = performance.now();
      // No new operation once the window is over (an operation in flight then is not counted).
      if (began >= end) return;
      let moved = 1;
      let failed = false;
      try {
        moved = (await operation(index)) ?? 1;
      } catch (error) {
        failed = true;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
      const finished = performance.now();
      if (finished < measureFrom || finished > end) continue;
      if (failed) {
        errors += 1;
        continue;
      }
      operations += 1;
      units += moved;
      latencies.record(finished - began);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, i) => worker(i)));
  edges.finish();
  const seconds = options.durationMs / 1000;
  return {
    operations,
    opsPerSecond: operations / seconds,
    unitsPerSecond: units / seconds,
    latency: latencies.summary(),
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/** Runs `operation` unmeasured until `warmupOperations` completed or `primeMaxMs` passed. */
async function prime(
  operation: (worker: number) => Promise<number | void>,
  { concurrency, warmupOperations = 0, primeMaxMs = 3000 }: LoadOptions,
): Promise<void> {
  const until = performance.now() + primeMaxMs;
  let started = 0;
  const worker = async (index: number) => {
    while (started < warmupOperations && performance.now() < until) {
      started += 1;
      // Errors are the measured run's to count.
      await operation(index).catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
}
