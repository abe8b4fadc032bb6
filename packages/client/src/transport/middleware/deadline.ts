// The call's deadline and cancellation: one overall deadline (the caller's `deadlineMs`, or the
// transport's default) covering every attempt, and one cancellation for the call, cancelled when
// the caller's signal aborts or the deadline passes. Layers below see `deadlineAt` (to give each
// attempt the time left) and the call's `cancellation` (to stop waiting; an AbortSignal only for
// whoever asks, cancellation.ts); the reason is the typed error the caller gets, also when
// grpc-js's timer of the same deadline fires first.

import type { Clock } from '../call/clock.js';
import { CancelledError, DeadlineExceededError } from '../call/errors.js';
import { AttemptLog } from '../call/attempts.js';
import { type Cancellation, CallCancellation, watchAbort } from '../call/cancellation.js';
import { type ClientMiddleware, withOptions } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

/** What the deadline layer needs. */
export interface DeadlineSettings {
  readonly clock: Clock;
  /** The deadline of calls that set none, ms. */
  readonly defaultDeadlineMs: number;
}

export function deadlineLayer({ clock, defaultDeadlineMs }: DeadlineSettings): ClientMiddleware {
  return hookedLayer((call, options) => {
    const deadlineMs = options.deadlineMs ?? defaultDeadlineMs;
    if (!(deadlineMs > 0)) {
      throw new DeadlineExceededError(`${call.method}: invalid deadline: ${deadlineMs} ms`);
    }
    const callerSignal = options.signal;
    if (callerSignal?.aborted) {
      throw new CancelledError(`${call.method}: the call was aborted`, {
        cause: callerSignal.reason,
      });
    }
    const cancellation = new CallCancellation();
    const stopFollowing = watchAbort(callerSignal, () =>
      cancellation.abort(
        new CancelledError(`${call.method}: the call was aborted`, { cause: callerSignal?.reason }),
      ),
    );
    const deadlineAt = Number.isFinite(deadlineMs)
      ? clock.now() + deadlineMs
      : Number.POSITIVE_INFINITY;
    const attempts = options.attempts ?? new AttemptLog();
    const expire = (): void =>
      cancellation.abort(
        new DeadlineExceededError(
          `${call.method}: deadline of ${deadlineMs} ms exceeded after ` +
            `${attempts.started} attempt(s)`,
          attempts.lastError === undefined ? undefined : { cause: attempts.lastError },
        ),
      );
    const timer = Number.isFinite(deadlineMs) ? clock.setTimeout(expire, deadlineMs) : undefined;
    return {
      options: withOptions(options, { signal: undefined, cancellation, deadlineAt, attempts }),
      failed: async (error) => {
        if (
          !cancellation.aborted &&
          error instanceof DeadlineExceededError &&
          timer !== undefined
        ) {
          // Each attempt is sent with this deadline, and grpc-js (or the server) times it too,
          // by its own clock: whichever timer fires first, the caller gets this layer's answer,
          // which says how many attempts the deadline covered.
          if (clock.now() >= deadlineAt) expire();
          else await aborted(cancellation);
        }
        return cancellation.aborted ? (cancellation.reason as Error) : error;
      },
      ended: () => {
        if (timer !== undefined) clock.clearTimeout(timer);
        stopFollowing();
      },
    };
  });
}

/** Resolves when `cancellation` is cancelled. */
function aborted(cancellation: Cancellation): Promise<void> {
  return new Promise((resolve) => cancellation.onAbort(resolve));
}
