// The retry/hedge/deadline scheduling of the transport's chain of layers (chain.ts), driven by
// a ManualClock. These tests exercise the chain's decisions only: its terminal is a scripted
// attempt the test settles by hand instead of a gRPC call. The same chain over real gRPC is
// tested in transport.test.ts.

import { expect } from 'chai';
import { TokenBudget } from '../../src/transport/policy/budget.js';
import { watchAbort } from '../../src/transport/call/cancellation.js';
import { ManualClock } from '../../src/transport/call/clock.js';
import { EndpointSelector } from '../../src/transport/policy/endpoints.js';
import {
  CancelledError,
  ConflictError,
  DeadlineExceededError,
  NotFoundError,
  ShamelessError,
  UnavailableError,
} from '../../src/transport/call/errors.js';
import { LatencyTracker } from '../../src/transport/policy/latency.js';
import {
  resolveHedgePolicy,
  resolveRetryPolicy,
  type HedgeOptions,
  type RetryOptions,
} from '../../src/transport/policy/policy.js';
import { newCounters } from '../../src/transport/call/stats.js';
import { transportChain } from '../../src/transport/middleware/chain.js';
import type { AttemptKind } from '../../src/transport/call/attempts.js';
import { onlyMessage, type CallNext } from '../../src/transport/call/compose.js';
import type { UnaryCallOptions } from '../../src/transport/call/transportInterface.js';

type Ep = { readonly address: string };

/** What an attempt is told when it is started. */
interface AttemptContext<E> {
  readonly endpoint: E;
  readonly kind: AttemptKind;
  readonly index: number;
  /** Time left before the call's deadline, ms. */
  readonly remainingMs: number;
}

/** A chain terminal that starts each attempt with `start` and cancels it with the attempt. */
function scriptedTerminal(
  clock: ManualClock,
  start: (context: AttemptContext<Ep>) => { result: Promise<string>; cancel(): void },
): CallNext {
  return async function* attempt(_call, options) {
    const { endpoint, attempt: info, cancellation } = options;
    if (endpoint === undefined || info === undefined) throw new Error('no endpoint or attempt');
    const started = start({
      endpoint,
      kind: info.kind,
      index: info.index,
      remainingMs: (options.deadlineAt ?? Number.POSITIVE_INFINITY) - clock.now(),
    });
    const stopWatching = watchAbort(cancellation, () => started.cancel());
    try {
      yield await started.result;
    } finally {
      stopWatching();
    }
  };
}

interface Scripted {
  readonly context: AttemptContext<Ep>;
  readonly startedAt: number;
  cancelled: boolean;
  succeed(value: string): void;
  fail(error: unknown): void;
}

interface HarnessOptions {
  retry?: RetryOptions | false;
  hedge?: HedgeOptions | false;
  budget?: TokenBudget;
  latency?: LatencyTracker;
  deadlineMs?: number;
  /** Default: two endpoints. */
  endpoints?: readonly string[];
}

