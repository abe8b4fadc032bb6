// Cutting queued calls into batches within the server's bounds: a pure function, tested on its
// own.

import { expect } from 'chai';
import { splitIntoBatches, type BatchBounds } from '../../src/transport/batch/batchSplit.js';

interface Item {
  readonly name: string;
  readonly bytes: number;
  readonly weight: number;
}

const item = (name: string, bytes = 1, weight = 1): Item => ({ name, bytes, weight });
const names = (batches: Item[][]) => batches.map((batch) => batch.map((i) => i.name).join(''));
const split = (items: Item[], bounds: Partial<BatchBounds>) =>
  names(
    splitIntoBatches(items, (i) => i, {
      maxItems: Infinity,
      maxWeight: Infinity,
      maxBytes: Infinity,
      ...bounds,
    }),
  );

describe('splitIntoBatches', () => {
  it('keeps everything in one batch, in order, when it fits', () => {
    expect(split([item('a'), item('b'), item('c')], { maxItems: 3 })).to.deep.equal(['abc']);
  });

  it('starts a new batch when the next item would pass any bound', () => {
    const items = ['a', 'b', 'c', 'd', 'e'].map((name) => item(name));
    expect(split(items, { maxItems: 2 })).to.deep.equal(['ab', 'cd', 'e']);
    expect(split([item('a', 3), item('b', 3), item('c', 1)], { maxBytes: 4 })).to.deep.equal([
      'a',
      'bc',
    ]);
    expect(
      split([item('a', 1, 600), item('b', 1, 400), item('c', 1, 1)], { maxWeight: 1000 }),
    ).to.deep.equal(['ab', 'c']);
  });

  it('puts an item too big for any batch in a batch of its own', () => {
    expect(split([item('a'), item('B', 10), item('c')], { maxBytes: 4 })).to.deep.equal([
      'a',
      'B',
      'c',
    ]);
    expect(split([item('A', 1, 20_000), item('b')], { maxWeight: 10_000 })).to.deep.equal([
      'A',
      'b',
    ]);
  });

  it('gives no batch for no items', () => {
    expect(split([], { maxItems: 1 })).to.deep.equal([]);
  });
});
