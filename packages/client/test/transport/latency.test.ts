import { expect } from 'chai';
import { LatencyTracker, LatencyWindow } from '../../src/transport/policy/latency.js';
import { resolveHedgePolicy } from '../../src/transport/policy/policy.js';

describe('latency tracking', () => {
  it('gives the nearest-rank p95', () => {
    const window = new LatencyWindow(100);
    // 1..100 in a scrambled order
    for (let i = 0; i < 100; i++) window.record(((i * 37) % 100) + 1);
    expect(window.quantile(0.95)).to.equal(95);
    expect(window.quantile(0.5)).to.equal(50);
    expect(window.quantile(1)).to.equal(100);
  });

  it('keeps only the last N samples', () => {
    const window = new LatencyWindow(10);
    for (let i = 0; i < 10; i++) window.record(1000);
    for (let i = 0; i < 10; i++) window.record(5);
    expect(window.count).to.equal(10);
    expect(window.quantile(0.95)).to.equal(5);
  });

  it('ignores nonsensical samples', () => {
    const window = new LatencyWindow(10);
    window.record(Number.NaN);
    window.record(-3);
    expect(window.count).to.equal(0);
    expect(window.quantile(0.95)).to.equal(undefined);
  });

  it('tracks methods separately and trusts p95 only after minSamples', () => {
    const tracker = new LatencyTracker({ windowSize: 50, minSamples: 5 });
    for (let i = 1; i <= 4; i++) tracker.record('getCell', i);
    expect(tracker.p95('getCell')).to.equal(undefined);
    tracker.record('getCell', 5);
    expect(tracker.p95('getCell')).to.equal(5);
    expect(tracker.p95('previous')).to.equal(undefined);
    expect(tracker.count('getCell')).to.equal(5);
  });

  describe('hedge delay', () => {
    it('uses the fixed delay when one is configured', () => {
      const tracker = new LatencyTracker({ minSamples: 1 });
      tracker.record('getCell', 500);
      const policy = resolveHedgePolicy({ delayMs: 7 }, tracker);
      expect(policy?.delayFor('getCell')).to.equal(7);
    });

    it('falls back to fallbackDelayMs until enough samples, then uses p95 with a floor', () => {
      const tracker = new LatencyTracker({ minSamples: 20 });
      const policy = resolveHedgePolicy({ fallbackDelayMs: 30, minDelayMs: 1 }, tracker);
      expect(policy?.delayFor('getCell')).to.equal(30);
      for (let i = 1; i <= 20; i++) tracker.record('getCell', i);
      expect(policy?.delayFor('getCell')).to.equal(19);
      const fast = new LatencyTracker({ minSamples: 1 });
      fast.record('getCell', 0.2);
      expect(resolveHedgePolicy({ minDelayMs: 1 }, fast)?.delayFor('getCell')).to.equal(1);
    });

    it('is off with false or maxHedges 0', () => {
      const tracker = new LatencyTracker();
      expect(resolveHedgePolicy(false, tracker)).to.equal(null);
      expect(resolveHedgePolicy({ maxHedges: 0 }, tracker)).to.equal(null);
    });
  });
});
