import { expect } from 'chai';
import { ManualClock, sleep } from '../../src/transport/call/clock.js';

describe('ManualClock', () => {
  it('fires timers in due order, each at its due time', async () => {
    const clock = new ManualClock(1000);
    const fired: [string, number][] = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
    clock.setTimeout(() => fired.push(['c', clock.now()]), 20);
    clock.setTimeout(() => fired.push(['late', clock.now()]), 31);
    await clock.advance(30);
    expect(fired).to.deep.equal([
      ['a', 1010],
      ['b', 1020],
      ['c', 1020],
    ]);
    expect(clock.now()).to.equal(1030);
    expect(clock.pendingTimers).to.equal(1);
  });

  it('does not fire cleared timers', async () => {
    const clock = new ManualClock();
    let fired = false;
    const handle = clock.setTimeout(() => (fired = true), 5);
    clock.clearTimeout(handle);
    await clock.advance(10);
    expect(fired).to.equal(false);
  });

  it('lets awaits settle between timers, so timers set after an await fire in the same advance', async () => {
    const clock = new ManualClock();
    const log: number[] = [];
    const task = (async () => {
      await sleep(clock, 10);
      log.push(clock.now());
      await Promise.resolve();
      await sleep(clock, 10);
      log.push(clock.now());
    })();
    await clock.advance(25);
    await task;
    expect(log).to.deep.equal([10, 20]);
  });

  it('advanceToNextTimer jumps to the earliest timer', async () => {
    const clock = new ManualClock();
    let at = -1;
    clock.setTimeout(() => (at = clock.now()), 42);
    await clock.advanceToNextTimer();
    expect(at).to.equal(42);
    expect(clock.now()).to.equal(42);
  });

  it('sleep rejects with the abort reason and clears its timer', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const slept = sleep(clock, 100, controller.signal);
    controller.abort(new Error('stop'));
    let caught: unknown;
    await slept.catch((err: unknown) => (caught = err));
    expect((caught as Error).message).to.equal('stop');
    expect(clock.pendingTimers).to.equal(0);
  });
});
