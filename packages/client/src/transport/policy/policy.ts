// Retry and hedge policies: the user-facing settings, their defaults, and the resolved policy
// objects the call pipeline consults. Both are plain injectable objects.

import {
  DEFAULT_BACKOFF,
  exponentialBackoff,
  type BackoffPolicy,
  type RandomSource,
} from './backoff.js';
import type { LatencyTracker } from './latency.js';

/** Retry settings. Retries apply only to calls marked idempotent. */
export interface RetryOptions {
  /** Attempts in all, the first included (so 4 = up to 3 retries). Default 4. */
  maxAttempts?: number;
  /** Ceiling of the first backoff delay, ms. Default 20. */
  baseMs?: number;
  /** Largest backoff ceiling, ms. Default 1000. */
  maxMs?: number;
  /** Growth of the ceiling per retry. Default 2. */
  multiplier?: number;
}

/** Hedging settings. Hedges apply only to calls marked hedgeable (reads). */
export interface HedgeOptions {
  /**
   * Send a hedge once the outstanding attempt has been out this long, ms. When unset, the
   * method's observed 95th-percentile latency is used.
   */
  delayMs?: number;
  /** Extra attempts per call at most. Default 1. */
  maxHedges?: number;
  /** The delay used until a method has enough latency samples, ms. Default 20. */
  fallbackDelayMs?: number;
  /** The smallest delay derived from observed latency, ms. Default 1. */
  minDelayMs?: number;
}

/** The resolved retry policy. */
export interface RetryPolicy {
  /** Attempts in all, the first included (>= 1). */
  readonly maxAttempts: number;
  /** The wait before each retry. */
  readonly backoff: BackoffPolicy;
}

/** The resolved hedge policy. */
export interface HedgePolicy {
  /** Extra attempts per call at most (>= 1). */
  readonly maxHedges: number;
  /** How long to wait for an attempt of `method` before hedging it, ms. */
  delayFor(method: string): number;
}

/** Default retry settings. */
export const DEFAULT_RETRY: Readonly<Required<RetryOptions>> = {
  maxAttempts: 4,
  ...DEFAULT_BACKOFF,
};

/** Default hedge settings (besides `delayMs`, which defaults to the observed p95). */
export const DEFAULT_HEDGE: Readonly<Required<Omit<HedgeOptions, 'delayMs'>>> = {
  maxHedges: 1,
  fallbackDelayMs: 20,
  minDelayMs: 1,
};

/** Resolves retry settings; `false` (or maxAttempts 1) means no retries (null). */
export function resolveRetryPolicy(
  options: RetryOptions | false | undefined,
  random: RandomSource = Math.random,
): RetryPolicy | null {
  if (options === false) return null;
  const settings = { ...DEFAULT_RETRY, ...definedOnly(options ?? {}) };
  if (!Number.isInteger(settings.maxAttempts) || settings.maxAttempts < 1) {
    throw new RangeError(`retry maxAttempts must be an integer >= 1, got ${settings.maxAttempts}`);
  }
  if (settings.maxAttempts === 1) return null;
  return { maxAttempts: settings.maxAttempts, backoff: exponentialBackoff(settings, random) };
}

/**
 * Resolves hedge settings; `false` (or maxHedges 0) means no hedging (null). Without a fixed
 * `delayMs` the delay is `max(minDelayMs, p95)` of the method's observed latency, or
 * `fallbackDelayMs` until enough samples are in.
 */
export function resolveHedgePolicy(
  options: HedgeOptions | false | undefined,
  latency: LatencyTracker,
): HedgePolicy | null {
  if (options === false) return null;
  const settings = { ...DEFAULT_HEDGE, ...definedOnly(options ?? {}) };
  if (!Number.isInteger(settings.maxHedges) || settings.maxHedges < 0) {
    throw new RangeError(`hedge maxHedges must be an integer >= 0, got ${settings.maxHedges}`);
  }
  for (const key of ['delayMs', 'fallbackDelayMs', 'minDelayMs'] as const) {
    const value = settings[key];
    if (value !== undefined && (!Number.isFinite(value) || value < 0)) {
      throw new RangeError(`hedge ${key} must be a finite number >= 0, got ${value}`);
    }
  }
  if (settings.maxHedges === 0) return null;
  const fixed = settings.delayMs;
  return {
    maxHedges: settings.maxHedges,
    delayFor(method: string): number {
      if (fixed !== undefined) return fixed;
      const p95 = latency.p95(method);
      return p95 === undefined ? settings.fallbackDelayMs : Math.max(settings.minDelayMs, p95);
    },
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
