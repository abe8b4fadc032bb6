// Cross-cutting concerns (authentication, access log, metrics, admission) wrap every Store handler
// as layers of one chain, in the manner of nice-grpc's server middleware: a layer sees the request
// and the call's context, may refuse the call by throwing, and otherwise passes the call on with
// `next`, whose messages it re-yields. A unary call is a stream of exactly one message, so one
// layer serves both kinds of call.
import type { CallContext } from './callContext.js';

export type NextHandler<Req, Res> = (request: Req, context: CallContext) => AsyncIterable<Res>;

export type ServerMiddleware = <Req, Res>(
  request: Req,
  context: CallContext,
  next: NextHandler<Req, Res>,
) => AsyncIterable<Res>;

/** The chain of layers, outermost first; an empty chain calls the handler directly. */
export function composeMiddleware(layers: readonly ServerMiddleware[]): ServerMiddleware {
  return <Req, Res>(request: Req, context: CallContext, handler: NextHandler<Req, Res>) => {
    const run = (index: number): NextHandler<Req, Res> => {
      const layer = layers[index];
      if (!layer) return handler;
      const next = run(index + 1);
      return (innerRequest, innerContext) => layer(innerRequest, innerContext, next);
    };
    return run(0)(request, context);
  };
}
