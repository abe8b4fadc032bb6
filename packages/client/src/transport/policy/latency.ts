// Observed latency per method, for the hedge delay: a ring buffer of the last N successful
// attempts' durations, read as a percentile (nearest rank).

/** Settings of a {@link LatencyTracker}. */
export interface LatencyOptions {
  /** How many recent samples each method keeps. Default 100. */
  windowSize?: number;
  /** Fewer samples than this and the percentile is not trusted (undefined). Default 20. */
  minSamples?: number;
}

/**
 * The last `size` samples of one method, also kept sorted: every call reads the percentile
 * (for its hedge delay), so each sample moves the sorted copy by one insert and one removal
 * instead of re-sorting it.
 */
export class LatencyWindow {
  readonly #samples: number[] = [];
  readonly #sorted: number[] = [];
  readonly #size: number;
  #next = 0;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) {
      throw new RangeError(`latency window size must be an integer >= 1, got ${size}`);
    }
    this.#size = size;
  }

  /** How many samples are held (at most the window size). */
  get count(): number {
    return this.#samples.length;
  }

  /** Adds a sample, replacing the oldest when the window is full. */
  record(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    if (this.#samples.length < this.#size) {
      this.#samples.push(ms);
    } else {
      this.#sorted.splice(lowerBound(this.#sorted, this.#samples[this.#next]!), 1);
      this.#samples[this.#next] = ms;
    }
    this.#sorted.splice(lowerBound(this.#sorted, ms), 0, ms);
    this.#next = (this.#next + 1) % this.#size;
  }

  /**
   * The `q` quantile (0 < q <= 1) by nearest rank: the smallest sample such that at least
   * `q` of the samples are <= it. Undefined when empty.
   */
  quantile(q: number): number | undefined {
    if (this.#samples.length === 0) return undefined;
    const rank = Math.ceil(q * this.#sorted.length);
    const index = Math.min(this.#sorted.length - 1, Math.max(0, rank - 1));
    return this.#sorted[index];
  }
}

/** The first index of ascending `sorted` whose value is >= `value`. */
function lowerBound(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Latency windows keyed by method name. */
export class LatencyTracker {
  readonly #windows = new Map<string, LatencyWindow>();
  readonly #windowSize: number;
  readonly #minSamples: number;

  constructor(options: LatencyOptions = {}) {
    this.#windowSize = options.windowSize ?? 100;
    this.#minSamples = options.minSamples ?? 20;
    if (!Number.isInteger(this.#minSamples) || this.#minSamples < 1) {
      throw new RangeError(`latency minSamples must be an integer >= 1, got ${this.#minSamples}`);
    }
    new LatencyWindow(this.#windowSize); // validates the size
  }

  /** Records how long a successful attempt of `method` took. */
  record(method: string, ms: number): void {
    let window = this.#windows.get(method);
    if (window === undefined) {
      window = new LatencyWindow(this.#windowSize);
      this.#windows.set(method, window);
    }
    window.record(ms);
  }

  /** The number of samples held for `method`. */
  count(method: string): number {
    return this.#windows.get(method)?.count ?? 0;
  }

  /** The `q` quantile of `method`, or undefined until it has `minSamples` samples. */
  quantile(method: string, q: number): number | undefined {
    const window = this.#windows.get(method);
    if (window === undefined || window.count < this.#minSamples) return undefined;
    return window.quantile(q);
  }

  /** The 95th percentile of `method`, or undefined until it has `minSamples` samples. */
  p95(method: string): number | undefined {
    return this.quantile(method, 0.95);
  }
}
