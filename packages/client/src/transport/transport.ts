// createTransport: the endpoint pool, budget, latency tracker and policies, and the chain of
// layers (chain.ts) over the gRPC call that every unary call, collected stream and server
// stream goes through.

import type { ChannelCredentials, ChannelOptions } from '@grpc/grpc-js';
import { caFileProblem, tlsCredentials } from '@shameless/proto';
import type { RandomSource } from './policy/backoff.js';
import { TokenBudget, type BudgetOptions } from './policy/budget.js';
import { transportChain } from './middleware/chain.js';
import { systemClock, type Clock } from './call/clock.js';
import { coalescingLayer, defaultBatchesInFlight } from './batch/coalescing.js';
import { DEFAULT_MAX_MESSAGE_BYTES, EndpointPool } from './policy/endpoints.js';
import { CancelledError, InvalidArgumentError } from './call/errors.js';
import { grpcCall } from './wire/grpcCall.js';
import { LatencyTracker, type LatencyOptions } from './policy/latency.js';
import type {
  BidiMethodName,
  RequestOf,
  ResponseOf,
  StreamMethodName,
  UnaryMethodName,
} from './call/methods.js';
import { onlyMessage, type ClientCall, type ClientMiddleware } from './call/compose.js';
import { type Consistency, SessionToken, checkConsistency } from './call/consistency.js';
import type { TokenSource } from './middleware/credentials.js';
import { OpenStreams } from './wire/openStreams.js';
import { pipelineCall } from './wire/pipelineCall.js';
import { Pipelines } from './wire/pipelines.js';
import {
  resolveHedgePolicy,
  resolveRetryPolicy,
  type HedgeOptions,
  type RetryOptions,
} from './policy/policy.js';
import { newCounters, type TransportStats } from './call/stats.js';
import type { StreamCallOptions, Transport, UnaryCallOptions } from './call/transportInterface.js';

/** The default deadline of a call, ms. */
export const DEFAULT_DEADLINE_MS = 5000;

/** TLS settings: PEM contents (not file names). */
export interface TlsOptions {
  /**
   * The CA that signed the servers' certificates (a bundle may hold others besides), or a
   * server's own self-signed certificate. Default: the system's root CAs. Anything else (a
   * private key, the server's certificate that a CA signed, text that holds no certificate)
   * makes `connect` fail at once, before any call, with an InvalidArgumentError that says what
   * to give instead.
   */
  readonly ca?: string | Buffer;
  /** The client certificate, for servers that require one (mutual TLS). Needs `key`. */
  readonly cert?: string | Buffer;
  /** The client certificate's private key. */
  readonly key?: string | Buffer;
}

