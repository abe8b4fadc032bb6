// The outermost layer of a call: counts logical calls and those that failed (after every
// retry). A batch the coalescing layer sends is one call. An aborted call counts as failed the
// moment its signal aborts: from then on nothing can answer it.

import type { TransportCounters } from '../stats.js';
import type { ClientMiddleware } from './compose.js';

export function countingLayer(counters: TransportCounters): ClientMiddleware {
  return async function* countCall(call, options, next) {
    counters.calls++;
    let failed = false;
    const fail = (): void => {
      if (!failed) counters.failures++;
      failed = true;
    };
    const signal = options.signal;
    signal?.addEventListener('abort', fail, { once: true });
    try {
      yield* next(call, options);
    } catch (error) {
      fail();
      throw error;
    } finally {
      signal?.removeEventListener('abort', fail);
    }
  };
}
