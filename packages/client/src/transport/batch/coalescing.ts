// The coalescing layer: a Transport over a Transport that sends the calls made in the same tick
// as one batch call per kind. GetCell (of a latest version) becomes GetCells, WriteCell
// WriteCells, Put PutMany, and a Where page read whole WhereMany; every other call passes
// through untouched. A lone call goes as itself, with no wait: the queue is sent at the end of
// the tick, never on a timer. While a kind has as many batch calls out as it may (one per
// endpoint), its new calls wait for one to come back and then go together, as a database's
// group commit gathers the writes that arrive during a flush: calls that come spread out then
// still travel in large batches. A batch call out longer than `maxHoldMs` stops holding them
// back, so one stuck call does not stop its kind. Each caller gets the answer or typed error
// its single call would have had, under its own deadline and AbortSignal.

import { GET_CELL, PUT, WHERE_PAGE, WRITE_CELL, type BatchForm } from './batchForms.js';
import { sendBatch, type BatchCallDeps } from './batchCall.js';
import { BatchSizeCaps } from './batchSizeCaps.js';
import { splitIntoBatches } from './batchSplit.js';
import { systemClock, type Clock, type TimerHandle } from '../call/clock.js';
import type { RequestOf, ResponseOf, StreamMethodName, UnaryMethodName } from '../call/methods.js';
import {
  clientLayer,
  onlyMessage,
  type CallNext,
  type ClientCall,
  type ClientMiddleware,
  type UnaryNext,
} from '../call/compose.js';
import { PendingCall } from './pendingCall.js';
import type { Consistency } from '../call/consistency.js';
import type { TransportCounters, TransportStats } from '../call/stats.js';
import { atTickEnd } from '../call/tick.js';
import type { CallSender, Transport, UnaryCallOptions } from '../call/transportInterface.js';

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
  /**
   * How many batch calls of one kind (method and model) may be out at once. A call made while
   * that many are out waits, unsent, for one to come back, and then goes in one batch with
   * every call made meanwhile (a full batch goes at once); its deadline and AbortSignal hold
   * while it waits. A call made when fewer are out goes at the end of its tick. Default: one
   * per endpoint. `Infinity`: calls never wait for each other, and each tick's calls go at its
   * end.
   *
   * A batch call holds back the calls of its kind for `maxHoldMs` at most: one out longer than
   * that (stuck on a partition that hangs, or on a slow server) no longer counts, and the calls
   * made meanwhile go without waiting for it.
   */
  readonly maxBatchesInFlight?: number;
  /**
   * How long a batch call out holds back the later calls of its kind, ms (see
   * `maxBatchesInFlight`): after that, they go without it, so a call held never waits longer
   * for room (a call whose own deadline is shorter may still fail while it waits). Default
   * 100, well above a healthy batch call's answer time (under load, a p99 of 8 to 37 ms was
   * measured), well below a deadline.
   */
  readonly maxHoldMs?: number;
}

/** Settings of {@link coalesceCalls}. */
export interface CoalescingSettings {
  /** The deadline of calls that set none, ms: the inner transport's `deadlineMs`. */
  readonly defaultDeadlineMs: number;
  /** The clock the callers' deadlines are kept on. Default: the system clock. */
  readonly clock?: Clock;
  /**
   * See {@link CoalescingOptions.maxBatchesInFlight}. Default: one per endpoint of the inner
   * transport ({@link coalesceCalls}), or 1 ({@link coalescingLayer}, which cannot see them).
   */
  readonly maxBatchesInFlight?: number;
  /** See {@link CoalescingOptions.maxHoldMs}. Default: {@link DEFAULT_MAX_HOLD_MS}. */
  readonly maxHoldMs?: number;
  /** Where the layer counts what it coalesced. Default: counters of its own. */
  readonly counters?: CoalescingCounters;
}

/** The default of {@link CoalescingOptions.maxHoldMs}. */
export const DEFAULT_MAX_HOLD_MS = 100;

