// One batch call in flight for several callers: it answers each caller from its own item of
// the answer, keeps each caller's deadline and AbortSignal its own (the batch goes on for the
// others, and is cancelled once nobody waits for it; its retries and hedges carry only the
// callers still waiting), and decides what a failure of the whole call means for each caller.

import type { BatchForm, BatchRequests, ItemOutcome } from './batchForms.js';
import { sizeRefusalOf } from './batchRefusal.js';
import type { BatchSizeCaps } from './batchSizeCaps.js';
import type { Clock, TimerHandle } from '../call/clock.js';
import {
  DeadlineExceededError,
  isMessageTooLarge,
  toShamelessError,
  type ShamelessError,
} from '../call/errors.js';
import type { PendingCall } from './pendingCall.js';
import type { TransportCounters } from '../call/stats.js';
import type { CallSender } from '../call/transportInterface.js';

/**
 * Whole-call failures after which each call is sent again on its own. The server checks every
 * item of a batch before it writes anything, so INVALID_ARGUMENT and NOT_FOUND (`writes[3].uuid`,
 * `keys[0].cell`, `queries[2]: ...`) mean nothing was written, and that one item (or the model
 * they share) is wrong: sent alone, each call gets exactly the answer it would have had without
 * coalescing. UNIMPLEMENTED: a server that predates the batch method still serves the single
 * ones.
 */
const RESENT_ONE_BY_ONE: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'UNIMPLEMENTED',
]);

/** What a batch call needs from the coalescing layer. */
export interface BatchCallDeps {
  readonly inner: CallSender;
  readonly clock: Clock;
  readonly counters: Pick<
    TransportCounters,
    'coalescedCalls' | 'coalescedBatches' | 'batchFallbacks'
  >;
  /**
   * Sends calls again after their batch failed as a whole, in batches within the kind's bounds
   * as now learned (alone where a batch would hold one).
   */
  send<Req, Res>(form: BatchForm<Req, Res>, calls: readonly PendingCall<Req, Res>[]): void;
  /** Told of refusals of a batch's size, and of batches that fitted. */
  readonly caps: BatchSizeCaps;
}

/**
 * Sends `calls` (two or more, none settled) as one batch call of `form`. `ended` is told when
 * the call is over (answered, failed or cancelled), before any caller is answered from it.
 */
export function sendBatch<Req, Res>(
  deps: BatchCallDeps,
  form: BatchForm<Req, Res>,
  calls: readonly PendingCall<Req, Res>[],
  ended: () => void = () => {},
): void {
  new BatchCall(deps, form, calls, ended).start();
}

class BatchCall<Req, Res> {
  readonly #deps: BatchCallDeps;
  readonly #form: BatchForm<Req, Res>;
  readonly #calls: readonly PendingCall<Req, Res>[];
  /** The calls with a deadline, earliest first; `#nextDue` is the first one not yet due. */
  readonly #byDeadline: PendingCall<Req, Res>[];
  #nextDue = 0;
  #waiting: number;
  #deadlineTimer: TimerHandle | undefined;
  /**
   * The calls each attempt carried, by how many. Calls only ever leave a batch, so a count
   * names the calls of the attempts that carried that many, and an answer's count of results
   * the calls it answers.
   */
  readonly #carried = new Map<number, readonly PendingCall<Req, Res>[]>();
  #ended = false;
  readonly #onEnd: () => void;
  readonly #controller = new AbortController();

  constructor(
    deps: BatchCallDeps,
    form: BatchForm<Req, Res>,
    calls: readonly PendingCall<Req, Res>[],
    onEnd: () => void,
  ) {
    this.#deps = deps;
    this.#onEnd = onEnd;
    this.#form = form;
    this.#calls = calls;
    this.#waiting = calls.length;
    this.#byDeadline = calls
      .filter((call) => Number.isFinite(call.deadlineAt))
      .sort((a, b) => a.deadlineAt - b.deadlineAt);
  }

  start(): void {
    const { inner, clock, counters } = this.#deps;
    counters.coalescedBatches++;
    counters.coalescedCalls += this.#calls.length;
    for (const call of this.#calls) call.holdAbort(() => this.#left());
    this.#watchDeadlines();
    // The batch lives as long as its last caller waits. Its calls share their marks: the queue
    // they came from was keyed by them.
    const deadlineAt = this.#calls.reduce((latest, call) => Math.max(latest, call.deadlineAt), 0);
    const { idempotent, hedgeable, consistency } = this.#calls[0]!.options;
    const requests: BatchRequests<Req> = {
      waiting: () => this.#stillWaiting()?.map((call) => call.request),
      answered: (count) => this.#answeredBy(count).map((call) => call.request),
    };
    this.#form
      .sendBatch(inner, requests, {
        idempotent,
        hedgeable,
        consistency,
        deadlineMs: deadlineAt - clock.now(),
        signal: this.#controller.signal,
      })
      .then(
        (outcomes) => {
          this.#end();
          const answered = this.#answeredBy(outcomes.length);
          this.#deps.caps.fitted(this.#form, answered[0]!.request, answered.length);
          this.#answer(answered, outcomes);
        },
        (error: unknown) => {
          this.#end();
          this.#fail(toShamelessError(error));
        },
      );
  }

  /** The calls not answered yet, noted as an attempt's; undefined when none is left. */
  #stillWaiting(): readonly PendingCall<Req, Res>[] | undefined {
    const waiting = this.#calls.filter((call) => !call.settled);
    if (waiting.length === 0) return undefined;
    this.#carried.set(waiting.length, waiting);
    return waiting;
  }

