// Counts logical calls and those that failed (after every retry). A batch the coalescing layer
// sends is one call. A call that is cancelled (the caller's abort, the deadline) counts as
// failed at that moment: from then on nothing can answer it. Calls the deadline layer refuses
// before they start (an aborted signal, a deadline that is no deadline) are not counted.

import type { TransportCounters } from '../call/stats.js';
import { watchAbort } from '../call/cancellation.js';
import type { ClientMiddleware } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

export function countingLayer(counters: TransportCounters): ClientMiddleware {
  return hookedLayer((_call, options) => {
    counters.calls++;
    let failed = false;
    const fail = (): void => {
      if (!failed) counters.failures++;
      failed = true;
    };
    const stopWatching = watchAbort(options.cancellation, fail);
    return {
      options,
      failed: (error) => {
        fail();
        return error;
      },
      ended: stopWatching,
    };
  });
}
