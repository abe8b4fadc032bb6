// The server's memory under the loads that once grew it without bound (issue 12), read with a
// raw gRPC client so that every status is seen as the server answered it (the SDK would retry
// RESOURCE_EXHAUSTED): many concurrent GetCells of 15 MiB answers, and Each streams whose
// client never reads. RSS is sampled every 100 ms; the peaks and what is left after are the
// figures.
import { setTimeout as sleep } from 'node:timers/promises';
import { Metadata, type ServiceError, credentials, status } from '@grpc/grpc-js';
import { type EachRequest, type GetCellsResponse, StoreClient } from '@shameless/proto';
import type { BenchStore, SeededSet } from '../subjects/benchStore.js';
import { sampleMemory } from '../measure/memorySampler.js';
import { type MemoryParts, serverMemory } from '../measure/serverMemory.js';

export interface MemoryPeak {
  beforeMiB: number;
  peakMiB: number;
  /** RSS some seconds after the load ended. */
  afterMiB: number;
  /** Heap, external and the rest, before and after, when the server serves metrics. */
  partsBefore?: MemoryParts;
  partsAfter?: MemoryParts;
}

export interface ConcurrentReadsResult extends MemoryPeak {
  concurrency: number;
  rounds: number;
  /** Whether one call ran first, alone, so that the server knew GetCells answers. */
  warmUp: boolean;
  answerMiB: number;
  /** Calls by status name: only OK and RESOURCE_EXHAUSTED are acceptable. */
  statuses: Record<string, number>;
}

// Long enough for the server to look twice whether to release memory (memoryRelease.ts).
const SETTLE_MS = 12_000;

function rawClient(bench: BenchStore): StoreClient {
  return new StoreClient(bench.server.address, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
  });
}

async function measured<T>(
  bench: BenchStore,
  load: () => Promise<T>,
): Promise<{ result: T } & MemoryPeak> {
  const parts = async () => (bench.metricsUrl ? await serverMemory(bench.metricsUrl) : undefined);
  const partsBefore = await parts();
  const beforeMiB = (await bench.server.rssBytes()) / 1024 / 1024;
  const memory = sampleMemory(bench.server, 100);
  const result = await load();
  const peakMiB = Math.max(beforeMiB, ...memory.stop().samples.map(([, mib]) => mib));
  await sleep(SETTLE_MS);
  const afterMiB = (await bench.server.rssBytes()) / 1024 / 1024;
  const partsAfter = await parts();
  return {
    result,
    beforeMiB,
    peakMiB,
    afterMiB,
    ...(partsBefore ? { partsBefore } : {}),
    ...(partsAfter ? { partsAfter } : {}),
  };
}

/** `concurrency` GetCells of every seeded record at once, `rounds` times. */
export async function concurrentLargeReads(
  bench: BenchStore,
  seeded: SeededSet,
  options: { concurrency: number; rounds: number; warmUp: boolean },
): Promise<ConcurrentReadsResult> {
  const client = rawClient(bench);
  const keys = seeded.uuids.map((uuid) => ({ uuid, cell: '' }));
  const statuses: Record<string, number> = {};
  let answerBytes = 0;
  const getCells = () =>
    new Promise<void>((resolve) =>
      client.getCells(
        { model: 'rate', keys },
        new Metadata(),
        { deadline: Date.now() + 60_000 },
        (error: ServiceError | null, response: GetCellsResponse) => {
          const name = status[error ? error.code : status.OK];
          statuses[name] = (statuses[name] ?? 0) + 1;
          if (response) {
            answerBytes = response.results.reduce((sum, r) => sum + (r.cell?.body.length ?? 0), 0);
          }
          resolve();
        },
      ),
    );
  try {
    if (options.warmUp) {
      // One call first, as after any warm-up: the server knows what GetCells answers weigh.
      await getCells();
      delete statuses.OK;
    }
    const peak = await measured(bench, async () => {
      for (let round = 0; round < options.rounds; round++) {
        await Promise.all(Array.from({ length: options.concurrency }, getCells));
      }
    });
    const { result: _, ...memory } = peak;
    return {
      ...options,
      ...memory,
      answerMiB: answerBytes / 1024 / 1024,
      statuses,
    };
  } finally {
    client.close();
  }
}

/** Each of the whole model from the start, with server defaults. */
const everyShard = (follow: boolean): EachRequest => ({
  model: 'rate',
  shards: [],
  cursors: {},
  follow,
  batchSize: 0,
  heartbeatIntervalMs: 0,
});

/** `streams` Each streams of the whole model that are never read, held open for `holdMs`. */
export async function neverReadStreams(
  bench: BenchStore,
  options: { streams: number; holdMs: number },
): Promise<MemoryPeak & { streams: number; statuses: Record<string, number> }> {
  const client = rawClient(bench);
  const statuses: Record<string, number> = {};
  try {
    // One stream read to its first message first: the server learns what Each messages and
    // cells weigh (admission and read-ahead size themselves by that), as after any warm-up.
    const warmUp = client.each(everyShard(false));
    await new Promise((resolve) => warmUp.once('data', resolve));
    warmUp.cancel();
    warmUp.on('error', () => {});
    const peak = await measured(bench, async () => {
      const calls = Array.from({ length: options.streams }, () => {
        const call = client.each(everyShard(true));
        call.pause();
        call.on('error', (error: ServiceError) => {
          const name = status[error.code];
          statuses[name] = (statuses[name] ?? 0) + 1;
        });
        return call;
      });
      await sleep(options.holdMs);
      for (const call of calls) call.cancel();
    });
    const { result: _, ...memory } = peak;
    return { streams: options.streams, ...memory, statuses };
  } finally {
    client.close();
  }
}
