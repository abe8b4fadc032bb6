// Endpoint choice: each attempt goes to an endpoint picked round robin, preferring one the call
// has not used (for a hedge, at least one it is not waiting on) and one that has not just
// answered UNAVAILABLE. An endpoint that answers is marked up, one that answers UNAVAILABLE
// down for a while. When every endpoint is down and the picked one had answered before (a
// server restarting), the attempt waits for a connection within its deadline instead of
// failing at once, and a failure to reach it spends no retry budget.

import { UnavailableError, toShamelessError } from '../call/errors.js';
import type { EndpointPicker } from '../policy/endpoints.js';
import type { TransportCounters } from '../call/stats.js';
import { AttemptLog } from '../call/attempts.js';
import { type ClientMiddleware, withOptions } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

/** What the endpoint layer asks of the endpoint set, besides picking. */
export interface ConnectionWatch {
  /** True while every endpoint is marked down. */
  allDown(): boolean;
  /** True when `address` has answered before and has no connection now. */
  reconnecting(address: string): boolean;
}

/** What the endpoint layer needs. */
export interface EndpointSettings {
  readonly endpoints: EndpointPicker<{ readonly address: string }> & Partial<ConnectionWatch>;
  readonly counters: Pick<TransportCounters, 'attempts'>;
  /** Whether attempts wait for a restarting server (see the file comment). Default true. */
  readonly waitForConnection?: boolean;
}

export function endpointLayer(settings: EndpointSettings): ClientMiddleware {
  const { endpoints, counters } = settings;
  const watchConnections = settings.waitForConnection !== false;
  return hookedLayer((_call, options) => {
    const attempts = options.attempts ?? new AttemptLog();
    const attempt = options.attempt ?? attempts.start('initial');
    const everyTried = attempts.tried.size >= endpoints.addresses.length;
    const endpoint = endpoints.pick(
      attempt.kind === 'hedge' && everyTried ? attempts.waitingOn() : attempts.tried,
    );
    const { address } = endpoint;
    attempt.address = address;
    counters.attempts++;
    const waitForReady =
      watchConnections &&
      endpoints.allDown?.() === true &&
      endpoints.reconnecting?.(address) === true;
    attempts.enter(address);
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      endpoints.markUp(address);
    };
    return {
      options: withOptions(options, { endpoint, waitForReady }),
      message: answer,
      completed: answer,
      failed: (raw) => {
        if (!options.cancellation?.aborted && toShamelessError(raw) instanceof UnavailableError) {
          endpoints.markDown(address);
          attempt.unreachable = watchConnections && endpoints.reconnecting?.(address) === true;
        }
        return raw;
      },
      ended: () => attempts.leave(address),
    };
  });
}
