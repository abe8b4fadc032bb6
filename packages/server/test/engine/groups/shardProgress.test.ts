// How far a shard's cursor may move: over the contiguous handled prefix of what was read,
// never past a cell still out, whatever order the answers come in.
import { expect } from 'chai';
import { ShardProgress } from '../../../src/engine/groups/shardProgress.js';

describe('consumer groups: shard progress (pure)', () => {
  it('moves over cells passed over unseen at once', () => {
    const progress = new ShardProgress(10);
    progress.read(11, true);
    progress.read(12, true);
    expect(progress.handledUpTo).to.equal(12);
    expect(progress.outstanding).to.equal(0);
  });

  it('stops at the first cell still out, and moves past it once it is answered', () => {
    const progress = new ShardProgress(0);
    for (const id of [1, 2, 3, 4]) progress.read(id, false);
    progress.read(5, true);
    expect(progress.handle(2)).to.equal(true);
    expect(progress.handle(4)).to.equal(true);
    expect(progress.handledUpTo).to.equal(0);
    expect(progress.firstOutstanding(5)).to.deep.equal([1, 3]);
    expect(progress.handle(1)).to.equal(true);
    expect(progress.handledUpTo).to.equal(2);
    expect(progress.handle(3)).to.equal(true);
    expect(progress.handledUpTo).to.equal(5);
    expect(progress.outstanding).to.equal(0);
  });

  it('does not count an answer twice, nor one for a cell never delivered', () => {
    const progress = new ShardProgress(0);
    progress.read(7, false);
    expect(progress.handle(7)).to.equal(true);
    expect(progress.handle(7)).to.equal(false);
    expect(progress.handle(8)).to.equal(false);
    expect(progress.outstanding).to.equal(0);
  });

  it('keeps ids past 2^53 exact', () => {
    const start = 2n ** 60n;
    const progress = new ShardProgress(start);
    progress.read(start + 1n, false);
    progress.read(start + 2n, false);
    progress.handle(start + 1n);
    expect(progress.handledUpTo).to.equal(start + 1n);
    expect(progress.awaits(start + 2n)).to.equal(true);
  });

  it('stays correct over many cells answered out of order', () => {
    const progress = new ShardProgress(0);
    const ids = Array.from({ length: 5000 }, (_, i) => i + 1);
    for (const id of ids) progress.read(id, id % 7 === 0);
    const answers = ids.filter((id) => id % 7 !== 0).reverse();
    for (const id of answers.slice(0, -1)) progress.handle(id);
    expect(progress.handledUpTo).to.equal(0);
    progress.handle(answers[answers.length - 1]!);
    expect(progress.handledUpTo).to.equal(5000);
  });
});
