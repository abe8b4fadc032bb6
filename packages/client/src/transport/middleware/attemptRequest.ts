// The request each attempt sends. A call sends the same request on every attempt, except one
// that carries the requests of several callers (a batch call of the coalescing layer): a caller
// may be answered while the call goes on (its own deadline passed, its signal aborted), and a
// retry or hedge sent after that must not carry its request, least of all its write, which
// could then land after a later write the caller made once told that this one failed. Such a
// call builds the request of each later attempt when that attempt starts. This layer sits as
// low as it can (under the endpoint and token layers, which may wait) while the user's
// interceptors still see what is sent.

import { CancelledError } from '../call/errors.js';
import {
  type ClientCall,
  type ClientCallOptions,
  type ClientMiddleware,
  clientLayer,
} from '../call/compose.js';

export const attemptRequestLayer: ClientMiddleware = clientLayer(
  (call, options, next) => {
    const request = attemptRequest(call, options);
    return request === NOBODY_WAITS ? nobodyWaits(call.method) : next(request, options);
  },
  (call, options, next) => {
    const request = attemptRequest(call, options);
    return request === NOBODY_WAITS
      ? Promise.reject(nobodyWaitsError(call.method))
      : next(request, options);
  },
);

const NOBODY_WAITS = Symbol('nobody waits');

/** The call this attempt sends, or NOBODY_WAITS when every caller of it has been answered. */
function attemptRequest(
  call: ClientCall,
  options: ClientCallOptions,
): ClientCall | typeof NOBODY_WAITS {
  const build = options.requestForAttempt;
  if (build === undefined || options.attempt === undefined || options.attempt.kind === 'initial') {
    return call;
  }
  const request = build();
  return request === undefined ? NOBODY_WAITS : { ...call, request };
}

/** The attempt of a call whose callers have all been answered: it is cancelled, unsent. */
// eslint-disable-next-line require-yield -- it only fails, as an attempt that is never sent
async function* nobodyWaits(method: string): AsyncGenerator<never> {
  throw nobodyWaitsError(method);
}

function nobodyWaitsError(method: string): CancelledError {
  return new CancelledError(`${method}: every caller of the call was answered before this attempt`);
}
