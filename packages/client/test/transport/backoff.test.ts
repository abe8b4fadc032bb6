import { expect } from 'chai';
import { backoffCeiling, exponentialBackoff } from '../../src/transport/policy/backoff.js';

describe('exponential backoff with full jitter', () => {
  const options = { baseMs: 10, maxMs: 100, multiplier: 2 };

  it('grows the ceiling exponentially up to maxMs', () => {
    expect([0, 1, 2, 3, 4, 5, 30].map((n) => backoffCeiling(options, n))).to.deep.equal([
      10, 20, 40, 80, 100, 100, 100,
    ]);
  });

  it('never overflows to a non-finite ceiling', () => {
    expect(backoffCeiling(options, 5000)).to.equal(100);
  });

  it('draws uniformly from [0, ceiling): random 0 gives 0, random just below 1 the ceiling', () => {
    const low = exponentialBackoff(options, () => 0);
    const mid = exponentialBackoff(options, () => 0.5);
    const high = exponentialBackoff(options, () => 0.999999);
    for (let n = 0; n < 8; n++) {
      const ceiling = backoffCeiling(options, n);
      expect(low.delay(n)).to.equal(0);
      expect(mid.delay(n)).to.equal(ceiling / 2);
      expect(high.delay(n))
        .to.be.below(ceiling)
        .and.above(ceiling * 0.9999);
    }
  });

  it('stays within [0, ceiling) with Math.random and uses the whole range', () => {
    const backoff = exponentialBackoff(options);
    const delays = Array.from({ length: 2000 }, () => backoff.delay(2));
    expect(Math.min(...delays)).to.be.at.least(0);
    expect(Math.max(...delays)).to.be.below(40);
    // Full jitter, not "equal jitter": the lower half of the range is used as well.
    expect(delays.filter((d) => d < 20).length).to.be.above(500);
  });

  it('rejects nonsensical settings', () => {
    expect(() => exponentialBackoff({ baseMs: -1, maxMs: 10, multiplier: 2 })).to.throw(RangeError);
    expect(() => exponentialBackoff({ baseMs: 10, maxMs: 5, multiplier: 2 })).to.throw(RangeError);
    expect(() => exponentialBackoff({ baseMs: 1, maxMs: 5, multiplier: 0.5 })).to.throw(RangeError);
  });
});
