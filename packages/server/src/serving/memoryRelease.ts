// Memory returning after load (issue 12). The Buffers a load of large answers makes (rows read,
// messages encoded) outlive it as garbage: V8 frees them only at its next full collection, and
// a server that has gone quiet allocates nothing that would start one. `pnpm bench --memory`
// found 170–280 MiB of such Buffers minutes after the load ended, all of it freed by one full
// collection. So the server checks, on a timer, the memory Buffers hold outside the V8 heap,
// and collects once it passes a threshold: with a heap of some tens of MiB, a full collection
// costs milliseconds, at most once per interval. What the C allocator then keeps of the freed
// pages is the allocator's to give back; see docs/limits.md (Memory after load).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface MemoryReleaseOptions {
  /** How often to look. */
  readonly intervalMs: number;
  /** Bytes held by Buffers and array buffers outside the heap beyond which to collect. */
  readonly externalBytes: number;
}

export const DEFAULT_MEMORY_RELEASE: MemoryReleaseOptions = {
  intervalMs: 5_000,
  externalBytes: 64 * 1024 * 1024,
};

/** V8's full collection, reached without `--expose-gc` on the command line. */
export function fullCollection(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return exposed;
  setFlagsFromString('--expose-gc');
  // The flag exposes `gc` in contexts made after it: a new one hands it over.
  return runInNewContext('gc') as () => void;
}

export class MemoryRelease {
  private readonly collect = fullCollection();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: MemoryReleaseOptions = DEFAULT_MEMORY_RELEASE) {}

  start(): void {
    this.timer ??= setInterval(() => this.check(), this.options.intervalMs);
    // A timer that keeps nothing alive: shutdown does not wait for it.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Collects if Buffers outside the heap hold more than the threshold; true when it did. */
  check(): boolean {
    if (process.memoryUsage().external < this.options.externalBytes) return false;
    this.collect();
    return true;
  }
}
