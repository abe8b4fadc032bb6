// How a call through the chain ended, for the layers that count or log calls: its status code
// (as the client sees it) and how long it took.
import { status } from '@grpc/grpc-js';
import type { CallContext } from './callContext.js';
import type { NextHandler } from './middleware.js';
import { statusOfError } from './statusMapping.js';

/**
 * Passes the call on and re-yields its messages; when it ends calls `ended` with its code and
 * duration. A stream the consumer stops reading early (the caller cancelled) ends CANCELLED.
 */
export async function* withOutcome<Req, Res>(
  request: Req,
  context: CallContext,
  next: NextHandler<Req, Res>,
  ended: (code: status, milliseconds: number) => void,
): AsyncIterable<Res> {
  const started = performance.now();
  let code: status = status.CANCELLED;
  try {
    yield* next(request, context);
    code = status.OK;
  } catch (error) {
    code = statusOfError(error);
    throw error;
  } finally {
    ended(code, performance.now() - started);
  }
}
