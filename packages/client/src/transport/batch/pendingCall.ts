// A caller's call while the coalescing layer holds it (queued for the end of the tick, waiting
// for a batch of its kind to come back, or in a batch): its request, its own deadline and
// AbortSignal, and the promise its caller awaits. Whatever happens to the batch, the caller is
// answered once.

import type { Clock, TimerHandle } from '../call/clock.js';
import { CancelledError, DeadlineExceededError } from '../call/errors.js';
import type { UnaryCallOptions } from '../call/transportInterface.js';

/** One caller's call, held by the coalescing layer until it is answered. */
export class PendingCall<Req, Res> {
  /** The method the caller called (`getCell`): what its errors name. */
  readonly method: string;
  readonly request: Req;
  readonly options: UnaryCallOptions;
  /** The caller's deadline, ms from its call (`Infinity`: none). */
  readonly deadlineMs: number;
  /** When that deadline passes, on the layer's clock. */
  readonly deadlineAt: number;
  /** Settles once, with the answer or the error. */
  readonly answer: Promise<Res>;
  #settled = false;
  #resolve: (value: Res) => void = () => {};
  #reject: (error: unknown) => void = () => {};
  #onAbort: (() => void) | undefined;
  #waitTimer: { readonly clock: Clock; readonly handle: TimerHandle } | undefined;
  #waited = false;

  constructor(
    method: string,
    request: Req,
    options: UnaryCallOptions,
    deadlineMs: number,
    now: number,
  ) {
    this.method = method;
    this.request = request;
    this.options = options;
    this.deadlineMs = deadlineMs;
    this.deadlineAt = now + deadlineMs;
    this.answer = new Promise<Res>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Whether the caller has its answer (or error). */
  get settled(): boolean {
    return this.#settled;
  }

  /**
   * While the layer holds the call, an abort of the caller's signal rejects it at once (as the
   * transport rejects an aborted call), and `left` is told: its batch may have nobody left to
   * answer.
   */
  holdAbort(left: () => void): void {
    this.releaseAbort();
    const signal = this.options.signal;
    if (signal === undefined) return;
    const onAbort = (): void => {
      if (this.reject(new CancelledError('the call was aborted', { cause: signal.reason }))) left();
    };
    this.#onAbort = onAbort;
    signal.addEventListener('abort', onAbort, { once: true });
  }

  /** Stops watching the caller's signal: the call goes on as a call of its own, which does. */
  releaseAbort(): void {
    if (this.#onAbort === undefined) return;
    this.options.signal?.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
  }

  /**
   * The call waits, unsent, for a batch call of its kind to come back. Its own deadline may
   * pass meanwhile: it then fails, never sent. True the first time the call waits.
   */
  waitForRoom(clock: Clock): boolean {
    const first = !this.#waited;
    this.#waited = true;
    if (this.#waitTimer !== undefined || !Number.isFinite(this.deadlineAt)) return first;
    const handle = clock.setTimeout(() => {
      this.#waitTimer = undefined;
      this.reject(
        new DeadlineExceededError(
          `${this.method}: deadline of ${this.deadlineMs} ms exceeded before it was sent, ` +
            'waiting for a batch call of its kind to come back',
        ),
      );
    }, this.deadlineAt - clock.now());
    this.#waitTimer = { clock, handle };
    return first;
  }

  /** The call is sent: whatever watches it from now keeps its deadline. */
  stopWaiting(): void {
    if (this.#waitTimer === undefined) return;
    this.#waitTimer.clock.clearTimeout(this.#waitTimer.handle);
    this.#waitTimer = undefined;
  }

  /** Answers the caller; false when it was answered already. */
  resolve(value: Res): boolean {
    if (!this.#settle()) return false;
    this.#resolve(value);
    return true;
  }

  /** Fails the caller's call; false when it was answered already. */
  reject(error: unknown): boolean {
    if (!this.#settle()) return false;
    this.#reject(error);
    return true;
  }

  /**
   * Fails the call with its own deadline (which passed while it waited in a batch of
   * `batchSize` calls); false when it was answered already.
   */
  expire(batchSize: number, cause?: unknown): boolean {
    return this.reject(
      new DeadlineExceededError(
        `${this.method}: deadline of ${this.deadlineMs} ms exceeded, in a batch of ` +
          `${batchSize} calls`,
        cause === undefined ? undefined : { cause },
      ),
    );
  }

  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.releaseAbort();
    this.stopWaiting();
    return true;
  }
}
