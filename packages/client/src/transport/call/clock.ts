// Time, injectable: the transport reads the time and sets timers only through a Clock, so tests
// can drive deadlines, backoff and hedge delays with a ManualClock instead of waiting.

import { type Abortable, watchAbort } from './cancellation.js';

/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/** The source of time and timers used by the transport. */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are meaningful). */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; unknown or already-fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock: `performance.now()` and the global timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Resolves after `ms` on `clock`. Rejects with the reason of `source`'s abort (an `AbortError`
 * `DOMException` for an AbortSignal aborted without one) if it aborts first, and at once if it
 * already has.
 */
export function sleep(clock: Clock, ms: number, source?: Abortable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (source?.aborted) {
      reject(source.reason);
      return;
    }
    const stopWatching = watchAbort(source, () => {
      clock.clearTimeout(timer);
      reject(source?.reason);
    });
    const timer = clock.setTimeout(() => {
      stopWatching();
      resolve();
    }, ms);
  });
}

interface ManualTimer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

/** Lets every pending promise reaction run (a macrotask turn drains the microtask queue). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock for tests: time stands still until {@link ManualClock.advance} moves it. Timers fire
 * in due-time order (ties in creation order), each with `now()` set to its due time, and the
 * promise reactions they trigger run before the next timer fires, so code that awaits between
 * timers behaves as it would under real time.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: ManualTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { id: this.#nextId++, at: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** The number of timers not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Due times of pending timers, earliest first. */
  get pendingDueTimes(): number[] {
    return this.#timers.map((t) => t.at).sort((a, b) => a - b);
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (including timers
   * set by those timers), letting promises settle before and after each one.
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next.at > target) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = next.at;
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  /** Advances exactly to the earliest pending timer and fires it (and any due with it). */
  async advanceToNextTimer(): Promise<void> {
    await settle();
    const next = this.#earliest();
    if (next === undefined) return;
    await this.advance(next.at - this.#now);
  }

  #earliest(): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.id < best.id)) best = t;
    }
    return best;
  }
}
