// Hedging: a call marked `hedgeable` (a read) whose attempt is slow gets another attempt, to an
// endpoint it is not waiting on, after the hedge delay (fixed, or the method's observed p95);
// up to `maxHedges` per call, each paid for from the token budget. The first answer wins and
// the others are cancelled. A definite error from any attempt ends the round; a transient one
// waits for the others, and only when none is left does the round fail (for the retry layer
// above to retry). This layer also feeds the latency tracker the hedge delay is learnt from.

import type { TokenBudget } from '../policy/budget.js';
import type { Clock, TimerHandle } from '../call/clock.js';
import { CancelledError, toShamelessError } from '../call/errors.js';
import type { LatencyTracker } from '../policy/latency.js';
import type { HedgePolicy } from '../policy/policy.js';
import type { TransportCounters } from '../call/stats.js';
import { AttemptLog, type AttemptInfo } from '../call/attempts.js';
import {
  type ClientCall,
  type ClientCallOptions,
  type ClientMiddleware,
  clientLayer,
  withOptions,
} from '../call/compose.js';
import { linkedCancellation, type LinkedCancellation } from '../call/cancellation.js';

/** What the hedge layer needs. */
export interface HedgeSettings {
  /** Null: no hedging. */
  readonly hedge: HedgePolicy | null;
  /** Each hedge spends a token (`trySpendHedge`), and is not sent when it cannot. */
  readonly budget: Pick<TokenBudget, 'trySpendHedge'>;
  readonly latency: LatencyTracker;
  readonly clock: Clock;
  readonly counters: Pick<TransportCounters, 'hedges' | 'hedgesWon' | 'budgetRefusals'>;
  /** How many endpoints there are: a hedge only goes to one the call is not waiting on. */
  readonly endpointCount: number;
}

export function hedgeLayer(settings: HedgeSettings): ClientMiddleware {
  // With one endpoint a hedge could only go to the server the call already waits on, which
  // #roomForHedge never allows: such a call is not raced at all, and pays for no round.
  const policyFor = (call: ClientCall, options: ClientCallOptions) =>
    options.hedgeable && answersOnce(call) && settings.endpointCount > 1 ? settings.hedge : null;
  return clientLayer(
    async function* hedgeSlowAttempts(call, options, next) {
      const policy = policyFor(call, options);
      if (policy === null) {
        yield* timed(settings, call, next(call, options));
        return;
      }
      const round = new HedgedRound(settings, policy, call, options, (attemptOptions) => {
        const messages = next(call, attemptOptions)[Symbol.asyncIterator]();
        return messages.next().then(({ done, value }) => ({ done, value, rest: messages }));
      });
      try {
        const { first, rest } = await round.run();
        yield first;
        for (let result = await rest!.next(); result.done !== true; result = await rest!.next()) {
          yield result.value;
        }
      } finally {
        round.end();
        round.release();
      }
    },
    async (call, options, next) => {
      const policy = policyFor(call, options);
      if (policy === null) {
        const startedAt = settings.clock.now();
        const answer = await next(call, options);
        settings.latency.record(call.method, settings.clock.now() - startedAt);
        return answer;
      }
      const round = new HedgedRound(settings, policy, call, options, (attemptOptions) =>
        next(call, attemptOptions).then((value) => ({ done: false, value })),
      );
      try {
        return (await round.run()).first;
      } finally {
        round.end();
        round.release();
      }
    },
  );
}

/** Whether the call's answer comes as one message (unary, collect): one a hedge can race. */
function answersOnce(call: ClientCall): boolean {
  return call.shape === 'unary' || call.shape === 'collect';
}

/** Yields `messages`, recording the time to the first one as the method's latency. */
async function* timed(
  { clock, latency }: HedgeSettings,
  call: ClientCall,
  messages: AsyncIterable<unknown>,
): AsyncGenerator<unknown> {
  const startedAt = clock.now();
  let first = true;
  for await (const message of messages) {
    if (first && answersOnce(call)) latency.record(call.method, clock.now() - startedAt);
    first = false;
    yield message;
  }
}

/**
 * An attempt's first message (or its end, `done`), and, for the generator form, the rest of
 * its messages.
 */
interface FirstAnswer {
  readonly done?: boolean | undefined;
  readonly value: unknown;
  readonly rest?: AsyncIterator<unknown>;
}

/** Sends one attempt of the round with these options. */
type SendAttempt = (options: ClientCallOptions) => Promise<FirstAnswer>;

