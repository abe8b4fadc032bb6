// Deadlines watched with one timer: most calls and statements end long before theirs. A timer
// set and cleared for each cost a lone call's server some 4% of its CPU (docs/performance.md, "A
// timer a call"): at one call at a time, Node made and dropped a timer list for each. One timer
// is armed for the earliest deadline watched; what ends in time unwatches its own and leaves the
// timer as it is; when the timer fires it expires what is due and arms itself for the earliest
// deadline left. A deadline after the armed one (most, where every caller gives the same time)
// sets no timer. The Pipeline watches its calls' deadlines so, the pool its prepared statements'.

/** A deadline being watched: {@link DeadlineWatch.unwatch} takes it back. */
export interface WatchedDeadline {
  /** When it passes, ms since the epoch. */
  readonly at: number;
  readonly onPassed: () => void;
}

/** The most a Node timer waits; longer delays fire at once, so the watch arms in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class DeadlineWatch {
  readonly #watched = new Set<WatchedDeadline>();
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires; Infinity when none is armed. */
  #armedFor = Infinity;

  /** Calls `onPassed` once `at` has passed, unless unwatched before; never for Infinity. */
  watch(at: number, onPassed: () => void): WatchedDeadline {
    const watched: WatchedDeadline = { at, onPassed };
    if (at === Infinity) return watched;
    this.#watched.add(watched);
    if (at < this.#armedFor) this.#arm(at);
    return watched;
  }

  unwatch(watched: WatchedDeadline): void {
    this.#watched.delete(watched);
  }

  /** Clears the timer and forgets every deadline, none of them told. */
  close(): void {
    this.#watched.clear();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = at;
    this.#timer = setTimeout(
      () => this.#fire(),
      Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
    );
    // What is watched keeps the process alive by its own socket (a call's stream, a statement's
    // connection): the watch alone does not.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    // The timer runs on the event loop's clock, which lags Date.now() by what the loop's turn
    // had spent when it was armed: it may fire a little early, and then arms again.
    const now = Date.now();
    let next = Infinity;
    const passed: WatchedDeadline[] = [];
    for (const watched of this.#watched) {
      if (watched.at <= now) passed.push(watched);
      else if (watched.at < next) next = watched.at;
    }
    for (const watched of passed) this.#watched.delete(watched);
    if (next < Infinity) this.#arm(next);
    // Told last: what a deadline's passing does may watch or unwatch others.
    for (const watched of passed) watched.onPassed();
  }
}
