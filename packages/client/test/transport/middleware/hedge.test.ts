// The hedge layer's scheduling in full is covered through the whole chain in
// unary-policy.test.ts; these are the layer's own edges.

import { expect } from 'chai';
import { TokenBudget } from '../../../src/transport/policy/budget.js';
import { ManualClock, sleep } from '../../../src/transport/call/clock.js';
import { LatencyTracker } from '../../../src/transport/policy/latency.js';
import { AttemptLog } from '../../../src/transport/call/attempts.js';
import type { ClientCallOptions } from '../../../src/transport/call/compose.js';
import { CallCancellation } from '../../../src/transport/call/cancellation.js';
import { hedgeLayer } from '../../../src/transport/middleware/hedge.js';
import { resolveHedgePolicy } from '../../../src/transport/policy/policy.js';
import { newCounters } from '../../../src/transport/call/stats.js';
import { EACH, READ, describeForms, messages, run, scriptedNext } from './support.js';

function setup(endpointCount = 2) {
  const clock = new ManualClock();
  const latency = new LatencyTracker({ minSamples: 1 });
  const counters = newCounters();
  const layer = hedgeLayer({
    hedge: resolveHedgePolicy({ delayMs: 50 }, latency),
    budget: new TokenBudget(),
    latency,
    clock,
    counters,
    endpointCount,
  });
  return { clock, latency, counters, layer };
}

/** A `next` whose attempts answer only when the test says, each with its own value. */
function heldAnswers() {
  const releases: (() => void)[] = [];
  const next = scriptedNext((n, options: ClientCallOptions) => {
    // The endpoint layer would do this: the call waits on one endpoint per attempt.
    options.attempts?.enter(`e${n}:1`);
    return (async function* () {
      await new Promise<void>((resolve) => releases.push(resolve));
      yield `answer ${n}`;
    })();
  });
  return { next, release: (n: number) => releases[n]?.() };
}

describeForms('hedge layer', () => {
  it('races a slow read with a hedge after the delay; the first answer is the one', async () => {
    const { clock, counters, layer } = setup();
    const { next, release } = heldAnswers();
    const attempts = new AttemptLog();
    const outcome = run(layer, next, { ...READ, attempts, attempt: attempts.start('initial') });
    await clock.advance(50);
    expect(next.seen.map((options) => options.attempt?.kind)).to.deep.equal(['initial', 'hedge']);
    release(1);
    expect(await outcome).to.deep.equal(['answer 1']);
    expect(next.seen[0]?.cancellation?.aborted, 'the slow attempt is cancelled').to.equal(true);
    expect(counters).to.include({ hedges: 1, hedgesWon: 1 });
    expect(clock.pendingTimers).to.equal(0);
  });

  it('never hedges a server stream, nor a call not marked hedgeable', async () => {
    const { clock, layer } = setup();
    for (const [options, call] of [
      [READ, EACH],
      [{ idempotent: true, hedgeable: false }, undefined],
    ] as const) {
      const { next, release } = heldAnswers();
      const outcome = run(layer, next, options, call);
      await clock.advance(500);
      expect(next.seen).to.have.length(1);
      release(0);
      expect(await outcome).to.deep.equal(['answer 0']);
    }
  });

  it('sends a read alone when there is one endpoint: no hedge, no cancellation of its own', async () => {
    const { clock, latency, counters, layer } = setup(1);
    const { next, release } = heldAnswers();
    const cancellation = new CallCancellation();
    const attempts = new AttemptLog();
    const outcome = run(layer, next, {
      ...READ,
      cancellation,
      attempts,
      attempt: attempts.start('initial'),
    });
    await clock.advance(500);
    expect(next.seen).to.have.length(1);
    expect(next.seen[0]?.cancellation, "the call's own cancellation reaches the attempt").to.equal(
      cancellation,
    );
    release(0);
    expect(await outcome).to.deep.equal(['answer 0']);
    expect(counters).to.include({ hedges: 0, budgetRefusals: 0 });
    expect(latency.count('getCell'), 'its latency is still learnt').to.equal(1);
    expect(clock.pendingTimers).to.equal(0);
  });

  it("records each answered call's latency for the method", async () => {
    const { clock, latency, layer } = setup();
    const next = scriptedNext(() =>
      (async function* () {
        await sleep(clock, 8);
        yield* messages('ok');
      })(),
    );
    const outcome = run(layer, next, { idempotent: true, hedgeable: false });
    await clock.advance(8);
    await outcome;
    expect(latency.count('getCell')).to.equal(1);
    expect(latency.quantile('getCell', 1)).to.equal(8);
  });
});
