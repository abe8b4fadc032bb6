// Each with follow, end to end: writers append through the SDK while a consumer follows every
// shard; the latency of a cell is from its writer seeing the acknowledgement to the consumer
// receiving it. A cell delivered before its acknowledgement arrives counts as 0 ms.
import { performance } from 'node:perf_hooks';
import type { ExactInteger } from '@shameless/client';
import type { RateModel } from '../subjects/benchStore.js';
import { runClosedLoop } from '../load/closedLoop.js';
import { LatencyRecorder, type LatencySummary } from '../load/latency.js';

export interface FollowResult {
  readonly writesPerSecond: number;
  readonly delivered: number;
  /** Acknowledged writes the consumer had not received when the run ended. */
  readonly undelivered: number;
  readonly latency: LatencySummary;
}

export async function measureFollowLatency(
  rate: RateModel,
  uuids: readonly string[],
  options: { writers: number; warmupMs: number; durationMs: number; bodyBytes: number },
): Promise<FollowResult> {
  const acknowledged = new Map<string, number>();
  const received = new Map<string, number>();
  const latencies = new LatencyRecorder();
  const match = (key: string, ackAt: number | undefined, receivedAt: number | undefined) => {
    if (ackAt === undefined || receivedAt === undefined) return false;
    latencies.record(Math.max(0, receivedAt - ackAt));
    acknowledged.delete(key);
    received.delete(key);
    return true;
  };

  const stop = new AbortController();
  const maxIds = await latestIds(rate);
  const consumer = (async () => {
    try {
      for await (const cell of rate.each({ follow: true, cursors: maxIds, signal: stop.signal })) {
        const key = `${cell.shard}:${cell.id}`;
        const now = performance.now();
        if (!match(key, acknowledged.get(key), now)) received.set(key, now);
      }
    } catch (error) {
      if (!stop.signal.aborted) throw error;
    }
  })();

  const payload = { payload: 'x'.repeat(Math.max(0, options.bodyBytes - 32)) };
  let measuring = false;
  setTimeout(() => (measuring = true), options.warmupMs).unref();
  const load = await runClosedLoop(
    async () => {
      const uuid = uuids[Math.floor(Math.random() * uuids.length)]!;
      const cell = await rate.record(uuid).meta.update(payload);
      if (!measuring) return;
      const key = `${cell.shard}:${cell.id}`;
      const now = performance.now();
      if (!match(key, now, received.get(key))) acknowledged.set(key, now);
    },
    { concurrency: options.writers, warmupMs: options.warmupMs, durationMs: options.durationMs },
  );
  // Let the last acknowledged writes arrive before stopping the consumer.
  const drainUntil = performance.now() + 2000;
  while (acknowledged.size > 0 && performance.now() < drainUntil) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  stop.abort();
  await consumer;
  return {
    writesPerSecond: load.opsPerSecond,
    delivered: latencies.count,
    undelivered: acknowledged.size,
    latency: latencies.summary(),
  };
}

/** Every shard's max id now: the follower starts there, skipping the seeded history. */
async function latestIds(rate: RateModel): Promise<Map<number, ExactInteger>> {
  const maxIds = await Promise.all(rate.shards.map((shard) => rate.maxIdOnShard(shard)));
  return new Map(rate.shards.map((shard, i) => [shard, maxIds[i]!]));
}