/** The counters the coalescing layer keeps. */
export type CoalescingCounters = Pick<
  TransportCounters,
  'coalescedCalls' | 'coalescedBatches' | 'batchFallbacks' | 'heldCalls'
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
  // Checked now, so that a wrong setting fails `connect`, not the first call.
  checkedBatchesInFlight(settings.maxBatchesInFlight ?? 1);
  checkedHoldMs(settings.maxHoldMs ?? DEFAULT_MAX_HOLD_MS);
  // One per form of the rest of the chain: a transport's one-message calls all take the same.
  let coalescer: Coalescer | undefined;
  let unaryCoalescer: Coalescer | undefined;
  return clientLayer(
    (call, options, next) => {
      const form = formOf(call);
      // What the layer does not coalesce goes on as it came, with no wrapper of this layer's.
      if (form === undefined) return next(call, options);
      coalescer ??= new Coalescer(senderOver(next), settings);
      return answerOf(coalescer.call(form, call.request, options));
    },
    (call, options, next) => {
      const form = formOf(call);
      if (form === undefined) return next(call, options);
      unaryCoalescer ??= new Coalescer(unarySenderOver(next), settings);
      return unaryCoalescer.call(form, call.request, options);
    },
  );
}

async function* answerOf(answer: Promise<unknown>): AsyncGenerator<unknown> {
  yield await answer;
}

/** The rest of a chain as a {@link CallSender}. */
function senderOver(next: CallNext): CallSender {
  return unarySenderOver((call, options) => onlyMessage(call, next(call, options)));
}

/** The rest of a chain, in its one-message form, as a {@link CallSender}. */
function unarySenderOver(next: UnaryNext): CallSender {
  // The chain's messages are untyped; each answers the request's method (as onlyMessage's).
  return {
    unary: <M extends UnaryMethodName>(
      method: M,
      request: RequestOf<M>,
      options: UnaryCallOptions,
    ) => next({ method, request, shape: 'unary' }, options) as Promise<ResponseOf<M>>,
    collect: <M extends StreamMethodName>(
      method: M,
      request: RequestOf<M>,
      options: UnaryCallOptions,
    ) => next({ method, request, shape: 'collect' }, options) as Promise<ResponseOf<M>[]>,
  };
}

/**
 * Wraps `inner` so that calls made in the same tick are sent as batch calls (see
 * {@link CoalescingOptions.coalesce}). Closing the result closes `inner`.
 */
export function coalesceCalls(inner: Transport, settings: CoalescingSettings): Transport {
  const coalescer = new Coalescer(inner, {
    ...settings,
    maxBatchesInFlight:
      settings.maxBatchesInFlight ?? defaultBatchesInFlight(inner.endpoints.length),
  });
  return {
    endpoints: inner.endpoints,
    session: inner.session,

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

    bidiStream: (method, requests, options) => inner.bidiStream(method, requests, options),

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
        heldCalls: stats.heldCalls + own.heldCalls,
      };
    },

    close(): void {
      inner.close();
    },
  };
}

/**
 * The calls of one kind (method, marks and group: those that may share a batch): the calls
 * waiting to be sent, and the batch calls of the kind that are out.
 */
interface Kind<Req, Res> {
  readonly key: string;
  readonly form: BatchForm<Req, Res>;
  waiting: PendingCall<Req, Res>[];
  inFlight: number;
  /**
   * When each batch call out for less than `maxHoldMs` was sent, oldest first: those hold back
   * the kind's new calls.
   */
  readonly holding: Set<SentBatch>;
  /** While calls wait: fires when the oldest batch call out stops holding them back. */
  holdTimer: TimerHandle | undefined;
}

/** A batch call of a kind that is out. */
interface SentBatch {
  readonly sentAt: number;
}

