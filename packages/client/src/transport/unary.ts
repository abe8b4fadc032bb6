// The unary call pipeline: one logical call becomes one or more attempts, under one overall
// deadline, with retries (after backoff, for transient failures of calls safe to repeat) and
// hedges (extra attempts to other endpoints when an attempt is slow), both paid for from the
// shared token budget. The pipeline knows nothing of gRPC: it starts attempts through a
// callback, so its scheduling can be driven by a ManualClock.

import type { TokenBudget } from './budget.js';
import type { Clock, TimerHandle } from './clock.js';
import type { EndpointPicker } from './endpoints.js';
import {
  CancelledError,
  asConnectionLoss,
  DeadlineExceededError,
  UnavailableError,
  toShamelessError,
  type ShamelessError,
} from './errors.js';
import type { LatencyTracker } from './latency.js';
import type { HedgePolicy, RetryPolicy } from './policy.js';
import type { TransportCounters } from './stats.js';

/** Per-call options of a unary call. */
export interface UnaryCallOptions {
  /**
   * The call is safe to send more than once: a read, or a write carrying a `requestId` (the
   * same request object, with the same requestId, is sent on every attempt). Only such calls
   * are retried.
   */
  idempotent: boolean;
  /** The call may be hedged (reads). Requires `idempotent`. */
  hedgeable: boolean;
  /**
   * The deadline of the whole call, every attempt included, in ms from now. Defaults to the
   * transport's `deadlineMs`. `Infinity` means none.
   */
  deadlineMs?: number;
  /** Aborting it cancels every attempt; the call rejects with a CancelledError. */
  signal?: AbortSignal;
}

/** Why an attempt was sent. */
export type AttemptKind = 'initial' | 'retry' | 'hedge';

/** What an attempt is told when it is started. */
export interface AttemptContext<E> {
  /** The endpoint picked for it. */
  readonly endpoint: E;
  readonly kind: AttemptKind;
  /** 0 for the call's first attempt, then 1, 2, ... over retries and hedges. */
  readonly index: number;
  /** Time left before the call's deadline, ms (`Infinity` if none): the attempt's deadline. */
  readonly remainingMs: number;
}

/** A started attempt. */
export interface Attempt<T> {
  /** Settles with the answer or the error (any error; it is mapped with toShamelessError). */
  readonly result: Promise<T>;
  /** Cancels the attempt; its result is ignored afterwards. */
  cancel(): void;
}

/** Starts one attempt. */
export type StartAttempt<E, T> = (context: AttemptContext<E>) => Attempt<T>;

/** What a {@link UnaryExecutor} shares across calls. */
export interface UnaryExecutorDeps<E extends { readonly address: string }> {
  endpoints: EndpointPicker<E>;
  clock: Clock;
  budget: TokenBudget;
  /** Null: no retries. */
  retry: RetryPolicy | null;
  /** Null: no hedging. */
  hedge: HedgePolicy | null;
  latency: LatencyTracker;
  counters: TransportCounters;
  /** The deadline of calls that set none, ms. */
  defaultDeadlineMs: number;
}

/** Runs unary calls: deadline, retries, hedging, budget, cancellation. */
export class UnaryExecutor<E extends { readonly address: string }> {
  readonly #deps: UnaryExecutorDeps<E>;

  constructor(deps: UnaryExecutorDeps<E>) {
    this.#deps = deps;
  }

