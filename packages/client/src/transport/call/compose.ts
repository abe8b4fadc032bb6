// The shape of a client middleware and the one place that chains them. After nice-grpc: a
// middleware is an async generator function that gets the call, its options and `next` (the
// rest of the chain), calls `next` once or several times (a retry, a hedge) and yields what
// comes back. The same shape serves unary calls (one message), collected streams (one message:
// all of the stream's) and server streams (many), so one chain serves all three.

import type { AttemptLog, AttemptInfo } from './attempts.js';
import type { Cancellation } from './cancellation.js';
import type { Consistency } from './consistency.js';

/** How a call's answer comes back. */
export type CallShape =
  /** One response message. */
  | 'unary'
  /** A server stream read whole before any of it is used: one message, the array of all. */
  | 'collect'
  /** A server stream handed to the caller message by message. */
  | 'serverStream'
  /**
   * A bidirectional stream: the call's `request` is an AsyncIterable of the caller's messages,
   * written as it yields them; the answers are handed out message by message. Never retried
   * nor hedged: what was sent cannot be sent again (a consumer group member joins again).
   */
  | 'bidiStream';

/** One logical call, as every layer sees it. */
export interface ClientCall {
  /** The lowerCamel method name: `getCell`, `where`, ... */
  readonly method: string;
  /**
   * The generated request object, sent as it is on every attempt; for a `bidiStream`, an
   * AsyncIterable of them.
   */
  readonly request: unknown;
  readonly shape: CallShape;
}

/** The options a call carries down the chain; layers pass on a copy with what they add. */
export interface ClientCallOptions {
  /** Safe to send more than once (reads; writes with a requestId). */
  readonly idempotent: boolean;
  /** May be hedged (reads). Requires `idempotent`. */
  readonly hedgeable: boolean;
  /** The caller's deadline, ms from the call (every attempt included); `Infinity`: none. */
  readonly deadlineMs?: number;
  /**
   * The caller's signal, above the deadline layer. Below it the layers watch `cancellation`
   * instead; the user's interceptors get the attempt's own signal here (its cancellation's), and
   * a signal of their own passed on here cancels the attempt too.
   */
  readonly signal?: AbortSignal;
  /**
   * Set by the deadline layer: the call's cancellation (its caller's abort, its deadline); below
   * a hedge, the attempt's (also cancelled when another attempt answered first).
   */
  readonly cancellation?: Cancellation;
  /** Set by the deadline layer: when the call's deadline passes, on the transport's clock. */
  readonly deadlineAt?: number;
  /** Set by the retry layer: every attempt of this call. */
  readonly attempts?: AttemptLog;
  /** Set by the retry and hedge layers: the attempt this is. */
  readonly attempt?: AttemptInfo;
  /** Set by the endpoint layer: where the attempt goes. */
  readonly endpoint?: { readonly address: string };
  /**
   * Set by the endpoint layer: the attempt waits for a connection (within its deadline)
   * instead of failing at once when the channel has none.
   */
  readonly waitForReady?: boolean;
  /** Request metadata for the attempt (`authorization`, tracing headers, ...). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** How fresh a read must be; the transport's default when left out. */
  readonly consistency?: Consistency;
  /**
   * Told the trailers of a unary attempt that succeeded (text entries), before its answer is
   * yielded: the session token of a write.
   */
  readonly onTrailers?: (trailers: Readonly<Record<string, string>>) => void;
  /**
   * The request of each attempt after the first, built when the attempt starts (a batch call
   * leaves out its callers answered meanwhile); `undefined`: nobody waits for the call.
   */
  readonly requestForAttempt?: () => unknown;
}

/**
 * `options` with `changes` over them: what `{ ...options, ...changes }` says, which is how a
 * layer passes on what it adds. Not written so in the layers: on Node 20's V8 an object spread
 * followed by properties of its own costs about a microsecond a property, against a tenth of
 * that for Object.assign (a lone call's layers paid some 10% of the SDK's CPU so; the journal's
 * "Spreads"). The keys are the options' own, never a caller's.
 */