/** Settings of {@link createTransport}. */
export interface TransportOptions {
  /** Server addresses, `host:port`. Calls are spread over them round robin. */
  endpoints: readonly string[];
  /**
   * TLS to the servers (with `cert` and `key`: mutual TLS). Default: plaintext. An IP address is
   * dialled without a TLS server name (RFC 6066): its certificate must name the address, or the
   * name in `channelOptions['grpc.ssl_target_name_override']`.
   */
  tls?: TlsOptions;
  /**
   * A bearer token sent as `authorization: Bearer <token>` on every attempt (retries and
   * hedges included), or a function (maybe async) asked for it on every attempt, for tokens
   * that rotate. Never shown in an error message.
   */
  token?: TokenSource;
  /** Channel credentials, for what `tls` does not cover. Not together with `tls`. */
  credentials?: ChannelCredentials;
  /** Metadata sent with every call. */
  metadata?: Readonly<Record<string, string>>;
  /**
   * How fresh reads must be when a call does not say (see {@link Consistency}). Default
   * `'strong'` here; `connect` defaults to `'session'`.
   */
  consistency?: Consistency;
  /**
   * Your own middleware (tracing, per-call metadata, logging), run for every attempt, retries
   * and hedges included, between the endpoint choice and the error mapping. See
   * {@link ClientMiddleware}.
   */
  interceptors?: readonly ClientMiddleware[];
  /** The default deadline of a call (all attempts together), ms. Default 5000. */
  deadlineMs?: number;
  /** Retry settings, or `false` for none. Default: 4 attempts, backoff 20 ms .. 1 s. */
  retry?: RetryOptions | false;
  /** Hedging settings, or `false` for none. Default: 1 hedge after the method's p95. */
  hedge?: HedgeOptions | false;
  /** The retry/hedge token budget. Default: 100 tokens, 0.1 earned per success. */
  budget?: Partial<BudgetOptions>;
  /** How hedge delays learn latencies. Default: last 100 samples, trusted from 20. */
  latency?: LatencyOptions;
  /** How long an endpoint that answered UNAVAILABLE is avoided, ms. Default 1000. */
  endpointDownMs?: number;
  /**
   * When every endpoint is down and a server that answered before has lost its connection
   * (it is restarting), calls wait for it to come back within their deadline, spending no
   * retry budget. Default true; `false`: such calls fail at once with UnavailableError.
   * Endpoints that never answered (a wrong address) always fail at once.
   */
  waitForConnection?: boolean;
  /**
   * Whether calls made in the same tick are sent as batch calls (see `connect`). Default
   * false here; `connect` turns it on.
   */
  coalesce?: boolean;
  /**
   * How many batch calls of one kind may be out at once when coalescing (see `connect`).
   * Default: one per endpoint.
   */
  maxBatchesInFlight?: number;
  /**
   * How long a batch call out holds back the later calls of its kind when coalescing, ms (see
   * `connect`). Default 100.
   */
  maxHoldMs?: number;
  /**
   * Whether unary calls and Where pages go over one Pipeline stream per endpoint (see the
   * `Pipeline` RPC in store.proto) instead of as calls of their own. Default true. A message on
   * an open stream costs client and server a fraction of a unary call; a server without
   * Pipeline gets calls of their own.
   */
  pipeline?: boolean;
  /** grpc-js channel options (keepalive, message size limits, ...). */
  channelOptions?: ChannelOptions;
  /** The source of time. Default: the system clock. */
  clock?: Clock;
  /** The source of randomness for backoff jitter. Default: `Math.random`. */
  random?: RandomSource;
}

