// How a group is shared among free transactions (pure).
import { expect } from 'chai';
import { splitByShard } from '../../../src/engine/write/groupSplit.js';

interface Unit {
  readonly name: string;
  readonly shards: readonly number[];
  readonly items: number;
}
const unit = (name: string, shards: number[], items = 1): Unit => ({ name, shards, items });
const split = (units: Unit[], maxParts: number, minPartSize: number) =>
  splitByShard(
    units,
    maxParts,
    minPartSize,
    (u) => u.shards,
    (u) => u.items,
  ).map((part) => part.map((u) => u.name));

describe('splitting a group among free transactions (pure)', () => {
  it('keeps it whole with one free transaction, one unit, or too few items for two parts', () => {
    const units = [unit('a', [0]), unit('b', [1]), unit('c', [2]), unit('d', [3])];
    expect(split(units, 1, 1)).to.deep.equal([['a', 'b', 'c', 'd']]);
    expect(split([unit('big', [0, 1, 2], 100)], 2, 1)).to.deep.equal([['big']]);
    expect(split(units, 2, 3)).to.deep.equal([['a', 'b', 'c', 'd']]);
  });

  it('balances units of distinct shards by items, each part in queue order', () => {
    const units = Array.from({ length: 16 }, (_, i) => unit(`u${i}`, [i]));
    const parts = split(units, 2, 8);
    expect(parts.map((part) => part.length)).to.deep.equal([8, 8]);
    expect(parts.flat().sort()).to.deep.equal(units.map((u) => u.name).sort());
    for (const part of parts) {
      const positions = part.map((name) => Number(name.slice(1)));
      expect(positions).to.deep.equal([...positions].sort((a, b) => a - b));
    }
  });

  it('makes no more parts than the items allow', () => {
    const units = Array.from({ length: 12 }, (_, i) => unit(`u${i}`, [i]));
    expect(split(units, 4, 4)).to.have.length(3);
  });

  it('puts units that share a shard in the same part, a unit of many shards with the first it meets', () => {
    const units = [
      unit('a1', [0]),
      unit('b1', [1]),
      unit('a2', [0]),
      unit('b2', [1]),
      unit('ab', [1, 5]),
      unit('e1', [5]),
      unit('c1', [2]),
    ];
    const parts = split(units, 2, 1);
    const partOf = (name: string) => parts.findIndex((part) => part.includes(name));
    expect(partOf('a1')).to.equal(partOf('a2'));
    expect(partOf('b1')).to.equal(partOf('b2'));
    expect(partOf('ab')).to.equal(partOf('b1'));
    expect(partOf('e1'), 'shard 5 went with the unit that brought it').to.equal(partOf('ab'));
    expect(partOf('a1')).to.not.equal(partOf('b1'));
  });
});