class Coalescer {
  readonly counters: CoalescingCounters;
  readonly #inner: CallSender;
  readonly #clock: Clock;
  readonly #defaultDeadlineMs: number;
  readonly #maxBatchesInFlight: number;
  readonly #maxHoldMs: number;
  readonly #batchDeps: BatchCallDeps;
  readonly #caps = new BatchSizeCaps();
  /** Keyed by method, call marks and group; a kind is dropped once nothing of it is left. */
  readonly #kinds = new Map<string, Kind<unknown, unknown>>();
  #flushScheduled = false;

  constructor(inner: CallSender, settings: CoalescingSettings) {
    this.counters = settings.counters ?? {
      coalescedCalls: 0,
      coalescedBatches: 0,
      batchFallbacks: 0,
      heldCalls: 0,
    };
    this.#inner = inner;
    this.#clock = settings.clock ?? systemClock;
    this.#defaultDeadlineMs = settings.defaultDeadlineMs;
    this.#maxBatchesInFlight = checkedBatchesInFlight(settings.maxBatchesInFlight ?? 1);
    this.#maxHoldMs = checkedHoldMs(settings.maxHoldMs ?? DEFAULT_MAX_HOLD_MS);
    this.#batchDeps = {
      inner,
      clock: this.#clock,
      counters: this.counters,
      // Not counted in flight: they answer calls already sent once.
      send: (form, calls) => {
        for (const batch of this.#batchesOf(form, calls)) this.#send(form, batch, () => {});
      },
      caps: this.#caps,
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
    const key = `${form.method}/${options.idempotent}/${options.hedgeable}/${group}/${consistencyKey(options.consistency)}`;
    let kind = this.#kinds.get(key) as Kind<Req, Res> | undefined;
    if (kind === undefined) {
      kind = { key, form, waiting: [], inFlight: 0, holding: new Set(), holdTimer: undefined };
      this.#kinds.set(key, kind as Kind<unknown, unknown>);
    }
    const call = new PendingCall<Req, Res>(
      form.method,
      request,
      options,
      deadlineMs,
      this.#clock.now(),
    );
    // Aborted while waiting: rejected at once and left out of its batch.
    call.holdAbort(() => {});
    kind.waiting.push(call);
    this.#scheduleFlush();
    return call.answer;
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    atTickEnd(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    for (const kind of this.#kinds.values()) this.#sendWaiting(kind);
  }

  /**
   * Sends what waits of a kind, in batches within the form's bounds, oldest calls first. Full
   * batches always go; the last one waits while the kind has as many batch calls out as it
   * may, and goes, with whatever joined it, when one of them comes back or stops holding it.
   */
  #sendWaiting<Req, Res>(kind: Kind<Req, Res>): void {
    const { form } = kind;
    const waiting = kind.waiting;
    kind.waiting = [];
    this.#stopHoldTimer(kind);
    const batches = this.#batchesOf(form, waiting);
    for (const [i, batch] of batches.entries()) {
      const last = i === batches.length - 1;
      if (last && this.#holdingCount(kind) >= this.#maxBatchesInFlight) {
        for (const call of batch) if (call.waitForRoom(this.#clock)) this.counters.heldCalls++;
        kind.waiting = batch;
        this.#startHoldTimer(kind);
        return;
      }
      const sent: SentBatch = { sentAt: this.#clock.now() };
      kind.inFlight++;
      kind.holding.add(sent);
      this.#send(form, batch, () => this.#ended(kind, sent));
    }
    if (kind.inFlight === 0) this.#kinds.delete(kind.key);
  }

  /** The calls not answered yet, cut into batches within the bounds learned of their kind. */
  #batchesOf<Req, Res>(
    form: BatchForm<Req, Res>,
    calls: readonly PendingCall<Req, Res>[],
  ): PendingCall<Req, Res>[][] {
    const waiting = calls.filter((call) => !call.settled);
    const first = waiting[0];
    if (first === undefined) return [];
    const sizeOf = (call: PendingCall<Req, Res>) => form.sizeOf(call.request);
    return splitIntoBatches(waiting, sizeOf, this.#caps.boundsOf(form, first.request));
  }

  /** How many batch calls of `kind` hold back its new calls: those out for less than `maxHoldMs`. */
  #holdingCount<Req, Res>(kind: Kind<Req, Res>): number {
    const now = this.#clock.now();
    for (const sent of kind.holding) {
      if (now - sent.sentAt < this.#maxHoldMs) break;
      kind.holding.delete(sent);
    }
    return kind.holding.size;
  }

  /** Sends the calls that wait once the oldest batch call out stops holding them back. */
  #startHoldTimer<Req, Res>(kind: Kind<Req, Res>): void {
    const [oldest] = kind.holding;
    if (oldest === undefined || this.#maxHoldMs === Infinity) return;
    kind.holdTimer = this.#clock.setTimeout(
      () => {
        kind.holdTimer = undefined;
        this.#sendWaiting(kind);
      },
      oldest.sentAt + this.#maxHoldMs - this.#clock.now(),
    );
  }

  #stopHoldTimer<Req, Res>(kind: Kind<Req, Res>): void {
    if (kind.holdTimer === undefined) return;
    this.#clock.clearTimeout(kind.holdTimer);
    kind.holdTimer = undefined;
  }

  /** A batch call of `kind` is over: what waits for it goes at the end of the tick. */
  #ended<Req, Res>(kind: Kind<Req, Res>, sent: SentBatch): void {
    kind.inFlight--;
    kind.holding.delete(sent);
    if (kind.waiting.length > 0) this.#scheduleFlush();
    else if (kind.inFlight === 0) this.#kinds.delete(kind.key);
  }

  /**
   * Sends calls as one batch call, or as its single call when there is one; `ended` is told
   * when that call is over, before its callers are answered.
   */
  #send<Req, Res>(
    form: BatchForm<Req, Res>,
    calls: readonly PendingCall<Req, Res>[],
    ended: () => void,
  ): void {
    const waiting = calls.filter((call) => !call.settled);
    for (const call of waiting) call.stopWaiting();
    if (waiting.length > 1) {
      sendBatch(this.#batchDeps, form, waiting, ended);
      return;
    }
    const call = waiting[0];
    if (call === undefined) {
      ended();
      return;
    }
    // From here the inner transport watches the caller's signal and deadline, as for any call.
    call.releaseAbort();
    form
      // Object.assign, not a spread literal: compose.ts's withOptions says why.
      .sendOne(
        this.#inner,
        call.request,
        Object.assign({}, call.options, { deadlineMs: call.deadlineAt - this.#clock.now() }),
      )
      .then(
        (answer) => {
          ended();
          // A kind capped at single calls grows back only from these: its batches are sent
          // as single calls while the cap is 1.
          this.#caps.fitted(form, call.request, 1);
          call.resolve(answer);
        },
        (error: unknown) => {
          ended();
          call.reject(error);
        },
      );
  }
}

/**
 * The default of {@link CoalescingOptions.maxBatchesInFlight}: one per endpoint, since endpoints
 * are taken round robin.
 */
export function defaultBatchesInFlight(endpointCount: number): number {
  return Math.max(1, endpointCount);
}

/** The longest delay a Node timer takes; longer ones fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function checkedHoldMs(value: number): number {
  if (value === Infinity || (value >= 0 && value <= MAX_TIMER_MS)) return value;
  throw new RangeError(`maxHoldMs must be from 0 to ${MAX_TIMER_MS} (or Infinity), got ${value}`);
}

function checkedBatchesInFlight(value: number): number {
  if (value === Infinity || (Number.isInteger(value) && value >= 1)) return value;
  throw new RangeError(`maxBatchesInFlight must be an integer >= 1 (or Infinity), got ${value}`);
}

/** Calls share a batch only if they ask the same consistency (undefined: the transport's). */
function consistencyKey(consistency: Consistency | undefined): string {
  if (consistency === undefined || typeof consistency === 'string') return consistency ?? '';
  return `bounded:${consistency.maxStalenessMs}`;
}
