// Which member should own each shard: every server computes it from the rows it read and acts
// only for its own members, so it must balance, move as little as possible, and give every
// server the same answer from the same rows.
import { expect } from 'chai';
import { assignShards } from '../../../src/engine/groups/assignment.js';

const SHARDS = Array.from({ length: 16 }, (_, shard) => shard);

function countsOf(target: ReadonlyMap<number, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const member of target.values()) counts.set(member, (counts.get(member) ?? 0) + 1);
  return counts;
}

function moved(before: ReadonlyMap<number, string>, after: ReadonlyMap<number, string>): number[] {
  return SHARDS.filter((shard) => before.has(shard) && before.get(shard) !== after.get(shard));
}

describe('consumer groups: shard assignment (pure)', () => {
  it('gives every shard an owner, balanced within one shard of the fair share', () => {
    for (const count of [1, 2, 3, 5, 7, 16, 20]) {
      const members = Array.from({ length: count }, (_, i) => `m${i}`);
      const target = assignShards(SHARDS, new Map(), members);
      const counts = [...countsOf(target).values()];
      expect(target.size, `${count} members`).to.equal(16);
      expect(Math.max(...counts) - Math.min(...counts), `${count} members`).to.be.at.most(1);
      // With more members than shards some own none; none owns two then.
      if (count > 16) expect(Math.max(...counts)).to.equal(1);
    }
  });

  it('gives nothing to anyone while no member is live', () => {
    expect(assignShards(SHARDS, new Map([[0, 'gone']]), []).size).to.equal(0);
  });

  it('keeps owners where they are when they are balanced already', () => {
    const owners = new Map(SHARDS.map((shard) => [shard, shard % 2 === 0 ? 'b' : 'a']));
    const target = assignShards(SHARDS, owners, ['a', 'b']);
    expect(moved(owners, target)).to.deep.equal([]);
  });

  it('moves only what must move when a member joins: the newcomer takes its share from the others', () => {
    const two = assignShards(SHARDS, new Map(), ['a', 'b']);
    const three = assignShards(SHARDS, two, ['a', 'b', 'c']);
    const shifted = moved(two, three);
    expect(shifted).to.have.length(5);
    for (const shard of shifted) expect(three.get(shard)).to.equal('c');
    expect([...countsOf(three).values()].sort()).to.deep.equal([5, 5, 6]);
  });

  it("moves only the leaver's shards when a member leaves or dies", () => {
    const three = assignShards(SHARDS, new Map(), ['a', 'b', 'c']);
    // c is gone: its rows still name it, but it is not live.
    const two = assignShards(SHARDS, three, ['a', 'b']);
    const shifted = moved(three, two);
    expect(shifted.sort((x, y) => x - y)).to.deep.equal(
      SHARDS.filter((shard) => three.get(shard) === 'c'),
    );
    expect([...countsOf(two).values()]).to.deep.equal([8, 8]);
  });

  it('moves each shard at most twice over a rolling restart of three members', () => {
    let owners = assignShards(SHARDS, new Map(), ['a', 'b', 'c']);
    const moves = new Map<number, number>();
    const step = (members: string[]) => {
      const next = assignShards(SHARDS, owners, members);
      for (const shard of moved(owners, next)) moves.set(shard, (moves.get(shard) ?? 0) + 1);
      owners = next;
    };
    for (const [leaving, replacement] of [
      ['a', 'a2'],
      ['b', 'b2'],
      ['c', 'c2'],
    ] as const) {
      const rest = [...new Set(owners.values())].filter((member) => member !== leaving);
      const moveBefore = new Map(moves);
      step(rest);
      step([...rest, replacement]);
      for (const shard of SHARDS) {
        expect(
          (moves.get(shard) ?? 0) - (moveBefore.get(shard) ?? 0),
          `shard ${shard}`,
        ).to.be.at.most(2);
      }
    }
  });

  it('answers the same whatever order the rows and members come in', () => {
    const owners = new Map<number, string | undefined>([
      [3, 'b'],
      [1, 'a'],
      [9, 'dead'],
      [4, undefined],
    ]);
    const one = assignShards(SHARDS, owners, ['c', 'a', 'b']);
    const other = assignShards([...SHARDS].reverse(), new Map([...owners].reverse()), [
      'b',
      'c',
      'a',
    ]);
    expect([...one].sort(([x], [y]) => x - y)).to.deep.equal([...other].sort(([x], [y]) => x - y));
  });

  it('gives the remainder to those who hold more already, so fewer shards move', () => {
    // a holds 9, b holds 7: with 16 shards over 2 nothing is uneven; over 3, a keeps 6.
    const owners = new Map(SHARDS.map((shard) => [shard, shard < 9 ? 'a' : 'b']));
    const target = assignShards(SHARDS, owners, ['a', 'b', 'c']);
    expect(countsOf(target).get('a')).to.equal(6);
    expect(moved(owners, target)).to.have.length(5);
  });
});
