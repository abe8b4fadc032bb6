// Where the server's memory is, read from its Prometheus metrics: the V8 heap (used and
// reserved) and external memory (Buffers and array buffers outside the heap). What RSS holds
// beyond these is native: the allocator's pages, grpc-js and mysql2 included.
import { scrapeMetrics } from './metricsScrape.js';

export interface MemoryParts {
  rssMiB: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
}

const METRICS = {
  rssMiB: 'shameless_process_resident_memory_bytes',
  heapUsedMiB: 'shameless_nodejs_heap_size_used_bytes',
  heapTotalMiB: 'shameless_nodejs_heap_size_total_bytes',
  externalMiB: 'shameless_nodejs_external_memory_bytes',
} as const;

export async function serverMemory(metricsUrl: string): Promise<MemoryParts> {
  const samples = await scrapeMetrics(metricsUrl);
  const read = (name: string): number => {
    const bytes = samples.get(name);
    if (bytes === undefined) throw new Error(`${metricsUrl} has no ${name}`);
    return bytes / 1024 / 1024;
  };
  return {
    rssMiB: read(METRICS.rssMiB),
    heapUsedMiB: read(METRICS.heapUsedMiB),
    heapTotalMiB: read(METRICS.heapTotalMiB),
    externalMiB: read(METRICS.externalMiB),
  };
}

export function formatMemoryParts(parts: MemoryParts): string {
  return (
    `RSS ${parts.rssMiB.toFixed(0)} MiB = heap ${parts.heapTotalMiB.toFixed(0)} MiB ` +
    `(${parts.heapUsedMiB.toFixed(0)} used) + external ${parts.externalMiB.toFixed(0)} MiB + ` +
    `native ${(parts.rssMiB - parts.heapTotalMiB - parts.externalMiB).toFixed(0)} MiB`
  );
}
