// Exponential backoff with full jitter (the "Full Jitter" of the AWS architecture blog): the
// wait before retry n is uniformly random in [0, min(maxMs, baseMs * multiplier^n)).

/** Settings of {@link exponentialBackoff}. */
export interface BackoffOptions {
  /** The ceiling of the first retry's delay, in ms. */
  baseMs: number;
  /** The largest ceiling, in ms. */
  maxMs: number;
  /** Growth of the ceiling per retry (2 doubles it). */
  multiplier: number;
}

/** Defaults: ceilings 20, 40, 80, ... ms, capped at 1 s. */
export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = { baseMs: 20, maxMs: 1000, multiplier: 2 };

/** Decides how long to wait before a retry. */
export interface BackoffPolicy {
  /** The delay in ms before retry number `retry` (0 for the first retry). */
  delay(retry: number): number;
}

/** A source of uniform random numbers in [0, 1), like `Math.random`. */
export type RandomSource = () => number;

/** The upper bound of the delay before retry `retry`: min(maxMs, baseMs * multiplier^retry). */
export function backoffCeiling(options: BackoffOptions, retry: number): number {
  const ceiling = options.baseMs * Math.pow(options.multiplier, Math.max(0, retry));
  return Math.min(options.maxMs, Number.isFinite(ceiling) ? ceiling : options.maxMs);
}

/** Checks backoff settings, throwing a RangeError naming the bad one. */
export function validateBackoff(options: BackoffOptions): void {
  if (!(options.baseMs >= 0) || !Number.isFinite(options.baseMs)) {
    throw new RangeError(`backoff baseMs must be a finite number >= 0, got ${options.baseMs}`);
  }
  if (!(options.maxMs >= options.baseMs) || !Number.isFinite(options.maxMs)) {
    throw new RangeError(`backoff maxMs must be finite and >= baseMs, got ${options.maxMs}`);
  }
  if (!(options.multiplier >= 1) || !Number.isFinite(options.multiplier)) {
    throw new RangeError(`backoff multiplier must be >= 1, got ${options.multiplier}`);
  }
}

/**
 * Exponential backoff with full jitter: `delay(n) = random() * min(maxMs, baseMs * multiplier^n)`,
 * so every delay lies in [0, ceiling). `random` is injectable for tests.
 */
export function exponentialBackoff(
  options: BackoffOptions = DEFAULT_BACKOFF,
  random: RandomSource = Math.random,
): BackoffPolicy {
  validateBackoff(options);
  const settings = { ...options };
  return {
    delay(retry: number): number {
      return random() * backoffCeiling(settings, retry);
    },
  };
}
