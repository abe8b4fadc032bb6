// How a turn's reads are shared among SELECTs and round trips (pure).
import { expect } from 'chai';
import { shareAmongTrips, splitKeys } from '../../../src/engine/mysql/readSplit.js';

const keys = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('splitting a turn of reads (pure)', () => {
  it('keeps a turn with too few keys for two parts in one SELECT', () => {
    const parts = { maxKeys: 1000, parallel: 2, minKeys: 4 };
    expect(splitKeys([], parts)).to.deep.equal([]);
    expect(splitKeys(keys(1), parts)).to.deep.equal([[0]]);
    expect(splitKeys(keys(7), parts)).to.deep.equal([keys(7)]);
  });

  it('spreads enough keys evenly over the parallel SELECTs, in order', () => {
    const parts = { maxKeys: 1000, parallel: 2, minKeys: 4 };
    expect(splitKeys(keys(8), parts)).to.deep.equal([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(splitKeys(keys(13), parts).map((part) => part.length)).to.deep.equal([7, 6]);
    expect(splitKeys(keys(13), parts).flat()).to.deep.equal(keys(13));
  });

  it('takes as many SELECTs as the largest allows, however many run in parallel', () => {
    const parts = { maxKeys: 10, parallel: 2, minKeys: 4 };
    const split = splitKeys(keys(25), parts);
    expect(split.map((part) => part.length)).to.deep.equal([9, 8, 8]);
    expect(split.flat()).to.deep.equal(keys(25));
  });
});

describe('sharing a turn of reads among round trips (pure)', () => {
  const read = (name: string, statements = 1, bytes = 100, apart = false) => ({
    name,
    statements: Array.from({ length: statements }, () => 'SELECT 1'),
    bytes,
    apart,
  });
  const part = (name: string) => read(name, 1, 100, true);
  const names = (trips: { name: string }[][]) => trips.map((trip) => trip.map((r) => r.name));
  const limits = { maxStatements: 256, maxBytes: 1_000_000 };

  it('sends a turn of small reads in one round trip, in turn order', () => {
    expect(names(shareAmongTrips([read('a')], limits))).to.deep.equal([['a']]);
    expect(names(shareAmongTrips([read('a', 3), read('b'), read('c')], limits))).to.deep.equal([
      ['a', 'b', 'c'],
    ]);
  });

  it('sends each part of a split turn in a round trip of its own, the small reads together', () => {
    const trips = shareAmongTrips(
      [part('cells 1'), read('lookup'), part('cells 2'), read('page')],
      limits,
    );
    expect(names(trips)).to.deep.equal([['cells 1'], ['cells 2'], ['lookup', 'page']]);
  });

  it('opens more round trips only where the statement or byte limits require', () => {
    const reads = ['a', 'b', 'c', 'd', 'e'].map((name) => read(name));
    expect(names(shareAmongTrips(reads, { ...limits, maxStatements: 2 }))).to.deep.equal([
      ['a', 'b'],
      ['c', 'd'],
      ['e'],
    ]);
    expect(names(shareAmongTrips(reads, { ...limits, maxBytes: 250 }))).to.deep.equal([
      ['a', 'b'],
      ['c', 'd'],
      ['e'],
    ]);
  });

  it('sends a read over the limits by itself rather than refusing it', () => {
    const trips = shareAmongTrips([read('huge', 300), read('b')], limits);
    expect(names(trips)).to.deep.equal([['huge'], ['b']]);
  });
});
