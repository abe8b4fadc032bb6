// createTransport: the endpoint pool, budget, latency tracker, policies and executors glued to
// the generated grpc-js StoreClient.

import { Metadata, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import type { RandomSource } from './backoff.js';
import { TokenBudget, type BudgetOptions } from './budget.js';
import { systemClock, type Clock } from './clock.js';
import { EndpointPool, type Endpoint } from './endpoints.js';
import { CancelledError } from './errors.js';
import { LatencyTracker, type LatencyOptions } from './latency.js';
import {
  grpcDeadline,
  startServerStream,
  startUnaryCall,
  type RequestOf,
  type ResponseOf,
  type StreamMethodName,
  type UnaryMethodName,
} from './methods.js';
import {
  resolveHedgePolicy,
  resolveRetryPolicy,
  type HedgeOptions,
  type RetryOptions,
} from './policy.js';
import { newCounters, type TransportStats } from './stats.js';
import { StreamExecutor, type StreamCallOptions } from './stream.js';
import { UnaryExecutor, type UnaryCallOptions } from './unary.js';

/** The default deadline of a call, ms. */
export const DEFAULT_DEADLINE_MS = 5000;

/** Settings of {@link createTransport}. */
export interface TransportOptions {
  /** Server addresses, `host:port`. Calls are spread over them round robin. */
  endpoints: readonly string[];
  /** Channel credentials, e.g. `credentials.createSsl(...)`. Default: insecure. */
  credentials?: ChannelCredentials;
  /** Metadata sent with every call, e.g. `{ authorization: 'Bearer <token>' }`. */
  metadata?: Readonly<Record<string, string>>;
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
  /** grpc-js channel options (keepalive, message size limits, ...). */
  channelOptions?: ChannelOptions;
  /** The source of time. Default: the system clock. */
  clock?: Clock;
  /** The source of randomness for backoff jitter. Default: `Math.random`. */
  random?: RandomSource;
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
  /** Closes every channel. Later calls fail with a CancelledError. */
  close(): void;
}

/** Builds a {@link Transport}: one channel per endpoint, shared policies and budget. */
export function createTransport(options: TransportOptions): Transport {
  const clock = options.clock ?? systemClock;
  const defaultDeadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  if (!(defaultDeadlineMs > 0)) {
    throw new RangeError(`deadlineMs must be > 0 (or Infinity), got ${defaultDeadlineMs}`);
  }
  const latency = new LatencyTracker(options.latency);
  const retry = resolveRetryPolicy(options.retry, options.random);
  const hedge = resolveHedgePolicy(options.hedge, latency);
  const budget = new TokenBudget(options.budget);
  const counters = newCounters();
  const metadata = toMetadata(options.metadata ?? {});
  const pool = new EndpointPool({
    endpoints: options.endpoints,
    credentials: options.credentials,
    channelOptions: options.channelOptions,
    downMs: options.endpointDownMs,
    clock,
  });
  const unaryExecutor = new UnaryExecutor<Endpoint>({
    endpoints: pool,
    clock,
    budget,
    retry,
    hedge,
    latency,
    counters,
    defaultDeadlineMs,
  });
  const streamExecutor = new StreamExecutor<Endpoint>({
    endpoints: pool,
    clock,
    budget,
    retry,
    counters,
    defaultDeadlineMs,
  });
  const closedError = (method: string): CancelledError =>
    new CancelledError(`${method}: the transport is closed`);

  return {
    endpoints: pool.addresses,

    unary<M extends UnaryMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: UnaryCallOptions,
    ): Promise<ResponseOf<M>> {
      if (pool.closed) return Promise.reject(closedError(method));
      return unaryExecutor.execute<ResponseOf<M>>(
        method,
        ({ endpoint, remainingMs }) => {
          if (pool.closed) throw closedError(method);
          return startUnaryCall(endpoint.client, method, request, metadata.clone(), {
            deadline: grpcDeadline(remainingMs),
          });
        },
        callOptions,
      );
    },

    serverStream<M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: StreamCallOptions = {},
    ): AsyncIterableIterator<ResponseOf<M>> {
      return streamExecutor.open<ResponseOf<M>>(
        method,
        ({ endpoint, remainingMs }) => {
          if (pool.closed) throw closedError(method);
          const call = startServerStream(endpoint.client, method, request, metadata.clone(), {
            deadline: grpcDeadline(remainingMs),
          });
          // Errors reach the consumer through iteration. This listener only keeps a status
          // that arrives after the consumer left (the CANCELLED of our own cancel()) from
          // being an unhandled 'error' event.
          call.on('error', () => {});
          return { messages: call, cancel: () => call.cancel() };
        },
        callOptions,
      );
    },

    collect<M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      callOptions: UnaryCallOptions,
    ): Promise<ResponseOf<M>[]> {
      if (pool.closed) return Promise.reject(closedError(method));
      return unaryExecutor.execute<ResponseOf<M>[]>(
        method,
        ({ endpoint, remainingMs }) => {
          if (pool.closed) throw closedError(method);
          const call = startServerStream(endpoint.client, method, request, metadata.clone(), {
            deadline: grpcDeadline(remainingMs),
          });
          const result = (async () => {
            const messages: ResponseOf<M>[] = [];
            for await (const message of call) messages.push(message as ResponseOf<M>);
            return messages;
          })();
          return { result, cancel: () => call.cancel() };
        },
        callOptions,
      );
    },

    stats(): TransportStats {
      return { ...counters, budgetTokens: budget.tokens };
    },

    close(): void {
      pool.close();
    },
  };
}

function toMetadata(values: Readonly<Record<string, string>>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(values)) metadata.set(key, value);
  return metadata;
}
