// The one place the transport's layers are put in order. Outermost first:
//
//   coalescing       calls of one tick → one batch call          (connect's default)
//   deadline         one deadline and one AbortSignal per call
//   counting         calls, failures
//   retry            transient failures sent again, after backoff, within the budget
//   hedge            slow reads raced against another endpoint (with hedging and 2+ endpoints)
//   budget           each attempt's account: success earns, transient failure costs
//   endpoint         which server; marked down/up; waiting for a restarting server
//   token            authorization: Bearer <token>
//   session          a read's consistency and the session token; a write's token kept
//   attempt request  a batch call's retries and hedges carry only the callers still waiting
//   interceptors     the user's own (they see every attempt, and its AbortSignal)
//   errors           gRPC status → typed ShamelessError
//   pipeline call    the endpoint's Pipeline stream, or a call of its own (the terminal)

import type { TokenBudget } from '../policy/budget.js';
import type { Clock } from '../call/clock.js';
import type { LatencyTracker } from '../policy/latency.js';
import { attemptRequestLayer } from './attemptRequest.js';
import { budgetLayer } from './budget.js';
import {
  composeMiddleware,
  composeUnary,
  onlyMessage,
  type CallNext,
  type ClientMiddleware,
  type UnaryNext,
} from '../call/compose.js';
import { countingLayer } from './counting.js';
import { tokenLayer, type TokenSource } from './credentials.js';
import { deadlineLayer } from './deadline.js';
import { endpointLayer, type EndpointSettings } from './endpoint.js';
import { errorLayer } from './errors.js';
import { attemptSignalLayer, interceptorSignalLayer } from './interceptorSignal.js';
import { hedgeLayer } from './hedge.js';
import { retryLayer } from './retry.js';
import { type SessionSettings, sessionLayer } from './session.js';
import type { HedgePolicy, RetryPolicy } from '../policy/policy.js';
import type { TransportCounters } from '../call/stats.js';

/** Everything the chain's layers share across calls. */
export interface ChainParts {
  readonly clock: Clock;
  readonly budget: TokenBudget;
  /** Null: no retries. */
  readonly retry: RetryPolicy | null;
  /** Null: no hedging. */
  readonly hedge: HedgePolicy | null;
  readonly latency: LatencyTracker;
  readonly counters: TransportCounters;
  readonly endpoints: EndpointSettings['endpoints'];
  /** The deadline of calls that set none, ms. */
  readonly defaultDeadlineMs: number;
  /** Whether attempts wait for a restarting server. Default true. */
  readonly waitForConnection?: boolean;
  readonly token?: TokenSource;
  /** The session token and the consistency of reads that ask for none; none: no layer. */
  readonly session?: SessionSettings;
  /** Outermost, over every other layer (the coalescing layer). */
  readonly callLayers?: readonly ClientMiddleware[];
  /** The user's interceptors, run for every attempt. */
  readonly interceptors?: readonly ClientMiddleware[];
}

/**
 * The transport's chain over `terminal` (the gRPC call, or a scripted one in tests), and its
 * one-message form (`unary`) when every layer has one: not with an interceptor that has
 * none (compose.ts).
 */
export function transportChain(
  parts: ChainParts,
  terminal: CallNext & { readonly unary?: UnaryNext },
): CallNext & { readonly unary: UnaryNext | undefined } {
  const layers = chainLayers(parts);
  const unaryTerminal: UnaryNext =
    terminal.unary ?? ((call, options) => onlyMessage(call, terminal(call, options)));
  return Object.assign(composeMiddleware(layers, terminal), {
    unary: composeUnary(layers, unaryTerminal),
  });
}

/** The layers, outermost first. */
function chainLayers(parts: ChainParts): ClientMiddleware[] {
  const { clock, budget, counters } = parts;
  return [
    ...(parts.callLayers ?? []),
    deadlineLayer({ clock, defaultDeadlineMs: parts.defaultDeadlineMs }),
    // Under the deadline layer: it watches the call's own signal, not the caller's (which
    // many calls may share).
    countingLayer(counters),
    retryLayer({ retry: parts.retry, budget, clock, counters }),
    // Only where a hedge can go (a policy, and another endpoint to send it to): elsewhere the
    // layer would only time each call for a delay nothing uses, an async function a call.
    ...(parts.hedge === null || parts.endpoints.addresses.length < 2
      ? []
      : [
          hedgeLayer({
            hedge: parts.hedge,
            budget,
            latency: parts.latency,
            clock,
            counters,
            endpointCount: parts.endpoints.addresses.length,
          }),
        ]),
    budgetLayer(budget),
    endpointLayer({
      endpoints: parts.endpoints,
      counters,
      waitForConnection: parts.waitForConnection,
    }),
    ...(parts.token === undefined ? [] : [tokenLayer(parts.token)]),
    ...(parts.session === undefined ? [] : [sessionLayer(parts.session)]),
    attemptRequestLayer,
    ...(parts.interceptors === undefined || parts.interceptors.length === 0
      ? []
      : [attemptSignalLayer, ...parts.interceptors, interceptorSignalLayer]),
    errorLayer,
  ];
}