interface Racer {
  readonly attempt: AttemptInfo;
  readonly link: LinkedCancellation;
  readonly startedAt: number;
}

/** One round of attempts racing each other: the first attempt and its hedges. */
class HedgedRound {
  readonly #settings: HedgeSettings;
  readonly #policy: HedgePolicy;
  readonly #call: ClientCall;
  readonly #options: ClientCallOptions;
  readonly #send: SendAttempt;
  readonly #attempts: AttemptLog;
  readonly #racing = new Set<Racer>();
  readonly #links: LinkedCancellation[] = [];
  #timer: TimerHandle | undefined;
  #settled = false;
  #resolve: (won: { first: unknown; rest: AsyncIterator<unknown> | undefined }) => void = () => {};
  #reject: (error: unknown) => void = () => {};

  constructor(
    settings: HedgeSettings,
    policy: HedgePolicy,
    call: ClientCall,
    options: ClientCallOptions,
    send: SendAttempt,
  ) {
    this.#settings = settings;
    this.#policy = policy;
    this.#call = call;
    this.#options = options;
    this.#send = send;
    this.#attempts = options.attempts ?? new AttemptLog();
  }

  /** Resolves with the first message of the first attempt to answer (and the rest of them). */
  run(): Promise<{ first: unknown; rest: AsyncIterator<unknown> | undefined }> {
    return new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      this.#launch(this.#options.attempt ?? this.#attempts.start('initial'));
    });
  }

  /** Ends the race: cancels the hedge timer and every attempt still out. */
  end(): void {
    this.#settled = true;
    this.#clearTimer();
    for (const racer of this.#racing) racer.link.cancellation.abort(lostRace());
    this.#racing.clear();
  }

  /** Stops the attempts' cancellations following the call's, once the call is over. */
  release(): void {
    for (const link of this.#links) link.unlink();
  }

  #launch(attempt: AttemptInfo): void {
    const link = linkedCancellation(this.#options.cancellation);
    this.#links.push(link);
    const racer: Racer = { attempt, link, startedAt: this.#settings.clock.now() };
    this.#racing.add(racer);
    this.#send(withOptions(this.#options, { cancellation: link.cancellation, attempt })).then(
      (answer) => this.#onAnswer(racer, answer),
      (error: unknown) => this.#onError(racer, error),
    );
    if (attempt.kind !== 'hedge') this.#arm();
  }

  #onAnswer(racer: Racer, result: FirstAnswer): void {
    if (!this.#racing.delete(racer) || this.#settled) return;
    const { clock, latency, counters } = this.#settings;
    latency.record(this.#call.method, clock.now() - racer.startedAt);
    if (racer.attempt.kind === 'hedge') counters.hedgesWon++;
    this.end();
    if (result.done === true) {
      this.#reject(new TypeError(`${this.#call.method}: the call ended without an answer`));
      return;
    }
    this.#resolve({ first: result.value, rest: result.rest });
  }

  #onError(racer: Racer, error: unknown): void {
    if (!this.#racing.delete(racer) || this.#settled) return;
    this.#attempts.lastError = error;
    // Another attempt may still answer a transient failure.
    if (toShamelessError(error).retryable && this.#racing.size > 0) return;
    this.end();
    this.#reject(error);
  }

  #arm(): void {
    const { clock } = this.#settings;
    if (this.#settled || this.#timer !== undefined || !this.#roomForHedge()) return;
    const delay = this.#policy.delayFor(this.#call.method);
    if (clock.now() + delay >= (this.#options.deadlineAt ?? Number.POSITIVE_INFINITY)) return;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      this.#sendHedge();
    }, delay);
  }

  /**
   * Whether a hedge may still go: some left, and an endpoint the call is not waiting on (sent
   * to a server the call already waits on, a hedge only doubles its work: measured under load,
   * such hedges never won).
   */
  #roomForHedge(): boolean {
    if (this.#attempts.hedges >= this.#policy.maxHedges) return false;
    return this.#attempts.waitingOn().size < this.#settings.endpointCount;
  }

  #sendHedge(): void {
    if (this.#settled || this.#racing.size === 0 || !this.#roomForHedge()) return;
    const { budget, counters } = this.#settings;
    if (!budget.trySpendHedge()) {
      counters.budgetRefusals++;
      return;
    }
    this.#attempts.hedges++;
    counters.hedges++;
    this.#launch(this.#attempts.start('hedge'));
    this.#arm();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#settings.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function lostRace(): CancelledError {
  return new CancelledError('another attempt of the call answered first');
}