  /** The calls an answer of `count` results answers. */
  #answeredBy(count: number): readonly PendingCall<Req, Res>[] {
    return this.#carried.get(count) ?? this.#calls;
  }

  #answer(answered: readonly PendingCall<Req, Res>[], outcomes: readonly ItemOutcome<Res>[]): void {
    for (const [i, call] of answered.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(outcome.error);
    }
  }

  #fail(error: ShamelessError): void {
    const { clock, counters } = this.#deps;
    const now = clock.now();
    const left: PendingCall<Req, Res>[] = [];
    for (const call of this.#calls) {
      if (call.settled) continue;
      if (call.deadlineAt <= now) call.expire(this.#calls.length, error);
      else left.push(call);
    }
    if (left.length === 0) return;
    const { caps } = this.#deps;
    const request = this.#calls[0]!.request;
    if (isMessageTooLarge(error.code, error.details)) {
      // The answer (or the request) was over a message size limit: the kind is capped at half
      // this batch, which goes again in halves, halved again if need be, down to single calls,
      // which the server streams or sends alone.
      counters.batchFallbacks++;
      caps.tooLarge(this.#form, request, this.#calls.length);
      this.#deps.send(this.#form, left);
      return;
    }
    const refusal = sizeRefusalOf(error, this.#form.itemsField);
    if (refusal !== undefined) {
      // The server takes fewer items in a batch (nothing was written): within the limit it
      // states, else (or if that limit could not have refused this batch) in halves as above,
      // and so are the kind's next batches.
      counters.batchFallbacks++;
      const { maxItems } = refusal;
      if (maxItems !== undefined && maxItems < this.#calls.length) {
        caps.serverLimit(this.#form, maxItems);
      } else {
        caps.tooLarge(this.#form, request, this.#calls.length);
      }
      this.#deps.send(this.#form, left);
      return;
    }
    if (RESENT_ONE_BY_ONE.has(error.codeName) || this.#givenUpAfterRetries(error)) {
      counters.batchFallbacks++;
      for (const call of left) this.#deps.send(this.#form, [call]);
      return;
    }
    for (const call of left) {
      if (error instanceof DeadlineExceededError) call.expire(this.#calls.length, error);
      else call.reject(error);
    }
  }

  /**
   * Whether the transport gave up retrying the batch after a transient failure. That failure
   * may belong to some of its items only: a server that cannot reach one partition fails the
   * whole call with UNAVAILABLE, after it may have written the items of the others. Sent alone
   * (each write with its requestId, so a stored one is answered as stored), each call gets its
   * own outcome, as it would have without coalescing. Calls not safe to repeat are not sent
   * again: their single calls would not have been retried either.
   */
  #givenUpAfterRetries(error: ShamelessError): boolean {
    return error.retryable && this.#calls[0]!.options.idempotent;
  }

  /** A caller stopped waiting (aborted, or its deadline passed). */
  #left(): void {
    this.#waiting--;
    // Nobody is left to answer: the call is cancelled, as a single call would have been.
    if (this.#waiting === 0 && !this.#ended) this.#controller.abort();
  }

  /** Fails each caller when its own deadline passes, with one timer at a time. */
  #watchDeadlines(): void {
    while (this.#byDeadline[this.#nextDue]?.settled) this.#nextDue++;
    const next = this.#byDeadline[this.#nextDue];
    if (next === undefined || this.#ended) return;
    const { clock } = this.#deps;
    this.#deadlineTimer = clock.setTimeout(() => {
      this.#deadlineTimer = undefined;
      // A timer may fire a little before the clock reads its due time: it is due anyway.
      const now = Math.max(clock.now(), next.deadlineAt);
      let call: PendingCall<Req, Res> | undefined;
      while ((call = this.#byDeadline[this.#nextDue]) !== undefined && call.deadlineAt <= now) {
        this.#nextDue++;
        if (call.expire(this.#calls.length)) this.#left();
      }
      this.#watchDeadlines();
    }, next.deadlineAt - clock.now());
  }

  /** The batch call is over: no more deadline timers, and callers' signals are let go. */
  #end(): void {
    this.#ended = true;
    if (this.#deadlineTimer !== undefined) this.#deps.clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    for (const call of this.#calls) call.releaseAbort();
    this.#onEnd();
  }
}
