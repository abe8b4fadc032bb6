// What the model/record API sees of the transport: the Transport interface and the per-call
// options of its unary and streaming calls. Kept apart from createTransport so that the layers
// that build on a transport (the coalescing layer, its batch forms) import no implementation.

import type {
  BidiMethodName,
  RequestOf,
  ResponseOf,
  StreamMethodName,
  UnaryMethodName,
} from './methods.js';
import type { Consistency, SessionToken } from './consistency.js';
import type { TransportStats } from './stats.js';

/** Per-call options of a unary call. */
export interface UnaryCallOptions {
  /**
   * The call is safe to send more than once: a read, or a write carrying a `requestId` (the
   * same request object, with the same requestId, is sent on every attempt). Only such calls
   * are retried.
   */
  idempotent: boolean;
  /** The call may be hedged (reads). Requires `idempotent`. */
  hedgeable: boolean;
  /**
   * The deadline of the whole call, every attempt included, in ms from now. Defaults to the
   * transport's `deadlineMs`. `Infinity` means none.
   */
  deadlineMs?: number;
  /** Aborting it cancels every attempt; the call rejects with a CancelledError. */
  signal?: AbortSignal;
  /** How fresh a read must be; the transport's `consistency` when left out. */
  consistency?: Consistency;
  /**
   * For a call that carries the requests of several callers (the coalescing layer's batch
   * calls): builds the request of each attempt after the first (a retry, a hedge) in place of
   * `request`, from the callers still waiting, so that nothing more is sent for a caller once
   * it was answered. `undefined` from it: nobody waits, the attempt is not sent.
   */
  requestForAttempt?: () => unknown;
}

/** Per-call options of a server-streaming call. */
export interface StreamCallOptions {
  /**
   * The deadline of the whole stream (every attempt, and the time the consumer spends between
   * messages), in ms from the start of iteration. Defaults to the transport's `deadlineMs`;
   * pass `Infinity` for streams that run until cancelled (`Each` with `follow`).
   */
  deadlineMs?: number;
  /** Aborting it cancels the stream; iteration then throws a CancelledError. */
  signal?: AbortSignal;
  /** How fresh the stream's reads must be; the transport's `consistency` when left out. */
  consistency?: Consistency;
}

/** A connection to a set of Shameless servers: the layer under the model/record API. */
export interface Transport {
  /**
   * Calls a unary method (`'getCell'`, `'put'`, ...) with the generated request type and
   * resolves with the generated response type. Rejects with a ShamelessError subclass.
   *
   * Mark reads `{ idempotent: true, hedgeable: true }`, writes that carry a `requestId`
   * `{ idempotent: true, hedgeable: false }` (and pass the same request object, with the same
   * requestId, to every call for one logical write).
   */
  unary<M extends UnaryMethodName>(
    method: M,
    request: RequestOf<M>,
    options: UnaryCallOptions,
  ): Promise<ResponseOf<M>>;
  /**
   * Calls a server-streaming method (`'where'`, `'each'`). The call starts on the first
   * `next()`; leaving the loop early cancels it.
   */
  serverStream<M extends StreamMethodName>(
    method: M,
    request: RequestOf<M>,
    options?: StreamCallOptions,
  ): AsyncIterableIterator<ResponseOf<M>>;
  /**
   * Calls a bidirectional streaming method (`'consume'`): `requests` is read and written as it
   * yields (its end half-closes the call), the answers are handed out as they come. The call
   * starts on the first `next()`; leaving the loop early cancels it, and so does the end of
   * the answers (the request iterator is then returned). Sent once, to one endpoint: never
   * retried nor hedged, since what was sent cannot be replayed; the caller opens another.
   */
  bidiStream<M extends BidiMethodName>(
    method: M,
    requests: AsyncIterable<RequestOf<M>>,
    options?: StreamCallOptions,
  ): AsyncIterableIterator<ResponseOf<M>>;
  /**
   * Calls a server-streaming method and resolves with all its messages once it ends: for a
   * caller that needs the whole answer before using any of it (a Where page). Since nothing is
   * handed out early, a stream broken midway can be sent again from the start, so it is
   * retried and hedged exactly like a unary call with the same options.
   */
  collect<M extends StreamMethodName>(
    method: M,
    request: RequestOf<M>,
    options: UnaryCallOptions,
  ): Promise<ResponseOf<M>[]>;
  /** A snapshot of the transport's counters. */
  stats(): TransportStats;
  /** The endpoint addresses. */
  readonly endpoints: readonly string[];
  /**
   * The session's token: every write's answered token merged. Hand `session.current` to
   * another client's `session.observe()` to let it read this one's writes.
   */
  readonly session: SessionToken;
  /**
   * Closes every channel. Calls already sent are answered; calls not sent yet fail with a
   * CancelledError, without a retry. Server streams still open are cancelled: their
   * iteration throws a CancelledError.
   */
  close(): void;
}

/** The calls a layer built on a transport sends through it (the coalescing layer's batches). */
export type CallSender = Pick<Transport, 'unary' | 'collect'>;
