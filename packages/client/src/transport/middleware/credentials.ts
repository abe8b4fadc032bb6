// The bearer token: every attempt (retries and hedges included) carries
// `authorization: Bearer <token>`. A function is asked on every attempt, so a rotated token is
// picked up by the next attempt. The token never appears in an error message.

import { UnauthenticatedError } from '../call/errors.js';
import type { ClientMiddleware } from '../call/compose.js';
import { untilAborted } from '../call/signals.js';

/** A bearer token, or a function that returns the current one (for rotation). */
export type TokenSource = string | (() => string | Promise<string>);

const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

export function tokenLayer(token: TokenSource): ClientMiddleware {
  if (typeof token === 'string' && !TOKEN_PATTERN.test(token)) {
    throw new TypeError('token must be a non-empty string of printable ASCII without spaces');
  }
  return async function* sendToken(call, options, next) {
    let value: string;
    if (typeof token === 'string') {
      value = token;
    } else {
      try {
        // A token function that hangs must not hold the call past its deadline or an abort.
        value = await untilAborted(Promise.resolve().then(token), options.cancellation);
      } catch (error) {
        if (options.cancellation?.aborted) throw options.cancellation.reason as Error;
        throw new UnauthenticatedError(`${call.method}: the token function failed`, {
          cause: error,
          retryable: false,
        });
      }
      if (typeof value !== 'string' || !TOKEN_PATTERN.test(value)) {
        throw new UnauthenticatedError(
          `${call.method}: the token function gave no token (a non-empty string of printable ` +
            'ASCII without spaces)',
          { retryable: false },
        );
      }
    }
    const metadata = { ...options.metadata, authorization: `Bearer ${value}` };
    yield* next(call, { ...options, metadata });
  };
}
