// Retries: a call safe to repeat (`idempotent`) whose attempt failed with a transient status
// before the caller saw any of its messages is sent again, after a full-jitter backoff, up to
// `maxAttempts` attempts, while the token budget allows, and never past the deadline. A stream
// that already handed out messages is not retried: its caller resumes from its own cursor.

import type { TokenBudget } from '../policy/budget.js';
import { sleep, type Clock } from '../call/clock.js';
import { toShamelessError, type ShamelessError } from '../call/errors.js';
import type { RetryPolicy } from '../policy/policy.js';
import type { TransportCounters } from '../call/stats.js';
import { AttemptLog, type AttemptInfo, type AttemptKind } from '../call/attempts.js';
import {
  type ClientCall,
  type ClientCallOptions,
  type ClientMiddleware,
  clientLayer,
  withOptions,
} from '../call/compose.js';

/** What the retry layer needs. */
export interface RetrySettings {
  /** Null: no retries. */
  readonly retry: RetryPolicy | null;
  /** Asked before each retry (`canRetry`); the budget layer below keeps its account. */
  readonly budget: Pick<TokenBudget, 'canRetry'>;
  readonly clock: Clock;
  readonly counters: Pick<TransportCounters, 'retries' | 'budgetRefusals'>;
}

export function retryLayer(settings: RetrySettings): ClientMiddleware {
  return clientLayer(
    async function* retryTransient(call, options, next) {
      const retrying = new Retrying(settings, call, options);
      for (;;) {
        const attemptOptions = retrying.attemptOptions();
        let received = false;
        try {
          for await (const message of next(call, attemptOptions)) {
            received = true;
            yield message;
          }
          return;
        } catch (raw) {
          await retrying.afterFailure(raw, received);
        }
      }
    },
    async (call, options, next) => {
      const retrying = new Retrying(settings, call, options);
      for (;;) {
        try {
          return await next(call, retrying.attemptOptions());
        } catch (raw) {
          await retrying.afterFailure(raw, false);
        }
      }
    },
  );
}

/** One call's attempts: the options of each, and whether (and when) to send another. */
class Retrying {
  private readonly attempts: AttemptLog;
  private readonly maxRetries: number;
  private retries = 0;
  private kind: AttemptKind = 'initial';
  private attempt: AttemptInfo | undefined;

  constructor(
    private readonly settings: RetrySettings,
    call: ClientCall,
    private readonly options: ClientCallOptions,
  ) {
    if (options.hedgeable && !options.idempotent) {
      throw new TypeError(`${call.method}: a hedgeable call must also be idempotent`);
    }
    this.attempts = options.attempts ?? new AttemptLog();
    const { retry } = settings;
    this.maxRetries = options.idempotent && retry !== null ? retry.maxAttempts - 1 : 0;
  }

  /** The next attempt's options (the attempt started). */
  attemptOptions(): ClientCallOptions {
    this.attempt = this.attempts.start(this.kind);
    return withOptions(this.options, { attempts: this.attempts, attempt: this.attempt });
  }

  /**
   * After the attempt failed with `raw` (`received`: after handing out messages): resolves
   * once the next attempt may go, or throws what the caller gets.
   */
  async afterFailure(raw: unknown, received: boolean): Promise<void> {
    const { retry, budget, clock, counters } = this.settings;
    const { cancellation } = this.options;
    if (cancellation?.aborted) throw cancellation.reason as Error;
    const error = toShamelessError(raw);
    this.attempts.lastError = error;
    if (!error.retryable || received || retry === null || this.retries >= this.maxRetries) {
      throw error;
    }
    const pushback = retryPushbackMs(error);
    if (pushback === 'no retry') throw error;
    // A server that had answered before and has no connection now is restarting: waiting
    // for it costs no server anything, so it needs no budget.
    if (!this.attempt?.unreachable && !budget.canRetry()) {
      counters.budgetRefusals++;
      throw error;
    }
    const delay = pushback ?? retry.backoff.delay(this.retries);
    // Waiting would use up the deadline: the transient error is the more useful answer.
    if (clock.now() + delay >= (this.options.deadlineAt ?? Number.POSITIVE_INFINITY)) throw error;
    try {
      await sleep(clock, delay, cancellation);
    } catch {
      throw cancellation?.reason as Error;
    }
    counters.retries++;
    this.retries++;
    this.kind = 'retry';
  }
}

/**
 * The server's retry hint (gRFC A6): the trailer `grpc-retry-pushback-ms`, sent with
 * RESOURCE_EXHAUSTED by an overloaded server. Decimal milliseconds replace the backoff of
 * that retry; a negative or malformed value is the server asking for no retry at all (gRFC
 * A6 gives it that meaning, so a server can shed load for good). Undefined without a hint.
 */
export function retryPushbackMs(error: ShamelessError): number | 'no retry' | undefined {
  const value = error.metadata?.get('grpc-retry-pushback-ms')[0];
  if (value === undefined) return undefined;
  const text = value.toString().trim();
  return /^\d+$/.test(text) ? Number(text) : 'no retry';
}