  /**
   * Runs one logical call of `method`, starting attempts with `start`. Resolves with the first
   * successful answer; rejects with a ShamelessError.
   */
  execute<T>(method: string, start: StartAttempt<E, T>, options: UnaryCallOptions): Promise<T> {
    try {
      return new UnaryCall(this.#deps, method, start, options).run();
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

interface InFlight<E> {
  readonly endpoint: E;
  readonly kind: AttemptKind;
  readonly startedAt: number;
  readonly cancel: () => void;
}

class UnaryCall<E extends { readonly address: string }, T> {
  readonly #deps: UnaryExecutorDeps<E>;
  readonly #method: string;
  readonly #start: StartAttempt<E, T>;
  readonly #signal: AbortSignal | undefined;
  readonly #deadlineMs: number;
  readonly #maxRetries: number;
  readonly #hedge: HedgePolicy | null;

  #deadlineAt = Number.POSITIVE_INFINITY;
  readonly #inFlight = new Set<InFlight<E>>();
  readonly #tried = new Set<string>();
  #attempts = 0;
  #retries = 0;
  #hedges = 0;
  #lastError: ShamelessError | undefined;
  #settled = false;
  #hedgeTimer: TimerHandle | undefined;
  #backoffTimer: TimerHandle | undefined;
  #deadlineTimer: TimerHandle | undefined;
  #resolve: (value: T) => void = () => {};
  #reject: (error: ShamelessError) => void = () => {};
  readonly #onAbort = (): void => {
    const reason: unknown = this.#signal?.reason;
    this.#fail(new CancelledError('the call was aborted', { cause: reason }));
  };

  constructor(
    deps: UnaryExecutorDeps<E>,
    method: string,
    start: StartAttempt<E, T>,
    options: UnaryCallOptions,
  ) {
    this.#deps = deps;
    this.#method = method;
    this.#start = start;
    this.#signal = options.signal;
    this.#deadlineMs = options.deadlineMs ?? deps.defaultDeadlineMs;
    if (options.hedgeable && !options.idempotent) {
      throw new TypeError(`${method}: a hedgeable call must also be idempotent`);
    }
    this.#maxRetries = options.idempotent && deps.retry ? deps.retry.maxAttempts - 1 : 0;
    this.#hedge = options.hedgeable ? deps.hedge : null;
  }

  run(): Promise<T> {
    const { clock, counters } = this.#deps;
    counters.calls++;
    return new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      if (!(this.#deadlineMs > 0)) {
        this.#fail(new DeadlineExceededError(`invalid deadline: ${this.#deadlineMs} ms`));
        return;
      }
      if (this.#signal?.aborted) {
        this.#onAbort();
        return;
      }
      this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
      if (Number.isFinite(this.#deadlineMs)) {
        this.#deadlineAt = clock.now() + this.#deadlineMs;
        this.#deadlineTimer = clock.setTimeout(() => {
          this.#deadlineTimer = undefined;
          this.#fail(
            new DeadlineExceededError(
              `${this.#method}: deadline of ${this.#deadlineMs} ms exceeded after ` +
                `${this.#attempts} attempt(s)`,
              { cause: this.#lastError },
            ),
          );
        }, this.#deadlineMs);
      }
      this.#launch('initial');
    });
  }

  #launch(kind: AttemptKind): void {
    const { endpoints, clock, counters } = this.#deps;
    // Prefer an endpoint this call has not used; a hedge at least one it is not waiting on.
    const everyTried = this.#tried.size >= endpoints.addresses.length;
    const endpoint = endpoints.pick(
      kind === 'hedge' && everyTried ? this.#inFlightAddresses() : this.#tried,
    );
    this.#tried.add(endpoint.address);
    const index = this.#attempts++;
    counters.attempts++;
    if (kind === 'retry') counters.retries++;
    if (kind === 'hedge') counters.hedges++;

    let attempt: Attempt<T>;
    try {
      attempt = this.#start({
        endpoint,
        kind,
        index,
        remainingMs: this.#deadlineAt - clock.now(),
      });
    } catch (err) {
      attempt = { result: Promise.reject(err), cancel: () => {} };
    }
    const entry: InFlight<E> = {
      endpoint,
      kind,
      startedAt: clock.now(),
      cancel: () => attempt.cancel(),
    };
    this.#inFlight.add(entry);
    attempt.result.then(
      (value) => this.#onSuccess(entry, value),
      (err: unknown) => this.#onError(entry, err),
    );
    if (kind !== 'hedge') this.#armHedge();
  }

  #onSuccess(entry: InFlight<E>, value: T): void {
    if (!this.#inFlight.delete(entry)) return; // cancelled or the call is over
    const { budget, endpoints, latency, clock, counters } = this.#deps;
    budget.recordSuccess();
    endpoints.markUp(entry.endpoint.address);
    latency.record(this.#method, clock.now() - entry.startedAt);
    if (entry.kind === 'hedge') counters.hedgesWon++;
    this.#finish();
    this.#resolve(value);
  }

  #onError(entry: InFlight<E>, raw: unknown): void {
    if (!this.#inFlight.delete(entry)) return;
    // Cancelled attempts left #inFlight first, so a CANCELLED here came from the server side.
    const error = asConnectionLoss(toShamelessError(raw));
    this.#lastError = error;
    if (!error.retryable) {
      this.#fail(error);
      return;
    }
    this.#deps.budget.recordFailure();
    if (error instanceof UnavailableError) this.#deps.endpoints.markDown(entry.endpoint.address);
    // Another attempt (a hedge, or the attempt a hedge raced) may still answer.
    if (this.#inFlight.size > 0) return;
    this.#clearHedgeTimer();
    this.#scheduleRetry(error);
  }

  #scheduleRetry(error: ShamelessError): void {
    const { budget, clock, counters } = this.#deps;
    const retry = this.#deps.retry;
    if (retry === null || this.#retries >= this.#maxRetries) {
      this.#fail(error);
      return;
    }
    if (!budget.canRetry()) {
      counters.budgetRefusals++;
      this.#fail(error);
      return;
    }
    const delay = retry.backoff.delay(this.#retries);
    if (clock.now() + delay >= this.#deadlineAt) {
      // Waiting would use up the deadline: the transient error is the more useful answer.
      this.#fail(error);
      return;
    }
    this.#retries++;
    this.#backoffTimer = clock.setTimeout(() => {
      this.#backoffTimer = undefined;
      if (!this.#settled) this.#launch('retry');
    }, delay);
  }

  #inFlightAddresses(): Set<string> {
    return new Set([...this.#inFlight].map((entry) => entry.endpoint.address));
  }

  #armHedge(): void {
    const hedge = this.#hedge;
    if (hedge === null || this.#settled || this.#hedgeTimer !== undefined) return;
    if (this.#hedges >= hedge.maxHedges) return;
    const { clock, endpoints } = this.#deps;
    // A hedge races a slow server with another one. Sent to a server this call already waits
    // on, it only doubles that server's work: measured under load, such hedges never won.
    if (this.#inFlightAddresses().size >= endpoints.addresses.length) return;
    const delay = hedge.delayFor(this.#method);
    if (clock.now() + delay >= this.#deadlineAt) return;
    this.#hedgeTimer = clock.setTimeout(() => {
      this.#hedgeTimer = undefined;
      this.#sendHedge();
    }, delay);
  }

  #sendHedge(): void {
    if (this.#settled || this.#inFlight.size === 0) return;
    if (!this.#deps.budget.trySpendHedge()) {
      this.#deps.counters.budgetRefusals++;
      return;
    }
    this.#hedges++;
    this.#launch('hedge');
    this.#armHedge();
  }

  #clearHedgeTimer(): void {
    if (this.#hedgeTimer !== undefined) {
      this.#deps.clock.clearTimeout(this.#hedgeTimer);
      this.#hedgeTimer = undefined;
    }
  }

  #fail(error: ShamelessError): void {
    if (this.#settled) return;
    this.#deps.counters.failures++;
    this.#finish();
    this.#reject(error);
  }

  /** Ends the call: clears timers and cancels every attempt still out. */
  #finish(): void {
    this.#settled = true;
    const { clock } = this.#deps;
    this.#clearHedgeTimer();
    for (const timer of [this.#backoffTimer, this.#deadlineTimer]) {
      if (timer !== undefined) clock.clearTimeout(timer);
    }
    this.#backoffTimer = undefined;
    this.#deadlineTimer = undefined;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    const losers = [...this.#inFlight];
    this.#inFlight.clear();
    for (const loser of losers) loser.cancel();
  }
}
