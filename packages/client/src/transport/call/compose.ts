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

/** The rest of the chain. A layer is given the same `next` for every call. */
export type CallNext = (call: ClientCall, options: ClientCallOptions) => AsyncIterable<unknown>;

/**
 * A client middleware (an interceptor): an async generator function that calls `next` and
 * yields the messages it wants the caller to see. Errors are thrown; above the error layer they
 * are ShamelessErrors.
 *
 * @example
 * const logAttempts: ClientMiddleware = async function* (call, options, next) {
 *   console.log(call.method, options.attempt?.kind, options.endpoint?.address);
 *   yield* next(call, { ...options, metadata: { ...options.metadata, 'x-trace-id': id() } });
 * };
 */
export type ClientMiddleware = (
  call: ClientCall,
  options: ClientCallOptions,
  next: CallNext,
) => AsyncIterable<unknown>;

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
