// Whether a call's caller is still there. A call is cancelled by its client, by its deadline, by
// the end of the stream that carries it or by the server's shutdown; most calls never are, and
// for most nothing waits on it. Node 20 makes an AbortSignal in some 2 µs and more to collect it:
// one for every call cost the server some 5% of its CPU a lone read (the journal's "A new
// machine"). So a call's AbortSignal is made only when something asks to wait on it.

/** A call's cancellation: read at any time, its AbortSignal made on first use. */
export class CallCancellation {
  #controller: AbortController | undefined;
  #signal: AbortSignal | undefined;
  #aborted = false;
  #reason: unknown;

  /** With `follow`, the call is cancelled when that signal aborts (a stream's), and only then. */
  constructor(follow?: AbortSignal) {
    this.#signal = follow;
  }

  get aborted(): boolean {
    return this.#signal === undefined ? this.#aborted : this.#signal.aborted;
  }

  /** Why the call was cancelled (as `AbortSignal.reason`); undefined while it is not. */
  get reason(): unknown {
    return this.#signal === undefined ? this.#reason : this.#signal.reason;
  }

  /** An AbortSignal that aborts when the call is cancelled (already aborted if it was). */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
      this.#signal = this.#controller.signal;
    }
    return this.#signal;
  }

  /** Cancels the call; once cancelled, it stays so with its first reason. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    if (this.#signal !== undefined && this.#controller === undefined) {
      throw new TypeError('a cancellation that follows a signal is cancelled through that signal');
    }
    this.#aborted = true;
    // What AbortController.abort() gives a signal aborted without a reason.
    this.#reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    this.#controller?.abort(this.#reason);
  }
}
