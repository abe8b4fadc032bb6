// The user's interceptors see each attempt's AbortSignal as `options.signal`, as middleware of
// this shape does elsewhere (nice-grpc); the layers themselves watch the attempt's
// `cancellation`, which makes an AbortSignal only when one is asked for (cancellation.ts). So the
// interceptors, where there are any, sit between these two: the first hands them the attempt's
// signal, the second makes a signal of an interceptor's own, passed on in its place, cancel the
// attempt too.

import { linkedCancellation } from '../call/cancellation.js';
import type { ClientMiddleware } from '../call/compose.js';

/** Above the interceptors: `signal` is the attempt's (its cancellation's). */
export const attemptSignalLayer: ClientMiddleware = (call, options, next) =>
  next(call, { ...options, signal: options.cancellation?.signal });

/** Below the interceptors: a signal they put in the attempt's place cancels it as well. */
export const interceptorSignalLayer: ClientMiddleware = async function* followInterceptorSignal(
  call,
  options,
  next,
) {
  const { signal, cancellation } = options;
  if (signal === undefined || signal === cancellation?.signal) {
    yield* next(call, options);
    return;
  }
  const link = linkedCancellation(cancellation, signal);
  try {
    yield* next(call, { ...options, cancellation: link.cancellation });
  } finally {
    link.unlink();
  }
};
