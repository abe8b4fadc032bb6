// The request each attempt sends. A call sends the same request on every attempt, except one
// that carries the requests of several callers (a batch call of the coalescing layer): a caller
// may be answered while the call goes on (its own deadline passed, its signal aborted), and a
// retry or hedge sent after that must not carry its request, least of all its write, which
// could then land after a later write the caller made once told that this one failed. Such a
// call builds the request of each later attempt when that attempt starts. This layer sits as
// low as it can (under the endpoint and token layers, which may wait) while the user's
// interceptors still see what is sent.

import { CancelledError } from '../call/errors.js';
import type { ClientMiddleware } from '../call/compose.js';

export const attemptRequestLayer: ClientMiddleware = (call, options, next) => {
  const build = options.requestForAttempt;
  if (build === undefined || options.attempt === undefined || options.attempt.kind === 'initial') {
    return next(call, options);
  }
  const request = build();
  if (request === undefined) return nobodyWaits(call.method);
  return next({ ...call, request }, options);
};

/** The attempt of a call whose callers have all been answered: it is cancelled, unsent. */
// eslint-disable-next-line require-yield -- it only fails, as an attempt that is never sent
async function* nobodyWaits(method: string): AsyncGenerator<never> {
  throw new CancelledError(`${method}: every caller of the call was answered before this attempt`);
}
