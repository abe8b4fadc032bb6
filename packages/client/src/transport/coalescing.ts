// The coalescing layer: a Transport over a Transport that sends the calls made in the same tick
// as one batch call per kind. GetCell (of a latest version) becomes GetCells, WriteCell
// WriteCells, Put PutMany, and a Where page read whole WhereMany; every other call passes
// through untouched. A lone call goes as itself, with no wait: the queue is sent at the end of
// the tick, never on a timer. Each caller gets the answer or typed error its single call would
// have had, under its own deadline and AbortSignal.

import { GET_CELL, PUT, WHERE_PAGE, WRITE_CELL, type BatchForm } from './batchForms.js';
import { sendBatch, type BatchCallDeps } from './batchCall.js';
import { splitIntoBatches } from './batchSplit.js';
import { systemClock, type Clock } from './clock.js';
import type { RequestOf, ResponseOf, StreamMethodName, UnaryMethodName } from './methods.js';
import {
  onlyMessage,
  type CallNext,
  type ClientCall,
  type ClientMiddleware,
} from './middleware/compose.js';
import { PendingCall } from './pendingCall.js';
import type { TransportCounters, TransportStats } from './stats.js';
import { atTickEnd } from './tick.js';
import type { CallSender, Transport, UnaryCallOptions } from './transportInterface.js';

/** The option of {@link connect} that turns coalescing on or off. */
export interface CoalescingOptions {
  /**
   * Whether calls made in the same tick are sent together. Default true.
   *
   * The GetCell, WriteCell and Put calls and the Where pages that `find`, `reload`, `save`,
   * `update`, `put` and `where` send, when several are made in the same tick (a `Promise.all`,
   * a loop of calls not awaited one by one, callers resumed by the same answer), go as one
   * GetCells (per model), WriteCells, PutMany or WhereMany call, in as many calls as the
   * server's bounds need. They are sent when the tick ends, so a lone call waits for nothing
   * and goes as itself. Each caller still gets its own answer or typed error, its own deadline
   * and AbortSignal, and its writes their own requestId; batches are retried and hedged like
   * the single calls they carry. `false`: every call is sent on its own.
   */
  readonly coalesce?: boolean;
}

/** Settings of {@link coalesceCalls}. */
export interface CoalescingSettings {
  /** The deadline of calls that set none, ms: the inner transport's `deadlineMs`. */
  readonly defaultDeadlineMs: number;
  /** The clock the callers' deadlines are kept on. Default: the system clock. */
  readonly clock?: Clock;
  /** Where the layer counts what it coalesced. Default: counters of its own. */
  readonly counters?: CoalescingCounters;
}

/** The counters the coalescing layer keeps. */
export type CoalescingCounters = Pick<
  TransportCounters,
  'coalescedCalls' | 'coalescedBatches' | 'batchFallbacks'
>;

/** The calls answered from a batch, by method. */
const UNARY_FORMS: { readonly [M in UnaryMethodName]?: BatchForm<RequestOf<M>, ResponseOf<M>> } = {
  getCell: GET_CELL,
  writeCell: WRITE_CELL,
  put: PUT,
};
const COLLECT_FORMS: {
  readonly [M in StreamMethodName]?: BatchForm<RequestOf<M>, ResponseOf<M>[]>;
} = {
  where: WHERE_PAGE,
};

/** The batch form that answers `call`, if it is one the layer coalesces. */
function formOf(call: ClientCall): BatchForm<unknown, unknown> | undefined {
  const forms: Readonly<Record<string, BatchForm<never, unknown> | undefined>> =
    call.shape === 'unary' ? UNARY_FORMS : call.shape === 'collect' ? COLLECT_FORMS : {};
  return forms[call.method] as BatchForm<unknown, unknown> | undefined;
}

/**
 * The coalescing layer as a middleware, outermost in the transport's chain: the calls it
 * coalesces are queued for the end of the tick and sent as batch calls through the rest of
 * the chain (each batch one call: its own deadline, retries and hedges); every other call
 * passes straight through.
 */
export function coalescingLayer(settings: CoalescingSettings): ClientMiddleware {
  let coalescer: Coalescer | undefined;
  return (call, options, next) => {
    const form = formOf(call);
    // What the layer does not coalesce goes on as it came, with no wrapper of this layer's.
    if (form === undefined) return next(call, options);
    coalescer ??= new Coalescer(senderOver(next), settings);
    return answerOf(coalescer.call(form, call.request, options));
  };
}

async function* answerOf(answer: Promise<unknown>): AsyncGenerator<unknown> {
  yield await answer;
}

/** The rest of a chain as a {@link CallSender}. */
function senderOver(next: CallNext): CallSender {
  return {
    unary: (method, request, options) => {
      const call: ClientCall = { method, request, shape: 'unary' };
      return onlyMessage(call, next(call, options));
    },
    collect: (method, request, options) => {
      const call: ClientCall = { method, request, shape: 'collect' };
      return onlyMessage(call, next(call, options));
    },
  };
}

/**
 * Wraps `inner` so that calls made in the same tick are sent as batch calls (see
 * {@link CoalescingOptions.coalesce}). Closing the result closes `inner`.
 */
