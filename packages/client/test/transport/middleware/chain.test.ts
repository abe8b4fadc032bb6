// Which form the transport's chain runs a one-message call by: promises when every layer has
// that form (hedging included), generators when an interceptor has none.
import { expect } from 'chai';
import { TokenBudget } from '../../../src/transport/policy/budget.js';
import { ManualClock } from '../../../src/transport/call/clock.js';
import { EndpointSelector } from '../../../src/transport/policy/endpoints.js';
import { LatencyTracker } from '../../../src/transport/policy/latency.js';
import { resolveHedgePolicy, resolveRetryPolicy } from '../../../src/transport/policy/policy.js';
import { newCounters } from '../../../src/transport/call/stats.js';
import { type ChainParts, transportChain } from '../../../src/transport/middleware/chain.js';
import {
  type CallNext,
  type ClientMiddleware,
  clientLayer,
} from '../../../src/transport/call/compose.js';
import { GET_CELL, READ, messages } from './support.js';

function parts(endpoints: string[], interceptors?: ClientMiddleware[]): ChainParts {
  const clock = new ManualClock();
  const latency = new LatencyTracker();
  return {
    endpoints: new EndpointSelector(endpoints, { clock }),
    clock,
    budget: new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 }),
    retry: resolveRetryPolicy({}, () => 0.5),
    hedge: resolveHedgePolicy({ delayMs: 50 }, latency),
    latency,
    counters: newCounters(),
    defaultDeadlineMs: 1000,
    ...(interceptors ? { interceptors } : {}),
  };
}

describe('the transport chain', () => {
  const terminal: CallNext = () => messages('answer');

  it('runs a one-message call by promises, with hedging on two endpoints too', async () => {
    for (const endpoints of [['a:1'], ['a:1', 'b:1']]) {
      const chain = transportChain(parts(endpoints), terminal);
      expect(chain.unary, `${endpoints.length} endpoint(s)`).to.be.a('function');
      expect(await chain.unary!(GET_CELL, READ)).to.equal('answer');
    }
  });

  it('runs it through the generators when an interceptor has no unary form', async () => {
    const streamOnly: ClientMiddleware = (call, options, next) => next(call, options);
    expect(transportChain(parts(['a:1'], [streamOnly]), terminal).unary).to.equal(undefined);
    const both = clientLayer(
      (call, options, next) => next(call, options),
      (call, options, next) => next(call, options),
    );
    expect(transportChain(parts(['a:1'], [both]), terminal).unary).to.be.a('function');
  });
});
