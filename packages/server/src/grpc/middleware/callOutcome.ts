// How a call through the chain ended, for the layers that count or log calls: its status code
// (as the client sees it) and how long it took.
import { status } from '@grpc/grpc-js';
import type { CallContext } from '../call/callContext.js';
import type { NextHandler } from '../call/middleware.js';
import { abortedByShutdown } from '../call/serverShutdown.js';
import { statusOfError } from '../call/statusMapping.js';

/**
 * Passes the call on and re-yields its messages; when it ends calls `ended` with its code and
 * duration. A call whose signal fired ends CANCELLED (DEADLINE_EXCEEDED past its deadline),
 * even when the handler then returned quietly, as a follow stream does; a stream that a server
 * shutdown ends, UNAVAILABLE, as its client sees it (serverShutdown.ts).
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
    if (code === status.OK && context.cancellation.aborted) {
      code = abortedByShutdown(context.cancellation)
        ? status.UNAVAILABLE
        : Date.now() >= context.deadline
          ? status.DEADLINE_EXCEEDED
          : status.CANCELLED;
    }
    ended(code, performance.now() - started);
  }
}
