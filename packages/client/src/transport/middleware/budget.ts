// The budget's account of each attempt (gRFC A6 throttling): a success earns `tokenRatio`, a
// transient failure costs a token. The retry and hedge layers ask the same budget before they
// send more. Attempts this client cancelled (a hedge that lost, an abort, the deadline) and
// attempts to a server that is restarting say nothing about a live server's load: they are
// not counted.

import type { TokenBudget } from '../policy/budget.js';
import { toShamelessError } from '../call/errors.js';
import type { ClientMiddleware } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

export function budgetLayer(
  budget: Pick<TokenBudget, 'recordSuccess' | 'recordFailure'>,
): ClientMiddleware {
  return hookedLayer((_call, options) => {
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      budget.recordSuccess();
    };
    return {
      options,
      message: answer,
      completed: answer,
      failed: (raw) => {
        if (!options.cancellation?.aborted && !options.attempt?.unreachable) {
          if (toShamelessError(raw).retryable) budget.recordFailure();
        }
        return raw;
      },
    };
  });
}
