import { expect } from 'chai';
import { TokenBudget } from '../../src/transport/policy/budget.js';

describe('TokenBudget (gRFC A6 retry throttling)', () => {
  it('starts full with the defaults 100 / 0.1', () => {
    const budget = new TokenBudget();
    expect(budget.maxTokens).to.equal(100);
    expect(budget.tokenRatio).to.equal(0.1);
    expect(budget.tokens).to.equal(100);
    expect(budget.canRetry()).to.equal(true);
  });

  it('charges 1 per failure and allows retries only while tokens > maxTokens / 2', () => {
    const budget = new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 });
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      budget.recordFailure();
      allowed.push(budget.canRetry());
    }
    // 9, 8, 7, 6 are above 5; 5 is not (strictly greater), nor 4.
    expect(allowed).to.deep.equal([true, true, true, true, false, false]);
    expect(budget.tokens).to.equal(4);
  });

  it('never goes below 0 or above maxTokens', () => {
    const budget = new TokenBudget({ maxTokens: 3, tokenRatio: 1 });
    for (let i = 0; i < 10; i++) budget.recordFailure();
    expect(budget.tokens).to.equal(0);
    for (let i = 0; i < 10; i++) budget.recordSuccess();
    expect(budget.tokens).to.equal(3);
  });

  it('earns tokenRatio per success, exactly (thousandths, no float drift)', () => {
    const budget = new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 });
    for (let i = 0; i < 5; i++) budget.recordFailure();
    expect(budget.tokens).to.equal(5);
    expect(budget.canRetry()).to.equal(false);
    budget.recordSuccess();
    expect(budget.tokens).to.equal(5.1);
    expect(budget.canRetry()).to.equal(true);
    for (let i = 0; i < 9; i++) budget.recordSuccess();
    expect(budget.tokens).to.equal(6);
  });

  it('charges a hedge 1 token when it is sent, and refuses it at the threshold', () => {
    const budget = new TokenBudget({ maxTokens: 4, tokenRatio: 0.5 });
    expect(budget.trySpendHedge()).to.equal(true); // 4 -> 3
    expect(budget.tokens).to.equal(3);
    expect(budget.trySpendHedge()).to.equal(true); // 3 -> 2
    expect(budget.trySpendHedge()).to.equal(false); // 2 is not > 2: refused, nothing spent
    expect(budget.tokens).to.equal(2);
    budget.recordSuccess(); // 2.5
    expect(budget.trySpendHedge()).to.equal(true);
    expect(budget.tokens).to.equal(1.5);
  });

  it('shares one budget between retries and hedges', () => {
    const budget = new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 });
    for (let i = 0; i < 4; i++) expect(budget.trySpendHedge()).to.equal(true);
    budget.recordFailure(); // 5: retries are now refused too
    expect(budget.canRetry()).to.equal(false);
    expect(budget.trySpendHedge()).to.equal(false);
  });

  it('rejects nonsensical settings', () => {
    expect(() => new TokenBudget({ maxTokens: 0 })).to.throw(RangeError);
    expect(() => new TokenBudget({ tokenRatio: -1 })).to.throw(RangeError);
  });
});
