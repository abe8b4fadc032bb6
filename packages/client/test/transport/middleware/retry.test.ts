import { expect } from 'chai';
import { Metadata } from '@grpc/grpc-js';
import { TokenBudget } from '../../../src/transport/policy/budget.js';
import { ManualClock } from '../../../src/transport/call/clock.js';
import {
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
} from '../../../src/transport/call/errors.js';
import { retryLayer, retryPushbackMs } from '../../../src/transport/middleware/retry.js';
import { resolveRetryPolicy } from '../../../src/transport/policy/policy.js';
import { newCounters } from '../../../src/transport/call/stats.js';
import {
  EACH,
  READ,
  failing,
  failure,
  messages,
  run,
  scriptedNext,
  describeForms,
} from './support.js';

function setup(budget = new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 })) {
  const clock = new ManualClock();
  const counters = newCounters();
  // random() = 0.5: each backoff is half its ceiling (10, 20, 40, ... ms).
  const retry = resolveRetryPolicy({ baseMs: 20, maxMs: 1000 }, () => 0.5);
  return { clock, counters, budget, layer: retryLayer({ retry, budget, clock, counters }) };
}

function pushedBack(ms: string): ResourceExhaustedError {
  const metadata = new Metadata();
  metadata.set('grpc-retry-pushback-ms', ms);
  return new ResourceExhaustedError('server is over its in-flight limit', { metadata });
}

describeForms('retry layer', () => {
  it('sends a transient failure again after the backoff, as a retry of the same call', async () => {
    const { clock, counters, layer } = setup();
    const next = scriptedNext((n) =>
      n === 0 ? failing(new UnavailableError('down')) : messages('ok'),
    );
    const outcome = run(layer, next);
    await clock.advance(9);
    expect(next.seen).to.have.length(1);
    await clock.advance(1);
    expect(await outcome).to.deep.equal(['ok']);
    expect(next.seen.map((options) => options.attempt?.kind)).to.deep.equal(['initial', 'retry']);
    expect(next.seen.map((options) => options.attempt?.index)).to.deep.equal([0, 1]);
    expect(next.seen[0]?.attempts).to.equal(next.seen[1]?.attempts);
    expect(counters.retries).to.equal(1);
  });

  it("waits the server's grpc-retry-pushback-ms instead of the backoff", async () => {
    const { clock, layer } = setup();
    const next = scriptedNext((n) => (n === 0 ? failing(pushedBack('300')) : messages('ok')));
    const outcome = run(layer, next);
    await clock.advance(299);
    expect(next.seen).to.have.length(1);
    await clock.advance(1);
    expect(await outcome).to.deep.equal(['ok']);
  });

  it('reads the pushback hint as decimal milliseconds; a negative or malformed one as "no retry"', () => {
    expect(retryPushbackMs(pushedBack('250'))).to.equal(250);
    expect(retryPushbackMs(pushedBack(' 0 '))).to.equal(0);
    for (const hint of ['-1', 'soon', '1.5', '', '1e3']) {
      expect(retryPushbackMs(pushedBack(hint)), JSON.stringify(hint)).to.equal('no retry');
    }
    expect(retryPushbackMs(new ResourceExhaustedError('no hint'))).to.equal(undefined);
  });

  it('does not retry when the server pushes back with a negative or malformed hint (gRFC A6)', async () => {
    for (const hint of ['-1', 'soon']) {
      const { clock, counters, budget, layer } = setup();
      const next = scriptedNext((n) => (n === 0 ? failing(pushedBack(hint)) : messages('ok')));
      const outcome = failure(run(layer, next));
      await clock.advance(5000);
      expect(await outcome, hint).to.be.instanceOf(ResourceExhaustedError);
      expect(next.seen, hint).to.have.length(1);
      expect(counters).to.include({ retries: 0, budgetRefusals: 0 });
      expect(budget.tokens).to.equal(10);
    }
  });

  it('does not retry a definite answer, nor a stream that already handed out a message', async () => {
    const { layer } = setup();
    const notFound = scriptedNext(() => failing(new NotFoundError('gone')));
    expect(await failure(run(layer, notFound))).to.be.instanceOf(NotFoundError);
    expect(notFound.seen).to.have.length(1);
    const cutOff = scriptedNext(() => failing(new UnavailableError('lost'), 'first'));
    expect(await failure(run(layer, cutOff, READ, EACH))).to.be.instanceOf(UnavailableError);
    expect(cutOff.seen).to.have.length(1);
  });

  it('asks the budget before a retry, but not for a server that is restarting', async () => {
    const budget = new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 });
    for (let i = 0; i < 5; i++) budget.recordFailure(); // 5 tokens: no retries
    const { clock, counters, layer } = setup(budget);
    const refused = scriptedNext(() => failing(new UnavailableError('down')));
    expect(await failure(run(layer, refused))).to.be.instanceOf(UnavailableError);
    expect(counters.budgetRefusals).to.equal(1);

    const restarting = scriptedNext((n, options) => {
      if (n > 0) return messages('back');
      if (options.attempt !== undefined) options.attempt.unreachable = true;
      return failing(new UnavailableError('no connection'));
    });
    const outcome = run(layer, restarting);
    await clock.advance(10);
    expect(await outcome).to.deep.equal(['back']);
    expect(counters.budgetRefusals).to.equal(1);
  });

  it('refuses a hedgeable call that is not idempotent', async () => {
    const { layer } = setup();
    const next = scriptedNext(() => messages(1));
    const error = await failure(run(layer, next, { idempotent: false, hedgeable: true }));
    expect(error).to.be.instanceOf(TypeError);
    expect(next.seen).to.have.length(0);
  });
});
