// Retries: a call safe to repeat (`idempotent`) whose attempt failed with a transient status
// before the caller saw any of its messages is sent again, after a full-jitter backoff, up to
// `maxAttempts` attempts, while the token budget allows, and never past the deadline. A stream
// that already handed out messages is not retried: its caller resumes from its own cursor.

import type { TokenBudget } from '../policy/budget.js';
import { sleep, type Clock } from '../call/clock.js';
import { toShamelessError, type ShamelessError } from '../call/errors.js';
import type { RetryPolicy } from '../policy/policy.js';
import type { TransportCounters } from '../call/stats.js';
import { AttemptLog, type AttemptKind } from '../call/attempts.js';
import type { ClientMiddleware } from '../call/compose.js';

/** What the retry layer needs. */
export interface RetrySettings {
  /** Null: no retries. */
  readonly retry: RetryPolicy | null;
  /** Asked before each retry (`canRetry`); the budget layer below keeps its account. */
  readonly budget: Pick<TokenBudget, 'canRetry'>;
  readonly clock: Clock;
  readonly counters: Pick<TransportCounters, 'retries' | 'budgetRefusals'>;
}

export function retryLayer({ retry, budget, clock, counters }: RetrySettings): ClientMiddleware {
  return async function* retryTransient(call, options, next) {
    if (options.hedgeable && !options.idempotent) {
      throw new TypeError(`${call.method}: a hedgeable call must also be idempotent`);
    }
    const attempts = options.attempts ?? new AttemptLog();
    const maxRetries = options.idempotent && retry !== null ? retry.maxAttempts - 1 : 0;
    const deadlineAt = options.deadlineAt ?? Number.POSITIVE_INFINITY;
    let kind: AttemptKind = 'initial';
    for (let retries = 0; ; retries++) {
      const attempt = attempts.start(kind);
      let received = false;
      try {
        for await (const message of next(call, { ...options, attempts, attempt })) {
          received = true;
          yield message;
        }
        return;
      } catch (raw) {
        if (options.cancellation?.aborted) throw options.cancellation.reason as Error;
        const error = toShamelessError(raw);
        attempts.lastError = error;
        if (!error.retryable || received || retry === null || retries >= maxRetries) throw error;
        const pushback = retryPushbackMs(error);
        if (pushback === 'no retry') throw error;
        // A server that had answered before and has no connection now is restarting: waiting
        // for it costs no server anything, so it needs no budget.
        if (!attempt.unreachable && !budget.canRetry()) {
          counters.budgetRefusals++;
          throw error;
        }
        const delay = pushback ?? retry.backoff.delay(retries);
        // Waiting would use up the deadline: the transient error is the more useful answer.
        if (clock.now() + delay >= deadlineAt) throw error;
        try {
          await sleep(clock, delay, options.cancellation);
        } catch {
          throw options.cancellation?.reason as Error;
        }
        counters.retries++;
        kind = 'retry';
      }
    }
  };
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