export function withOptions(
  options: ClientCallOptions,
  changes: Partial<ClientCallOptions>,
): ClientCallOptions {
  return Object.assign({}, options, changes);
}

/** The rest of the chain. A layer is given the same `next` for every call. */
export type CallNext = (call: ClientCall, options: ClientCallOptions) => AsyncIterable<unknown>;

/** The rest of the chain for a one-message call (unary, collect), by promises: its message. */
export type UnaryNext = (call: ClientCall, options: ClientCallOptions) => Promise<unknown>;

/**
 * A client middleware (an interceptor): an async generator function that calls `next` and
 * yields the messages it wants the caller to see. Errors are thrown; above the error layer they
 * are ShamelessErrors.
 *
 * A layer may also say what it does to a one-message call (unary, collect) by promises
 * (`unary`): the same work without an async generator per call. When every layer of the chain
 * has that form, one-message calls run by it; a layer without it (an interceptor written as
 * below) makes them run through the generators, as streams of one message.
 *
 * @example
 * const logAttempts: ClientMiddleware = async function* (call, options, next) {
 *   console.log(call.method, options.attempt?.kind, options.endpoint?.address);
 *   yield* next(call, { ...options, metadata: { ...options.metadata, 'x-trace-id': id() } });
 * };
 */
export interface ClientMiddleware {
  (call: ClientCall, options: ClientCallOptions, next: CallNext): AsyncIterable<unknown>;
  /** The layer's work on a one-message call, by promises. */
  readonly unary?: (
    call: ClientCall,
    options: ClientCallOptions,
    next: UnaryNext,
  ) => Promise<unknown>;
}

/** A layer given as both forms. */
export function clientLayer(
  stream: (call: ClientCall, options: ClientCallOptions, next: CallNext) => AsyncIterable<unknown>,
  unary: NonNullable<ClientMiddleware['unary']>,
): ClientMiddleware {
  return Object.assign(stream, { unary });
}

/**
 * A layer that only passes the call on, changed by `pass` (its call or its options): the same
 * function serves both forms, since it returns whatever `next` does.
 */
export function passingLayer(
  pass: <Answer>(
    call: ClientCall,
    options: ClientCallOptions,
    next: (call: ClientCall, options: ClientCallOptions) => Answer,
  ) => Answer,
): ClientMiddleware {
  return clientLayer(
    (call, options, next) => pass(call, options, next),
    (call, options, next) => pass(call, options, next),
  );
}

/** Chains `layers` (outermost first) over `terminal`, the layer that sends the call. */
export function composeMiddleware(
  layers: readonly ClientMiddleware[],
  terminal: CallNext,
): CallNext {
  return layers.reduceRight<CallNext>(
    (next, layer) => (call, options) => layer(call, options, next),
    terminal,
  );
}

/**
 * Chains the unary forms of `layers` over `terminal`, for one-message calls; undefined when a
 * layer has none (such calls then go through {@link composeMiddleware}'s chain).
 */
export function composeUnary(
  layers: readonly ClientMiddleware[],
  terminal: UnaryNext,
): UnaryNext | undefined {
  let next = terminal;
  for (let i = layers.length - 1; i >= 0; i--) {
    const unary = layers[i]!.unary;
    if (unary === undefined) return undefined;
    const inner = next;
    next = (call, options) => unary(call, options, inner);
  }
  return next;
}

/** Runs a one-message call (unary, collect) through a chain: resolves with its message. */
export async function onlyMessage<T>(
  call: ClientCall,
  messages: AsyncIterable<unknown>,
): Promise<T> {
  let answer: unknown;
  let answered = false;
  for await (const message of messages) {
    answer = message;
    answered = true;
  }
  if (!answered) throw new TypeError(`${call.method}: the call ended without an answer`);
  return answer as T;
}