/** Builds a {@link Transport}: one channel per endpoint, shared policies and budget. */
export function createTransport(options: TransportOptions): Transport {
  const clock = options.clock ?? systemClock;
  const defaultDeadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  if (!(defaultDeadlineMs > 0)) {
    throw new RangeError(`deadlineMs must be > 0 (or Infinity), got ${defaultDeadlineMs}`);
  }
  const latency = new LatencyTracker(options.latency);
  const budget = new TokenBudget(options.budget);
  const counters = newCounters();
  const pool = new EndpointPool({
    endpoints: options.endpoints,
    credentials: channelCredentials(options),
    channelOptions: options.channelOptions,
    downMs: options.endpointDownMs,
    clock,
  });
  const metadata = options.metadata ?? {};
  const session = new SessionToken();
  const consistency = checkConsistency(options.consistency ?? 'strong');
  const alone = grpcCall({ clock, metadata, closed: () => pool.closed });
  const pipelines = new Pipelines({
    clock,
    maxAnswerBytes: messageLimit(options.channelOptions, 'grpc.max_receive_message_length'),
    maxRequestBytes:
      messageLimit(options.channelOptions, 'grpc.max_send_message_length') ??
      Number.POSITIVE_INFINITY,
  });
  const chain = transportChain(
    {
      clock,
      budget,
      retry: resolveRetryPolicy(options.retry, options.random),
      hedge: resolveHedgePolicy(options.hedge, latency),
      latency,
      counters,
      endpoints: pool,
      defaultDeadlineMs,
      waitForConnection: options.waitForConnection,
      token: options.token,
      session: { session, consistency },
      interceptors: options.interceptors,
      callLayers:
        options.coalesce === true
          ? [
              coalescingLayer({
                defaultDeadlineMs,
                clock,
                counters,
                maxBatchesInFlight:
                  options.maxBatchesInFlight ?? defaultBatchesInFlight(pool.addresses.length),
                maxHoldMs: options.maxHoldMs,
              }),
            ]
          : [],
    },
    options.pipeline === false
      ? alone
      : pipelineCall({ clock, pipelines, metadata, counters, alone }),
  );
  const closedError = (method: string): CancelledError =>
    new CancelledError(`${method}: the transport is closed`);
  const openStreams = new OpenStreams();
  const answer = <T>(call: ClientCall, callOptions: UnaryCallOptions): Promise<T> =>
    pool.closed
      ? Promise.reject(closedError(call.method))
      : chain.unary
        ? (chain.unary(call, callOptions) as Promise<T>)
        : onlyMessage<T>(call, chain(call, callOptions));

  return {
    endpoints: pool.addresses,
    session,

    unary<M extends UnaryMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: UnaryCallOptions,
    ): Promise<ResponseOf<M>> {
      return answer({ method, request, shape: 'unary' }, callOptions);
    },

    async *serverStream<M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: StreamCallOptions = {},
    ): AsyncIterableIterator<ResponseOf<M>> {
      if (pool.closed) throw closedError(method);
      const messages = openStreams.run(
        callOptions.signal,
        () => closedError(method),
        (signal) =>
          // A stream is a read: retried before its first message, never hedged.
          chain(
            { method, request, shape: 'serverStream' },
            { ...callOptions, signal, idempotent: true, hedgeable: false },
          ),
      );
      for await (const message of messages) yield message as ResponseOf<M>;
    },

    async *bidiStream<M extends BidiMethodName>(
      method: M,
      requests: AsyncIterable<RequestOf<M>>,
      callOptions: StreamCallOptions = {},
    ): AsyncIterableIterator<ResponseOf<M>> {
      if (pool.closed) throw closedError(method);
      const messages = openStreams.run(
        callOptions.signal,
        () => closedError(method),
        (signal) =>
          // What was written cannot be written again: one attempt, never hedged.
          chain(
            { method, request: requests, shape: 'bidiStream' },
            { ...callOptions, signal, idempotent: false, hedgeable: false },
          ),
      );
      for await (const message of messages) yield message as ResponseOf<M>;
    },

    collect<M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: UnaryCallOptions,
    ): Promise<ResponseOf<M>[]> {
      return answer({ method, request, shape: 'collect' }, callOptions);
    },

    stats(): TransportStats {
      return { ...counters, budgetTokens: budget.tokens };
    },

    close(): void {
      openStreams.closeAll();
      pipelines.close();
      pool.close();
    },
  };
}

/**
 * {@link createTransport} with coalescing on unless `coalesce` is false: the transport
 * `connect` makes.
 */
export function createCoalescingTransport(options: TransportOptions): Transport {
  return createTransport({
    ...options,
    coalesce: options.coalesce !== false,
    consistency: options.consistency ?? 'session',
  });
}

/** The channels' largest message one way (grpc-js: -1 for no limit); undefined for none. */
function messageLimit(
  channelOptions: ChannelOptions | undefined,
  option: 'grpc.max_receive_message_length' | 'grpc.max_send_message_length',
): number | undefined {
  const limit = channelOptions?.[option] as number | undefined;
  if (limit === undefined) return DEFAULT_MAX_MESSAGE_BYTES;
  return limit >= 0 ? limit : undefined;
}

function channelCredentials(options: TransportOptions): ChannelCredentials | undefined {
  const { tls } = options;
  if (tls === undefined) return options.credentials;
  if (options.credentials !== undefined) {
    throw new TypeError('pass either tls or credentials, not both');
  }
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new TypeError('tls.cert and tls.key go together: pass both for mutual TLS, or neither');
  }
  const pem = (value: string | Buffer | undefined): Buffer | undefined =>
    value === undefined ? undefined : Buffer.isBuffer(value) ? value : Buffer.from(value);
  const ca = pem(tls.ca);
  // Node takes any bytes as the CA; a wrong one would fail every handshake, as UNAVAILABLE.
  const caProblem = ca && caFileProblem(ca, 'server');
  if (caProblem) throw new InvalidArgumentError(`tls.ca ${caProblem}`);
  // Not grpc-js's createSsl: it sends an IP address as the TLS server name (see tlsCredentials).
  return tlsCredentials({ ca, cert: pem(tls.cert), key: pem(tls.key) });
}
