// Whether a call, or one attempt of it, was cancelled: by the caller's signal, by its deadline,
// or (an attempt) by the hedge that answered first. Every layer below the deadline layer reads it
// and two or three watch it, on every call; an AbortSignal for that costs more than the chain's
// own work around it. Node 20 makes one in some 2 µs and each listener added and removed in about
// 1.3, slower on a lone call's cold path. Paired in one process against the same server, a lone
// GetCell with this in the signal's place took 0.92–0.93× the SDK's CPU, a lone Where 0.85×
// (docs/performance.md, "A call's cancellation without an AbortSignal"). So the chain carries
// this, and an AbortSignal is made only for whoever asks for one (the user's interceptors).

/** A call's or an attempt's cancellation, as the layers read and watch it. */
export interface Cancellation {
  readonly aborted: boolean;
  /** Why it was cancelled (the typed error the caller gets); undefined while it is not. */
  readonly reason: unknown;
  /**
   * Calls `listener` once, when it is cancelled; never if it already was (as an AbortSignal's
   * 'abort' listener). Returns what stops watching.
   */
  onAbort(listener: () => void): () => void;
  /** An AbortSignal that aborts with it (with its reason), made on first use. */
  readonly signal: AbortSignal;
}

/** What may cancel something: a cancellation of the chain, or a caller's AbortSignal. */
export type Abortable = Cancellation | AbortSignal;

const NOT_WATCHING = (): void => {};

/** Watches `source` for its abort; returns what stops watching. */
export function watchAbort(source: Abortable | undefined, listener: () => void): () => void {
  if (source === undefined) return NOT_WATCHING;
  if (isCancellation(source)) return source.onAbort(listener);
  // A caller's signal: not always this realm's AbortSignal (a polyfill's, another context's),
  // so told apart by what it has rather than by its class.
  source.addEventListener('abort', listener, { once: true });
  return () => source.removeEventListener('abort', listener);
}

function isCancellation(source: Abortable): source is Cancellation {
  return typeof (source as Partial<Cancellation>).onAbort === 'function';
}

export class CallCancellation implements Cancellation {
  #aborted = false;
  #reason: unknown;
  /** Most calls have one or two watchers at a time: a list, not a set or an EventTarget. */
  #listeners: (() => void)[] = [];
  #controller: AbortController | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  onAbort(listener: () => void): () => void {
    if (this.#aborted) return NOT_WATCHING;
    this.#listeners.push(listener);
    return () => {
      const at = this.#listeners.indexOf(listener);
      if (at !== -1) this.#listeners.splice(at, 1);
    };
  }

  /** Cancels it with `reason`, telling its watchers; once cancelled, it keeps its first reason. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    this.#controller?.abort(reason);
    for (const listener of listeners) listener();
  }
}

/** A cancellation of one's own that also follows others; `unlink` stops the following. */
export interface LinkedCancellation {
  readonly cancellation: CallCancellation;
  unlink(): void;
}

/**
 * A cancellation that is cancelled when any of `sources` is (with its reason), or on its own:
 * the call's follows the caller's signal, each hedged attempt's follows the call's, so that
 * cancelling a call reaches every attempt and a layer can cancel one attempt alone.
 */
export function linkedCancellation(
  ...sources: readonly (Abortable | undefined)[]
): LinkedCancellation {
  const cancellation = new CallCancellation();
  const stops: (() => void)[] = [];
  for (const source of sources) {
    if (source === undefined) continue;
    if (source.aborted) {
      cancellation.abort(source.reason);
      break;
    }
    stops.push(watchAbort(source, () => cancellation.abort(source.reason)));
  }
  return {
    cancellation,
    unlink: () => {
      for (const stop of stops) stop();
    },
  };
}