function harness(options: HarnessOptions = {}) {
  const clock = new ManualClock();
  // gRPC's example budget: small numbers keep the token arithmetic in these tests readable.
  const budget = options.budget ?? new TokenBudget(SMALL_BUDGET);
  const latency = options.latency ?? new LatencyTracker();
  const counters = newCounters();
  const attempts: Scripted[] = [];
  const chain = transportChain(
    {
      endpoints: new EndpointSelector(options.endpoints ?? ['a:1', 'b:1'], { clock }),
      clock,
      budget,
      // random() = 0.5: every backoff delay is half its ceiling (ceilings 20, 40, 80, ...).
      retry: resolveRetryPolicy(options.retry ?? { baseMs: 20, maxMs: 1000 }, () => 0.5),
      hedge: resolveHedgePolicy(options.hedge ?? { delayMs: 50 }, latency),
      latency,
      counters,
      defaultDeadlineMs: options.deadlineMs ?? 1000,
    },
    scriptedTerminal(clock, (context) => {
      let succeed!: (value: string) => void;
      let fail!: (error: unknown) => void;
      const result = new Promise<string>((resolve, reject) => {
        succeed = resolve;
        fail = reject;
      });
      const scripted: Scripted = {
        context,
        startedAt: clock.now(),
        cancelled: false,
        succeed,
        fail,
      };
      attempts.push(scripted);
      return {
        result,
        cancel: () => {
          scripted.cancelled = true;
          fail(new CancelledError('Cancelled on client'));
        },
      };
    }),
  );
  const call = (callOptions: UnaryCallOptions) => {
    const getCell = { method: 'getCell', request: {}, shape: 'unary' } as const;
    // As the transport runs it: by promises where the chain can (one endpoint: no hedge layer).
    const answer = chain.unary
      ? (chain.unary(getCell, callOptions) as Promise<string>)
      : onlyMessage<string>(getCell, chain(getCell, callOptions));
    const outcome = answer.then(
      (value) => ({ value, error: undefined }),
      (error: unknown) => ({ value: undefined, error: error as ShamelessError }),
    );
    let settled = false;
    void outcome.then(() => (settled = true));
    return { outcome, isSettled: () => settled };
  };
  const attempt = (i: number): Scripted => {
    const a = attempts[i];
    if (a === undefined) throw new Error(`no attempt ${i} (have ${attempts.length})`);
    return a;
  };
  return { clock, budget, latency, counters, attempts, attempt, call };
}

const READ = { idempotent: true, hedgeable: true } as const;
const WRITE = { idempotent: true, hedgeable: false } as const;
const UNSAFE = { idempotent: false, hedgeable: false } as const;

const SMALL_BUDGET = { maxTokens: 10, tokenRatio: 0.1 };

