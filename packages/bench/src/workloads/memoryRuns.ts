// Memory under load: server RSS across a long mixed run (it must stay flat), and across a
// stream of a million cells to a consumer slower than the server (backpressure must hold
// the server's buffers, not let them grow with the stream).
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchStore, SeededSet } from '../subjects/benchStore.js';
import { runClosedLoop } from '../load/closedLoop.js';
import { type MemorySeries, memorySummary, sampleMemory } from '../measure/memorySampler.js';
import { BaselineTables } from '../subjects/mysqlBaseline.js';
import type { Progress } from '../load/progress.js';
import { getCell, putUpdate, writeCell } from './workloads.js';

export async function soak(
  bench: BenchStore,
  seeded: SeededSet,
  options: { minutes: number; concurrency: number },
  progress: Progress,
) {
  const context = {
    rate: bench.rate,
    tables: new BaselineTables('rate', bench.settings.shardsCount),
    seeded,
    bodyBytes: seeded.bodyBytes,
    shardsCount: bench.settings.shardsCount,
  };
  const operations = [getCell.sdk(context), writeCell.sdk(context), putUpdate.sdk(context)];
  const memory = sampleMemory(bench.server);
  const durationMs = options.minutes * 60_000;
  const ticker = setInterval(() => progress.note('soak: running'), 30_000);
  let next = 0;
  try {
    const load = await runClosedLoop((worker) => operations[next++ % operations.length]!(worker), {
      concurrency: options.concurrency,
      warmupMs: 0,
      durationMs,
    });
    const series = memory.stop();
    return { load, series, summary: memorySummary(series, 30) };
  } finally {
    clearInterval(ticker);
    memory.stop();
  }
}

export async function streamToSlowConsumer(
  bench: BenchStore,
  options: { cells: number; cellsPerSecond: number },
  progress: Progress,
): Promise<{
  received: number;
  seconds: number;
  series: MemorySeries;
  beforeMiB: number;
  maxMiB: number;
}> {
  const before = (await bench.server.rssBytes()) / 1024 / 1024;
  const memory = sampleMemory(bench.server, 500);
  const task = progress.task(
    `streaming ${options.cells.toLocaleString('en-US')} cells to a consumer taking ${options.cellsPerSecond}/s`,
    options.cells,
  );
  const started = Date.now();
  let received = 0;
  try {
    for await (const _cell of bench.rate.each({ batchSize: 500 })) {
      received += 1;
      if (received % 500 === 0) {
        task.advance(500);
        const due = started + (received / options.cellsPerSecond) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      if (received >= options.cells) break;
    }
  } finally {
    task.done();
  }
  const series = memory.stop();
  return {
    received,
    seconds: (Date.now() - started) / 1000,
    series,
    beforeMiB: before,
    maxMiB: Math.max(before, ...series.samples.map(([, mib]) => mib)),
  };
}
