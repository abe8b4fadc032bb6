// The bearer token: every attempt (retries and hedges included) carries
// `authorization: Bearer <token>`. A function is asked on every attempt, so a rotated token is
// picked up by the next attempt. The token never appears in an error message.

import { UnauthenticatedError } from '../call/errors.js';
import {
  type ClientCall,
  type ClientCallOptions,
  type ClientMiddleware,
  withOptions,
} from '../call/compose.js';
import { type LayerCall, hookedLayer } from '../call/hookedLayer.js';
import { untilAborted } from '../call/signals.js';

/** A bearer token, or a function that returns the current one (for rotation). */
export type TokenSource = string | (() => string | Promise<string>);

const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

export function tokenLayer(token: TokenSource): ClientMiddleware {
  if (typeof token === 'string' && !TOKEN_PATTERN.test(token)) {
    throw new TypeError('token must be a non-empty string of printable ASCII without spaces');
  }
  const sending = (options: ClientCallOptions, value: string): LayerCall => ({
    options: withOptions(options, {
      metadata: { ...options.metadata, authorization: `Bearer ${value}` },
    }),
  });
  return hookedLayer((call, options) =>
    typeof token === 'string'
      ? sending(options, token)
      : tokenFrom(token, call, options).then((value) => sending(options, value)),
  );
}

/** What the token function gives now, checked. */
async function tokenFrom(
  token: () => string | Promise<string>,
  call: ClientCall,
  options: ClientCallOptions,
): Promise<string> {
  let value: string;
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
  return value;
}
