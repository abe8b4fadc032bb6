// Middleware layers for tests, in both forms of the chain (src/grpc/call/middleware.ts), so that
// a fixture's unary calls run by promises as the server's own layers make them run. A test that
// wants the stream form for every call strips a layer's unary form with `streamOnly`.
import type { CallContext } from '../../src/grpc/call/callContext.js';
import { type ServerMiddleware, middlewareLayer } from '../../src/grpc/call/middleware.js';

export interface CallHooks {
  /** As the call reaches the layer; a throw (or a rejection) refuses it. */
  before?(context: CallContext): void | Promise<void>;
  /** The inner layers are done without an error: told before the layer passes the call out. */
  answered?(context: CallContext): void;
  /** The call is over here, however it ended. */
  ended?(context: CallContext): void;
}

export function hookedLayer(hooks: CallHooks): ServerMiddleware {
  return middlewareLayer(
    async function* (request, context, next) {
      await hooks.before?.(context);
      try {
        yield* next(request, context);
        hooks.answered?.(context);
      } finally {
        hooks.ended?.(context);
      }
    },
    async (request, context, next, deliver) => {
      await hooks.before?.(context);
      try {
        const response = await next(request, context, deliver);
        hooks.answered?.(context);
        return response;
      } finally {
        hooks.ended?.(context);
      }
    },
  );
}

/** The layer without its unary form: a chain holding it runs every call as a stream. */
export function streamOnly(layer: ServerMiddleware): ServerMiddleware {
  return (request, context, next) => layer(request, context, next);
}
