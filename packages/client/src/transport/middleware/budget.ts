// The budget's account of each attempt (gRFC A6 throttling): a success earns `tokenRatio`, a
// transient failure costs a token. The retry and hedge layers ask the same budget before they
// send more. Attempts this client cancelled (a hedge that lost, an abort, the deadline) and
// attempts to a server that is restarting say nothing about a live server's load: they are
// not counted.

import type { TokenBudget } from '../policy/budget.js';
import { toShamelessError } from '../call/errors.js';
import type { ClientMiddleware } from '../call/compose.js';

export function budgetLayer(
  budget: Pick<TokenBudget, 'recordSuccess' | 'recordFailure'>,
): ClientMiddleware {
  return async function* accountAttempt(call, options, next) {
    let answered = false;
    try {
      for await (const message of next(call, options)) {
        if (!answered) {
          answered = true;
          budget.recordSuccess();
        }
        yield message;
      }
      if (!answered) budget.recordSuccess();
    } catch (raw) {
      if (!options.cancellation?.aborted && !options.attempt?.unreachable) {
        if (toShamelessError(raw).retryable) budget.recordFailure();
      }
      throw raw;
    }
  };
}