export function coalesceCalls(inner: Transport, settings: CoalescingSettings): Transport {
  const coalescer = new Coalescer(inner, settings);
  return {
    endpoints: inner.endpoints,

    unary<M extends UnaryMethodName>(
      method: M,
      request: RequestOf<M>,
      options: UnaryCallOptions,
    ): Promise<ResponseOf<M>> {
      const form = UNARY_FORMS[method];
      if (form === undefined) return inner.unary(method, request, options);
      return coalescer.call(form, request, options);
    },

    serverStream: (method, request, options) => inner.serverStream(method, request, options),

    collect<M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      options: UnaryCallOptions,
    ): Promise<ResponseOf<M>[]> {
      const form = COLLECT_FORMS[method];
      if (form === undefined) return inner.collect(method, request, options);
      return coalescer.call(form, request, options);
    },

    stats(): TransportStats {
      const stats = inner.stats();
      const own = coalescer.counters;
      return {
        ...stats,
        coalescedCalls: stats.coalescedCalls + own.coalescedCalls,
        coalescedBatches: stats.coalescedBatches + own.coalescedBatches,
        batchFallbacks: stats.batchFallbacks + own.batchFallbacks,
      };
    },

    close(): void {
      inner.close();
    },
  };
}

/** The calls of one kind queued in this tick that may share a batch. */
interface Queue<Req, Res> {
  readonly form: BatchForm<Req, Res>;
  readonly calls: PendingCall<Req, Res>[];
}

class Coalescer {
  readonly counters: CoalescingCounters;
  readonly #inner: CallSender;
  readonly #clock: Clock;
  readonly #defaultDeadlineMs: number;
  readonly #batchDeps: BatchCallDeps;
  /** Keyed by method, call marks and group; emptied at the end of each tick. */
  readonly #queues = new Map<string, Queue<unknown, unknown>>();
  #flushScheduled = false;

  constructor(inner: CallSender, settings: CoalescingSettings) {
    this.counters = settings.counters ?? {
      coalescedCalls: 0,
      coalescedBatches: 0,
      batchFallbacks: 0,
    };
    this.#inner = inner;
    this.#clock = settings.clock ?? systemClock;
    this.#defaultDeadlineMs = settings.defaultDeadlineMs;
    this.#batchDeps = {
      inner,
      clock: this.#clock,
      counters: this.counters,
      send: (form, calls) => this.#send(form, calls),
    };
  }

  /** Queues the call for the end of the tick; resolves with its own answer. */
  call<Req, Res>(form: BatchForm<Req, Res>, request: Req, options: UnaryCallOptions): Promise<Res> {
    const group = form.groupOf(request);
    const deadlineMs = options.deadlineMs ?? this.#defaultDeadlineMs;
    // What a batch cannot carry, and calls that fail before they are sent (already aborted, a
    // deadline that is no deadline, marks that contradict each other), go as they came: the
    // inner transport answers them as always.
    if (
      group === undefined ||
      options.signal?.aborted === true ||
      !(deadlineMs > 0) ||
      (options.hedgeable && !options.idempotent)
    ) {
      return form.sendOne(this.#inner, request, options);
    }
    // Calls share a batch only if they share the marks the transport acts on; deadlines and
    // signals stay each caller's own.
    const key = `${form.method}/${options.idempotent}/${options.hedgeable}/${group}`;
    let queue = this.#queues.get(key) as Queue<Req, Res> | undefined;
    if (queue === undefined) {
      queue = { form, calls: [] };
      this.#queues.set(key, queue as Queue<unknown, unknown>);
    }
    const call = new PendingCall<Req, Res>(
      form.method,
      request,
      options,
      deadlineMs,
      this.#clock.now(),
    );
    // Aborted while queued: rejected at once and left out of its batch.
    call.holdAbort(() => {});
    queue.calls.push(call);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      atTickEnd(() => this.#flush());
    }
    return call.answer;
  }

  #flush(): void {
    this.#flushScheduled = false;
    const queues = [...this.#queues.values()];
    this.#queues.clear();
    for (const { form, calls } of queues) {
      const waiting = calls.filter((call) => !call.settled);
      const sizeOf = (call: PendingCall<unknown, unknown>) => form.sizeOf(call.request);
      for (const batch of splitIntoBatches(waiting, sizeOf, form.bounds)) this.#send(form, batch);
    }
  }

  /** Sends calls as one batch call, or as its single call when there is one. */
  #send<Req, Res>(form: BatchForm<Req, Res>, calls: readonly PendingCall<Req, Res>[]): void {
    const waiting = calls.filter((call) => !call.settled);
    if (waiting.length > 1) {
      sendBatch(this.#batchDeps, form, waiting);
      return;
    }
    const call = waiting[0];
    if (call === undefined) return;
    // From here the inner transport watches the caller's signal and deadline, as for any call.
    call.releaseAbort();
    form
      .sendOne(this.#inner, call.request, {
        ...call.options,
        deadlineMs: call.deadlineAt - this.#clock.now(),
      })
      .then(
        (answer) => call.resolve(answer),
        (error: unknown) => call.reject(error),
      );
  }
}
