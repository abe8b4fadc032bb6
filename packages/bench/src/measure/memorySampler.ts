// The server's resident memory over a run, sampled once a second.
import type { ListeningProcess } from '@shameless/testkit';

export interface MemorySeries {
  /** [seconds since start, RSS in MiB]. */
  readonly samples: readonly (readonly [number, number])[];
}

export function sampleMemory(server: ListeningProcess, intervalMs = 1000) {
  const samples: [number, number][] = [];
  const started = Date.now();
  const sample = async () => {
    const rss = await server.rssBytes().catch(() => Number.NaN);
    if (Number.isFinite(rss)) samples.push([(Date.now() - started) / 1000, rss / 1024 / 1024]);
  };
  void sample();
  const timer = setInterval(() => void sample(), intervalMs);
  timer.unref();
  return {
    stop(): MemorySeries {
      clearInterval(timer);
      return { samples };
    },
  };
}

/** First, last and highest RSS after `skipSeconds` (start-up and first allocations). */
export function memorySummary(series: MemorySeries, skipSeconds: number) {
  const steady = series.samples.filter(([at]) => at >= skipSeconds).map(([, mib]) => mib);
  if (steady.length === 0) return undefined;
  const first = steady[0]!;
  const last = steady[steady.length - 1]!;
  return { firstMiB: first, lastMiB: last, maxMiB: Math.max(...steady), growth: last / first - 1 };
}
