// Deadlines watched with one timer (engine/base/deadlineWatch.ts), on real timers: each
// deadline is told once and never before its time, an unwatched one never, and one timer serves
// deadlines that come later than the armed one.
import { expect } from 'chai';
import { DeadlineWatch } from '../../../src/engine/base/deadlineWatch.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('deadline watch', () => {
  it('tells each deadline once, never before its time, the earliest first', async () => {
    const watch = new DeadlineWatch();
    const start = Date.now();
    const told: { name: string; at: number; late: number }[] = [];
    const tell = (name: string, at: number) => () => told.push({ name, at, late: Date.now() - at });
    for (const [name, after] of [
      ['b', 60],
      ['a', 20],
      ['c', 100],
    ] as const) {
      watch.watch(start + after, tell(name, start + after));
    }
    await sleep(400);
    expect(told.map(({ name }) => name)).to.deep.equal(['a', 'b', 'c']);
    for (const { name, late } of told)
      expect(late, `${name} told before its time`).to.be.at.least(0);
    watch.close();
  });

  it('never tells a deadline unwatched, nor any after close; Infinity is never watched', async () => {
    const watch = new DeadlineWatch();
    let told = 0;
    const gone = watch.watch(Date.now() + 20, () => told++);
    watch.unwatch(gone);
    watch.watch(Infinity, () => told++);
    const kept = watch.watch(Date.now() + 40, () => told++);
    await sleep(150);
    expect(told, 'only the deadline still watched').to.equal(1);
    watch.unwatch(kept);
    watch.watch(Date.now() + 20, () => told++);
    watch.close();
    await sleep(100);
    expect(told).to.equal(1);
  });
});
