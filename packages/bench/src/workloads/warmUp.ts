// The suite's warm-up: every workload it will measure, through the SDK and through its
// baselines, mixed, before the first measured run. A production server has long since run its
// code hot; a server started for the benchmark has not, and V8 takes tens of thousands of calls
// to optimise it. Measured (2026-11-27, Put (update) at 16 in flight from the server's start, in
// 2 s windows): the server's CPU a put was 521 µs in the first window (196 of them on the threads
// where V8 compiles), 322 at 6 s and 221–237 from 14 s on (those threads 7–24). The runs' own
// warm-ups (1,000 calls and a few hundred ms) leave a run inside that curve, so its figures
// measured V8 compiling the server as much as the server. See the performance journal, "A warm
// server".
import type { BenchStore, SeededSet } from '../subjects/benchStore.js';
import { runClosedLoop } from '../load/closedLoop.js';
import { openGemShapedClient } from '../subjects/gemShapedClient.js';
import { type BaselineTables, openBaselinePools } from '../subjects/mysqlBaseline.js';
import type { Progress } from '../load/progress.js';
import type { Workload, WorkloadContext } from './workloads.js';

export interface WarmUpPlan {
  /** Each workload with the body size it runs with; a workload that prepares records is left out. */
  readonly workloads: readonly { readonly workload: Workload; readonly bodyBytes: number }[];
  readonly durationMs: number;
}

/** Calls in flight for most of the warm-up; the rest is one at a time, as the runs are. */
const CONCURRENCY = 16;

export async function warmUp(
  bench: BenchStore,
  given: {
    tables: BaselineTables;
    seeded: ReadonlyMap<number, SeededSet>;
    baselineSeeded: ReadonlyMap<number, SeededSet>;
  },
  plan: WarmUpPlan,
  progress: Progress,
): Promise<void> {
  const chosen = plan.workloads.filter(({ workload }) => workload.prepare === undefined);
  if (plan.durationMs <= 0 || chosen.length === 0) return;
  const contextOf = (bodyBytes: number, seeded: SeededSet): WorkloadContext => ({
    rate: bench.rate,
    tables: given.tables,
    seeded,
    bodyBytes,
    shardsCount: bench.settings.shardsCount,
  });
  const pools = await openBaselinePools(bench.partitionUrl, CONCURRENCY, given.tables);
  const gemClient = openGemShapedClient(bench.partitionUrl, CONCURRENCY);
  const seconds = Math.ceil(plan.durationMs / 1000);
  const task = progress.task(
    `warming up the server and the baselines with ${chosen.length} workloads (s)`,
    seconds,
  );
  const ticker = setInterval(() => task.advance(1), 1000);
  try {
    const operations = chosen.flatMap(({ workload, bodyBytes }) => {
      const sdk = contextOf(bodyBytes, given.seeded.get(bodyBytes)!);
      const baseline = contextOf(bodyBytes, given.baselineSeeded.get(bodyBytes)!);
      return [
        workload.sdk(sdk),
        ...(workload.mysql ? [workload.mysql(baseline, pools)] : []),
        ...(workload.gem ? [workload.gem(baseline, gemClient)] : []),
      ];
    });
    let next = 0;
    const mixed = (worker: number) => operations[next++ % operations.length]!(worker);
    for (const [concurrency, share] of [
      [CONCURRENCY, 0.75],
      [1, 0.25],
    ] as const) {
      await runClosedLoop(mixed, { concurrency, warmupMs: 0, durationMs: plan.durationMs * share });
    }
  } finally {
    clearInterval(ticker);
    task.done();
    await pools.end();
    await gemClient.end();
  }
}