describe('unary pipeline policy (ManualClock, scripted attempts)', () => {
  describe('retries', () => {
    it('retries a transient failure after a full-jitter backoff, on another endpoint', async () => {
      const h = harness({ hedge: false });
      const { outcome } = h.call(WRITE);
      await h.clock.advance(0);
      expect(h.attempts).to.have.length(1);
      h.attempt(0).fail(new UnavailableError('down'));
      await h.clock.advance(9);
      expect(h.attempts).to.have.length(1); // backoff 0.5 * 20 = 10 ms
      await h.clock.advance(1);
      expect(h.attempts).to.have.length(2);
      expect(h.attempt(1).context.kind).to.equal('retry');
      expect(h.attempt(1).startedAt).to.equal(10);
      expect(h.attempt(1).context.endpoint.address).to.not.equal(
        h.attempt(0).context.endpoint.address,
      );
      // Each attempt gets the time left of the one overall deadline.
      expect(h.attempt(0).context.remainingMs).to.equal(1000);
      expect(h.attempt(1).context.remainingMs).to.equal(990);
      h.attempt(1).fail(new UnavailableError('down'));
      await h.clock.advance(20); // 0.5 * 40
      expect(h.attempt(2).startedAt).to.equal(30);
      h.attempt(2).succeed('ok');
      const { value, error } = await outcome;
      expect(error).to.equal(undefined);
      expect(value).to.equal('ok');
      expect(h.counters).to.include({ calls: 1, attempts: 3, retries: 2, failures: 0 });
      expect(h.budget.tokens).to.equal(8.1);
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('gives up after maxAttempts with the last transient error', async () => {
      const h = harness({ hedge: false, retry: { maxAttempts: 3, baseMs: 2 } });
      const { outcome } = h.call(WRITE);
      for (let i = 0; i < 3; i++) {
        await h.clock.advance(0);
        h.attempt(i).fail(new UnavailableError(`down ${i}`));
        await h.clock.advance(100);
      }
      const { error } = await outcome;
      expect(error).to.be.instanceOf(UnavailableError);
      expect(error?.message).to.equal('down 2');
      expect(h.attempts).to.have.length(3);
      expect(h.counters).to.include({ attempts: 3, retries: 2, failures: 1 });
    });

    it('does not retry a call that is not idempotent', async () => {
      const h = harness();
      const { outcome } = h.call(UNSAFE);
      await h.clock.advance(0);
      h.attempt(0).fail(new UnavailableError('down'));
      const { error } = await outcome;
      expect(error).to.be.instanceOf(UnavailableError);
      expect(h.attempts).to.have.length(1);
    });

    for (const error of [new NotFoundError('gone'), new ConflictError('stale ref_key')]) {
      it(`does not retry ${error.name}`, async () => {
        const h = harness();
        const { outcome } = h.call(WRITE);
        await h.clock.advance(0);
        h.attempt(0).fail(error);
        expect((await outcome).error).to.equal(error);
        expect(h.attempts).to.have.length(1);
        expect(h.budget.tokens).to.equal(10); // a definite answer costs nothing
      });
    }

    it('does not retry when the budget is at or below half', async () => {
      const budget = new TokenBudget(SMALL_BUDGET);
      for (let i = 0; i < 4; i++) budget.recordFailure(); // 6 tokens
      const h = harness({ budget, hedge: false });
      const { outcome } = h.call(WRITE);
      await h.clock.advance(0);
      h.attempt(0).fail(new UnavailableError('down')); // 5 tokens: not > 5
      const { error } = await outcome;
      expect(error).to.be.instanceOf(UnavailableError);
      expect(h.attempts).to.have.length(1);
      expect(h.counters.budgetRefusals).to.equal(1);
    });

    it('does not wait out a backoff that would pass the deadline', async () => {
      const h = harness({ hedge: false, retry: { baseMs: 400, maxMs: 400 }, deadlineMs: 150 });
      const { outcome } = h.call(WRITE);
      await h.clock.advance(0);
      h.attempt(0).fail(new UnavailableError('down'));
      await h.clock.advance(0);
      const { error } = await outcome;
      expect(error).to.be.instanceOf(UnavailableError);
      expect(h.clock.now()).to.equal(0);
    });
  });

  describe('deadline', () => {
    it('fails at the overall deadline and cancels the attempt in flight', async () => {
      const h = harness({ deadlineMs: 200, hedge: false });
      const call = h.call({ ...WRITE, deadlineMs: 300 });
      await h.clock.advance(299);
      expect(call.isSettled()).to.equal(false);
      await h.clock.advance(1);
      const { error } = await call.outcome;
      expect(error).to.be.instanceOf(DeadlineExceededError);
      expect(h.attempt(0).cancelled).to.equal(true);
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('covers retries: the deadline counts from the call, not the attempt', async () => {
      const h = harness({ deadlineMs: 100, hedge: false });
      const call = h.call(WRITE);
      await h.clock.advance(50);
      h.attempt(0).fail(new UnavailableError('down'));
      await h.clock.advance(10);
      expect(h.attempt(1).context.remainingMs).to.equal(40);
      await h.clock.advance(39);
      expect(call.isSettled()).to.equal(false);
      await h.clock.advance(1);
      const { error } = await call.outcome;
      expect(error).to.be.instanceOf(DeadlineExceededError);
      expect(error?.message).to.equal('getCell: deadline of 100 ms exceeded after 2 attempt(s)');
      expect(error?.cause).to.be.instanceOf(UnavailableError);
      expect(h.attempt(1).cancelled).to.equal(true);
    });
  });

  describe('hedging', () => {
    it('sends a hedge to the other endpoint after the delay; the first answer wins', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const { outcome } = h.call(READ);
      await h.clock.advance(49);
      expect(h.attempts).to.have.length(1);
      await h.clock.advance(1);
      expect(h.attempts).to.have.length(2);
      const [first, hedge] = [h.attempt(0), h.attempt(1)];
      expect(hedge.context.kind).to.equal('hedge');
      expect(hedge.startedAt).to.equal(50);
      expect(hedge.context.endpoint.address).to.not.equal(first.context.endpoint.address);
      hedge.succeed('from hedge');
      expect((await outcome).value).to.equal('from hedge');
      expect(first.cancelled).to.equal(true);
      expect(h.counters).to.include({ attempts: 2, hedges: 1, hedgesWon: 1, retries: 0 });
      expect(h.budget.tokens).to.equal(9.1); // -1 for sending the hedge, +0.1 for its success
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('cancels the hedge when the first attempt answers first', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const { outcome } = h.call(READ);
      await h.clock.advance(60);
      h.attempt(0).succeed('first');
      expect((await outcome).value).to.equal('first');
      expect(h.attempt(1).cancelled).to.equal(true);
      expect(h.counters).to.include({ hedges: 1, hedgesWon: 0 });
    });

    it('sends no hedge when the answer comes before the delay', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const { outcome } = h.call(READ);
      await h.clock.advance(10);
      h.attempt(0).succeed('fast');
      await h.clock.advance(100);
      expect((await outcome).value).to.equal('fast');
      expect(h.attempts).to.have.length(1);
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('does not hedge calls not marked hedgeable', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      h.call(WRITE);
      await h.clock.advance(500);
      expect(h.attempts).to.have.length(1);
    });

    it('sends up to maxHedges hedges, one delay apart, each to another endpoint', async () => {
      const h = harness({ hedge: { delayMs: 50, maxHedges: 2 }, endpoints: ['a:1', 'b:1', 'c:1'] });
      const { outcome } = h.call(READ);
      await h.clock.advance(500);
      expect(h.attempts.map((a) => a.startedAt)).to.deep.equal([0, 50, 100]);
      expect(new Set(h.attempts.map((a) => a.context.endpoint.address)).size).to.equal(3);
      h.attempt(2).succeed('third');
      expect((await outcome).value).to.equal('third');
      expect(h.attempt(0).cancelled && h.attempt(1).cancelled).to.equal(true);
    });

    it("uses the method's observed p95 as the delay when none is configured", async () => {
      const latency = new LatencyTracker({ minSamples: 20 });
      for (let i = 1; i <= 20; i++) latency.record('getCell', i * 2); // p95 = 38
      const h = harness({ hedge: {}, latency });
      h.call(READ);
      await h.clock.advance(37);
      expect(h.attempts).to.have.length(1);
      await h.clock.advance(1);
      expect(h.attempts).to.have.length(2);
    });

    it('learns the latency from successful attempts', async () => {
      const latency = new LatencyTracker({ minSamples: 3 });
      const h = harness({ hedge: { fallbackDelayMs: 500 }, latency });
      for (let i = 0; i < 3; i++) {
        const { outcome } = h.call(READ);
        await h.clock.advance(8);
        h.attempt(i).succeed('ok');
        await outcome;
      }
      expect(latency.p95('getCell')).to.equal(8);
    });

    it('has no hedge layer with one endpoint: nothing times its calls for a delay', async () => {
      const latency = new LatencyTracker({ minSamples: 1 });
      const single = harness({ hedge: { fallbackDelayMs: 500 }, latency, endpoints: ['a:1'] });
      const { outcome } = single.call(READ);
      await single.clock.advance(8);
      single.attempt(0).succeed('ok');
      expect((await outcome).value).to.equal('ok');
      expect(latency.p95('getCell')).to.equal(undefined);
    });

    it('a non-retryable error from any attempt fails the call and cancels the rest', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const { outcome } = h.call(READ);
      await h.clock.advance(50);
      h.attempt(1).fail(new NotFoundError('no such cell'));
      expect((await outcome).error).to.be.instanceOf(NotFoundError);
      expect(h.attempt(0).cancelled).to.equal(true);
    });

    it('a transient failure of one attempt waits for the other', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const call = h.call(READ);
      await h.clock.advance(50);
      h.attempt(0).fail(new UnavailableError('down'));
      await h.clock.advance(100);
      expect(call.isSettled()).to.equal(false);
      expect(h.attempts).to.have.length(2); // no retry while the hedge is out
      h.attempt(1).succeed('hedge');
      expect((await call.outcome).value).to.equal('hedge');
    });

    it('retries (and hedges the retry) when every attempt failed transiently', async () => {
      const h = harness({ hedge: { delayMs: 50, maxHedges: 2 } });
      const call = h.call(READ);
      await h.clock.advance(50);
      h.attempt(0).fail(new UnavailableError('down'));
      h.attempt(1).fail(new UnavailableError('down'));
      await h.clock.advance(10); // backoff 10
      expect(h.attempt(2).context.kind).to.equal('retry');
      await h.clock.advance(50);
      expect(h.attempt(3).context.kind).to.equal('hedge');
      h.attempt(3).succeed('ok');
      expect((await call.outcome).value).to.equal('ok');
      expect(h.counters).to.include({ attempts: 4, retries: 1, hedges: 2, hedgesWon: 1 });
    });

    it('sends no hedge when every endpoint already has an attempt of the call', async () => {
      const single = harness({ hedge: { delayMs: 50 }, endpoints: ['a:1'] });
      const first = single.call(READ);
      await single.clock.advance(500);
      expect(single.attempts).to.have.length(1);
      single.attempt(0).succeed('alone');
      expect((await first.outcome).value).to.equal('alone');

      const pair = harness({ hedge: { delayMs: 50, maxHedges: 3 } });
      const second = pair.call(READ);
      await pair.clock.advance(500);
      expect(pair.attempts).to.have.length(2);
      pair.attempt(1).succeed('hedge');
      expect((await second.outcome).value).to.equal('hedge');
    });

    it('sends no hedge when the budget is at or below half', async () => {
      const budget = new TokenBudget(SMALL_BUDGET);
      for (let i = 0; i < 5; i++) budget.recordFailure(); // 5 tokens
      const h = harness({ budget, hedge: { delayMs: 50 } });
      const { outcome } = h.call(READ);
      await h.clock.advance(200);
      expect(h.attempts).to.have.length(1);
      expect(h.counters.budgetRefusals).to.equal(1);
      h.attempt(0).succeed('slow but fine');
      expect((await outcome).value).to.equal('slow but fine');
    });

    it('refuses a hedgeable call that is not idempotent', async () => {
      const h = harness();
      const { error } = await h.call({ idempotent: false, hedgeable: true }).outcome;
      expect(error).to.be.instanceOf(TypeError);
      expect(h.attempts).to.have.length(0);
    });
  });

  describe('cancellation', () => {
    it('an AbortSignal cancels every attempt and pending timer', async () => {
      const h = harness({ hedge: { delayMs: 50 } });
      const controller = new AbortController();
      const { outcome } = h.call({ ...READ, signal: controller.signal });
      await h.clock.advance(60);
      controller.abort();
      const { error } = await outcome;
      expect(error).to.be.instanceOf(CancelledError);
      expect(h.attempts.every((a) => a.cancelled)).to.equal(true);
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('an already aborted signal sends nothing', async () => {
      const h = harness();
      const controller = new AbortController();
      controller.abort();
      const { error } = await h.call({ ...READ, signal: controller.signal }).outcome;
      expect(error).to.be.instanceOf(CancelledError);
      expect(h.attempts).to.have.length(0);
    });

    it('aborting during a backoff sends no retry', async () => {
      const h = harness({ hedge: false });
      const controller = new AbortController();
      const { outcome } = h.call({ ...WRITE, signal: controller.signal });
      await h.clock.advance(0);
      h.attempt(0).fail(new UnavailableError('down'));
      await h.clock.advance(5);
      controller.abort();
      await h.clock.advance(100);
      expect((await outcome).error).to.be.instanceOf(CancelledError);
      expect(h.attempts).to.have.length(1);
    });
  });
});
