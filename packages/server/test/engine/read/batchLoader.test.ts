// When a batch loader's batch goes (batchTiming.ts), with a plain function as its batch function
// (pure): a lookup made while no batch is out goes once the current task has run, before the
// event loop's turn ends; lookups made together in one task share it; lookups made in separate
// tasks of one turn while a batch is out share the next one, sent at the end of the turn.
import { expect } from 'chai';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { BatchLoader } from '../../../src/engine/read/batchLoader.js';

/** A loader of numbers, answering each doubled; its batches, as their keys, and when each went. */
function doublingLoader() {
  const events: string[] = [];
  const batches: number[][] = [];
  /** Answers the batch out once called: a batch stays out until then. */
  const answers: (() => void)[] = [];
  const loader = new BatchLoader<number, number>(
    (keys) => {
      batches.push([...keys]);
      events.push(`batch ${keys.join(',')}`);
      return new Promise((resolve) => answers.push(() => resolve(keys.map((key) => key * 2))));
    },
    String,
    { maxKeys: 1000, parallel: 1, minKeys: 1000 },
  );
  const answerAll = () => {
    for (const answer of answers.splice(0)) answer();
  };
  return { loader, events, batches, answerAll };
}

/** Resolves once the event loop's current turn has ended (setImmediate's callbacks have run). */
const turnEnded = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('batch loader timing (pure)', () => {
  it('sends a lone lookup before the turn ends, with nothing out', async () => {
    const { loader, events, answerAll } = doublingLoader();
    setImmediate(() => events.push('turn ended'));
    const found = loader.load([21], UNBOUNDED);
    await turnEnded();
    expect(events).to.deep.equal(['batch 21', 'turn ended']);
    answerAll();
    expect(await found).to.deep.equal([42]);
  });

  it('has the lookups made in one task share a batch, awaits between them included', async () => {
    const { loader, batches, answerAll } = doublingLoader();
    const caller = async (key: number) => {
      await Promise.resolve();
      await Promise.resolve();
      return loader.load([key], UNBOUNDED);
    };
    const all = Promise.all([loader.load([1], UNBOUNDED), caller(2), caller(3)]);
    await turnEnded();
    answerAll();
    expect(await all).to.deep.equal([[2], [4], [6]]);
    expect(batches).to.deep.equal([[1, 2, 3]]);
  });

  it('holds the lookups of separate tasks while a batch is out, and sends them together at the end of the turn', async () => {
    const { loader, events, batches, answerAll } = doublingLoader();
    const first = loader.load([1], UNBOUNDED);
    await Promise.resolve();
    await new Promise((resolve) => process.nextTick(resolve));
    expect(batches, 'the first lookup went alone, at once').to.deep.equal([[1]]);
    // Two timers due together run in one turn's timers phase, each a task of its own.
    const made: Promise<readonly (number | undefined)[]>[] = [];
    await new Promise<void>((resolve) => {
      setTimeout(() => made.push(loader.load([2], UNBOUNDED)), 0);
      setTimeout(() => {
        made.push(loader.load([3], UNBOUNDED));
        events.push('second timer');
        resolve();
      }, 0);
    });
    await turnEnded();
    expect(events).to.deep.equal(['batch 1', 'second timer', 'batch 2,3']);
    answerAll();
    expect(await first).to.deep.equal([2]);
    expect(await Promise.all(made)).to.deep.equal([[4], [6]]);
  });

  it('sends at once again once no batch is out', async () => {
    const { loader, batches, answerAll } = doublingLoader();
    const first = loader.load([1], UNBOUNDED);
    await turnEnded();
    answerAll();
    await first;
    setImmediate(() => batches.push([-1]));
    const second = loader.load([2], UNBOUNDED);
    await turnEnded();
    expect(batches, 'the second lookup did not wait for the turn').to.deep.equal([[1], [2], [-1]]);
    answerAll();
    expect(await second).to.deep.equal([4]);
  });
});
