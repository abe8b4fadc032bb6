// How a call through the chain ended, for the layers that count or log calls: its status code
// (as the client sees it) and how long it took.
import { status } from '@grpc/grpc-js';
import type { CallContext } from '../call/callContext.js';
import { type ServerMiddleware, middlewareLayer } from '../call/middleware.js';
import { abortedByShutdown } from '../call/serverShutdown.js';
import { statusOfError } from '../call/statusMapping.js';

/** Told once per call, when it ends. */
export type OutcomeListener = (code: status, milliseconds: number, context: CallContext) => void;

/**
 * A layer that passes every call on and, when it ends, tells `ended` its code and duration
 * (`started`, when given, is told as it starts). A call whose signal fired ends CANCELLED
 * (DEADLINE_EXCEEDED past its deadline), even when the handler then returned quietly, as a
 * follow stream does; a stream that a server shutdown ends, UNAVAILABLE, as its client sees it
 * (serverShutdown.ts).
 */
export function outcomeLayer(
  ended: OutcomeListener,
  started: (context: CallContext) => void = () => undefined,
): ServerMiddleware {
  return middlewareLayer(
    async function* (request, context, next) {
      started(context);
      const start = performance.now();
      let code: status = status.CANCELLED;
      try {
        yield* next(request, context);
        code = status.OK;
      } catch (error) {
        code = statusOfError(error);
        throw error;
      } finally {
        ended(seenByClient(code, context), performance.now() - start, context);
      }
    },
    async (request, context, next, deliver) => {
      started(context);
      const start = performance.now();
      let code: status = status.CANCELLED;
      try {
        const response = await next(request, context, deliver);
        code = status.OK;
        return response;
      } catch (error) {
        code = statusOfError(error);
        throw error;
      } finally {
        ended(seenByClient(code, context), performance.now() - start, context);
      }
    },
  );
}

function seenByClient(code: status, context: CallContext): status {
  if (code !== status.OK || !context.cancellation.aborted) return code;
  return abortedByShutdown(context.cancellation)
    ? status.UNAVAILABLE
    : Date.now() >= context.deadline
      ? status.DEADLINE_EXCEEDED
      : status.CANCELLED;
}
