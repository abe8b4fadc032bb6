// Latencies of one run, kept whole (a run is seconds long: at most a few hundred thousand
// samples) so percentiles are exact rather than bucketed.

export interface LatencySummary {
  /** Samples recorded. */
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

export class LatencyRecorder {
  #samples = new Float64Array(1 << 16);
  #count = 0;

  /** Records one latency in milliseconds. */
  record(ms: number): void {
    if (this.#count === this.#samples.length) {
      const grown = new Float64Array(this.#samples.length * 2);
      grown.set(this.#samples);
      this.#samples = grown;
    }
    this.#samples[this.#count++] = ms;
  }

  get count(): number {
    return this.#count;
  }

  summary(): LatencySummary {
    const sorted = this.#samples.slice(0, this.#count).sort();
    return {
      count: this.#count,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      p999: percentile(sorted, 0.999),
      max: this.#count === 0 ? Number.NaN : sorted[this.#count - 1]!,
    };
  }
}

/** The nearest-rank percentile of ascending samples; NaN when there are none. */
export function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(fraction * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
