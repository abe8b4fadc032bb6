// Server-streaming calls as async iterators. Backpressure comes from the attempt's own async
// iteration (a grpc-js ClientReadableStream is an object-mode Readable: it stops asking the
// server for messages while its buffer is full). A stream is retried only when it failed with
// a transient status before its first message; after that the caller resumes from its own
// cursor or page token, so the error is surfaced.

import type { TokenBudget } from './budget.js';
import { sleep, type Clock } from './clock.js';
import type { EndpointPicker } from './endpoints.js';
import {
  CancelledError,
  DeadlineExceededError,
  UnavailableError,
  toShamelessError,
  type ShamelessError,
} from './errors.js';
import type { RetryPolicy } from './policy.js';
import type { TransportCounters } from './stats.js';
import type { AttemptContext } from './unary.js';

/** Per-call options of a server-streaming call. */
export interface StreamCallOptions {
  /**
   * The deadline of the whole stream (every attempt, and the time the consumer spends between
   * messages), in ms from the start of iteration. Defaults to the transport's `deadlineMs`;
   * pass `Infinity` for streams that run until cancelled (`Each` with `follow`).
   */
  deadlineMs?: number;
  /** Aborting it cancels the stream; iteration then throws a CancelledError. */
  signal?: AbortSignal;
}

/** A started streaming attempt. */
export interface StreamAttempt<T> {
  /** The messages; iteration throws the attempt's error (any error; it is mapped). */
  readonly messages: AsyncIterable<T>;
  /** Cancels the attempt (no-op once it has ended). */
  cancel(): void;
}

/** Starts one streaming attempt. */
export type StartStream<E, T> = (context: AttemptContext<E>) => StreamAttempt<T>;

/** What a {@link StreamExecutor} shares across calls. */
export interface StreamExecutorDeps<E extends { readonly address: string }> {
  endpoints: EndpointPicker<E>;
  clock: Clock;
  budget: TokenBudget;
  /** Null: no retries. */
  retry: RetryPolicy | null;
  counters: TransportCounters;
  defaultDeadlineMs: number;
}

/** Runs server-streaming calls. */
export class StreamExecutor<E extends { readonly address: string }> {
  readonly #deps: StreamExecutorDeps<E>;

  constructor(deps: StreamExecutorDeps<E>) {
    this.#deps = deps;
  }

  /**
   * A single-use async iterator over the messages of one logical call of `method`. Nothing is
   * sent until the first `next()`. Leaving a `for await` loop early (break, return, throw)
   * cancels the call on the server.
   */
  open<T>(
    method: string,
    start: StartStream<E, T>,
    options: StreamCallOptions = {},
  ): AsyncIterableIterator<T> {
    return runStream(this.#deps, method, start, options);
  }
}

async function* runStream<E extends { readonly address: string }, T>(
  deps: StreamExecutorDeps<E>,
  method: string,
  start: StartStream<E, T>,
  options: StreamCallOptions,
): AsyncGenerator<T, void, undefined> {
  const { clock, budget, endpoints, counters } = deps;
  const { signal } = options;
  const deadlineMs = options.deadlineMs ?? deps.defaultDeadlineMs;
  counters.calls++;
  const fail = (error: ShamelessError): ShamelessError => {
    counters.failures++;
    return error;
  };
  const aborted = (): ShamelessError =>
    new CancelledError(`${method}: the stream was aborted`, { cause: signal?.reason });

  if (!(deadlineMs > 0)) throw fail(new DeadlineExceededError(`invalid deadline: ${deadlineMs}`));
  const deadlineAt = Number.isFinite(deadlineMs)
    ? clock.now() + deadlineMs
    : Number.POSITIVE_INFINITY;
  const maxRetries = deps.retry === null ? 0 : deps.retry.maxAttempts - 1;
  const tried = new Set<string>();

  for (let index = 0; ; index++) {
    if (signal?.aborted) throw fail(aborted());
    const endpoint = endpoints.pick(tried);
    tried.add(endpoint.address);
    counters.attempts++;
    if (index > 0) counters.retries++;
    let attempt: StreamAttempt<T>;
    try {
      attempt = start({
        endpoint,
        kind: index === 0 ? 'initial' : 'retry',
        index,
        remainingMs: deadlineAt - clock.now(),
      });
    } catch (err) {
      throw fail(toShamelessError(err));
    }
    const onAbort = (): void => attempt.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });

    let received = false;
    let error: ShamelessError;
    try {
      for await (const message of attempt.messages) {
        if (!received) {
          received = true;
          budget.recordSuccess();
          endpoints.markUp(endpoint.address);
        }
        yield message;
      }
      if (!received) {
        budget.recordSuccess();
        endpoints.markUp(endpoint.address);
      }
      return;
    } catch (err) {
      error = signal?.aborted ? aborted() : toShamelessError(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Ends the server side when the consumer left early; a no-op after the call ended.
      attempt.cancel();
    }

    if (!error.retryable) throw fail(error);
    budget.recordFailure();
    if (error instanceof UnavailableError) endpoints.markDown(endpoint.address);
    if (received || deps.retry === null || index >= maxRetries) throw fail(error);
    if (!budget.canRetry()) {
      counters.budgetRefusals++;
      throw fail(error);
    }
    const delay = deps.retry.backoff.delay(index);
    if (clock.now() + delay >= deadlineAt) throw fail(error);
    try {
      await sleep(clock, delay, signal);
    } catch {
      throw fail(aborted());
    }
  }
}
