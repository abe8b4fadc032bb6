// The user's interceptors see each attempt's AbortSignal as `options.signal`, as middleware of
// this shape does elsewhere (nice-grpc); the layers themselves watch the attempt's
// `cancellation`, which makes an AbortSignal only when one is asked for (cancellation.ts). So the
// interceptors, where there are any, sit between these two: the first hands them the attempt's
// signal, the second makes a signal of an interceptor's own, passed on in its place, cancel the
// attempt too.

import { linkedCancellation } from '../call/cancellation.js';
import { type ClientMiddleware, passingLayer, withOptions } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

/** Above the interceptors: `signal` is the attempt's (its cancellation's). */
export const attemptSignalLayer: ClientMiddleware = passingLayer((call, options, next) =>
  next(call, withOptions(options, { signal: options.cancellation?.signal })),
);

/** Below the interceptors: a signal they put in the attempt's place cancels it as well. */
export const interceptorSignalLayer: ClientMiddleware = hookedLayer((_call, options) => {
  const { signal, cancellation } = options;
  if (signal === undefined || signal === cancellation?.signal) return { options };
  const link = linkedCancellation(cancellation, signal);
  return { options: withOptions(options, { cancellation: link.cancellation }), ended: link.unlink };
});
