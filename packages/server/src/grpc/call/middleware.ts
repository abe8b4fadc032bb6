// Cross-cutting concerns (authentication, access log, metrics, admission) wrap every Store handler
// as layers of one chain, in the manner of nice-grpc's server middleware: a layer sees the request
// and the call's context, may refuse the call by throwing, and otherwise passes the call on with
// `next`, whose messages it re-yields. A unary call is a stream of exactly one message, so one
// layer serves both kinds of call.
//
// A layer may also say what it does to a unary call by promises (`unary`): the same work, without
// the async generators a stream of one costs every call (each layer's, the handler's and the
// loop that takes the one message). A chain whose every layer has that form runs unary calls,
// a Pipeline's among them, by it: a lone GetCell's server CPU was 12–18% lower with no chain at
// all, paired rounds (docs/performance.md).
import type { CallContext } from './callContext.js';

export type NextHandler<Req, Res> = (request: Req, context: CallContext) => AsyncIterable<Res>;

/** Sends a unary call's response; resolves once it is gone (or will not be). */
export type Deliver<Res> = (response: Res) => Promise<void>;

/**
 * What runs a unary call past a layer: the call's response, handed to `deliver` before the
 * promise resolves with it. A layer that must see the response before it goes (admission counts
 * its bytes until it is sent; a write's session token is a trailer sent with it) passes a
 * `deliver` of its own that does so and then calls the one it was given.
 */
export type NextUnary<Req, Res> = (
  request: Req,
  context: CallContext,
  deliver: Deliver<Res>,
) => Promise<Res>;

export interface ServerMiddleware {
  <Req, Res>(request: Req, context: CallContext, next: NextHandler<Req, Res>): AsyncIterable<Res>;
  /** The layer's work on a unary call, by promises: what the call above does to a stream of one. */
  readonly unary?: <Req, Res>(
    request: Req,
    context: CallContext,
    next: NextUnary<Req, Res>,
    deliver: Deliver<Res>,
  ) => Promise<Res>;
}

/** A layer given as both forms. */
export function middlewareLayer(
  stream: <Req, Res>(
    request: Req,
    context: CallContext,
    next: NextHandler<Req, Res>,
  ) => AsyncIterable<Res>,
  unary: NonNullable<ServerMiddleware['unary']>,
): ServerMiddleware {
  return Object.assign(stream, { unary });
}

/** The chain of layers, outermost first; an empty chain calls the handler directly. */
export interface MiddlewareChain {
  /** Any call, as a stream of messages (a unary call's one). */
  readonly stream: <Req, Res>(
    request: Req,
    context: CallContext,
    handler: NextHandler<Req, Res>,
  ) => AsyncIterable<Res>;
  /** A unary call by promises; undefined when a layer has no unary form. */
  readonly unary:
    | (<Req, Res>(
        request: Req,
        context: CallContext,
        handler: NextUnary<Req, Res>,
        deliver: Deliver<Res>,
      ) => Promise<Res>)
    | undefined;
}

export function composeMiddleware(layers: readonly ServerMiddleware[]): MiddlewareChain {
  const stream = <Req, Res>(
    request: Req,
    context: CallContext,
    handler: NextHandler<Req, Res>,
  ): AsyncIterable<Res> => {
    const run = (index: number): NextHandler<Req, Res> => {
      const layer = layers[index];
      if (!layer) return handler;
      const next = run(index + 1);
      return (innerRequest, innerContext) => layer(innerRequest, innerContext, next);
    };
    return run(0)(request, context);
  };
  const unaryLayers = layers.map((layer) => layer.unary);
  if (!unaryLayers.every((layer) => layer !== undefined)) return { stream, unary: undefined };
  const unary = <Req, Res>(
    request: Req,
    context: CallContext,
    handler: NextUnary<Req, Res>,
    deliver: Deliver<Res>,
  ): Promise<Res> => {
    const run = (index: number): NextUnary<Req, Res> => {
      const layer = unaryLayers[index];
      if (!layer) return handler;
      const next = run(index + 1);
      return (innerRequest, innerContext, innerDeliver) =>
        layer(innerRequest, innerContext, next, innerDeliver);
    };
    return run(0)(request, context, deliver);
  };
  return { stream, unary };
}
