// A closed-loop load: `concurrency` workers each run the operation again as soon as it
// returns, for a warm-up and then a measured window. Throughput is operations completed in the
// window divided by its length (an operation longer than the warm-up still counts when it
// completes inside the window); latency is per operation.
//
// The window lasts `durationMs`, or longer when the operations are slow: it stays open until
// twice `concurrency` of them have completed (or failed) in it, for at most `maxDurationMs`.
// The workers start together, so operations that each take longer than the window complete in
// waves, and a fixed window could fall between two waves and count none (64 Where calls of 100
// records of 16 KB, each 2 s or more, counted 0 in a 2 s window).
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
  /**
   * The longest the window stays open waiting for twice `concurrency` operations to complete in
   * it (default: 10 times `durationMs`, at least 30 s).
   */
  readonly maxDurationMs?: number;
  /** Told when the measured window opens and closes (a CPU meter reads its clocks there). */
  readonly window?: MeasuredWindow;
}

export interface LoadResult {
  /** Operations completed in the measured window. */
  readonly operations: number;
  /** How long the window was open: `durationMs`, or longer for slow operations. */
  readonly windowMs: number;
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
  // Times are kept from `start`, so the window's edges are the whole numbers of milliseconds the
  // options name: `due - measureFrom` is exactly `durationMs`, where absolute clock readings
  // could round it to 99.99999999999955 for 100.
  const start = performance.now();
  const sinceStart = () => performance.now() - start;
  const measureFrom = options.warmupMs;
  const due = measureFrom + options.durationMs;
  const maxDurationMs = options.maxDurationMs ?? Math.max(10 * options.durationMs, 30_000);
  const enough = 2 * options.concurrency;
  const edges = scheduleWindow(options.window, options.warmupMs);
  let operations = 0;
  let units = 0;
  let errors = 0;
  let firstError: string | undefined;
  /** When the window closed; no operation starts after, and none completing after counts. */
  let closedAt: number | undefined;
  const closeWindow = (at: number) => {
    if (closedAt !== undefined) return;
    closedAt = at;
    clearTimeout(dueTimer);
    clearTimeout(limitTimer);
    edges.close();
  };
  // A timer may fire a fraction of a millisecond early (libuv keeps time in whole ms).
  const dueTimer = setTimeout(() => {
    if (operations + errors >= enough) closeWindow(Math.max(sinceStart(), due));
  }, due);
  const limit = measureFrom + maxDurationMs;
  const limitTimer = setTimeout(() => closeWindow(Math.max(sinceStart(), limit)), limit);

  const worker = async (index: number) => {
    while (closedAt === undefined) {
      const began = sinceStart();
      let moved = 1;
      let failed = false;
      try {
        moved = (await operation(index)) ?? 1;
      } catch (error) {
        failed = true;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
      const finished = sinceStart();
      if (finished < measureFrom || (closedAt !== undefined && finished > closedAt)) continue;
      if (failed) {
        errors += 1;
      } else {
        operations += 1;
        units += moved;
        latencies.record(finished - began);
      }
      if (finished >= due && operations + errors >= enough) closeWindow(finished);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, i) => worker(i)));
  edges.finish();
  const windowMs = closedAt! - measureFrom;
  const seconds = windowMs / 1000;
  return {
    operations,
    windowMs,
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
