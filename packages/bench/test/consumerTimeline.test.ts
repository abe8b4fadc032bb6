// What the consumer-group figures read off the members' lines, checked on lines written by
// hand: who owned a shard when, how long a hand-over left it without a member (from a
// revocation, a close, a loss or a kill), how often each shard moved, which cells came twice,
// and the longest wait between two cells of a shard.
import assert from 'node:assert/strict';
import { type MemberLine, ownedShards } from '../src/subjects/consumerMember.js';
import {
  type MemberLog,
  assignments,
  handOvers,
  handledTwice,
  lastCommitted,
  longestGap,
  movesPerShard,
} from '../src/workloads/consumerTimeline.js';

const assigned = (shard: number, at: number, cursor = 0): MemberLine => ({
  t: 'assigned',
  shard,
  cursor,
  at,
});
const handled = (s: number, i: number, at: number): MemberLine => ({
  t: 'h',
  s,
  i,
  a: 1,
  c: 0,
  at,
});

describe('consumer timeline', () => {
  it('hand-overs run from when the owner let go (revoked, closing, lost or killed) to the next assignment', () => {
    const logs: MemberLog[] = [
      {
        name: 'a',
        lines: [
          assigned(0, 0),
          assigned(1, 0),
          assigned(2, 0),
          { t: 'revoked', shard: 1, at: 100 },
          { t: 'released', shard: 1, at: 110 },
          { t: 'closing', at: 500 },
        ],
      },
      { name: 'b', lines: [assigned(1, 150), assigned(0, 620)] },
      { name: 'c', lines: [assigned(3, 0)], endedAt: 1000 },
      { name: 'd', lines: [assigned(2, 700), assigned(3, 1300)] },
    ];
    assert.deepEqual(
      handOvers(logs, 0, 2000).map((h) => [h.shard, h.from, h.to, h.pauseMs]),
      [
        [1, 'a', 'b', 50],
        [0, 'a', 'b', 120],
        [2, 'a', 'd', 200],
        [3, 'c', 'd', 300],
      ],
    );
    // Only the assignments inside the window; a first assignment is no hand-over.
    assert.deepEqual(
      handOvers(logs, 600, 1000).map((h) => h.shard),
      [0, 2],
    );
    assert.deepEqual(
      [...movesPerShard(logs, 100, 2000)],
      [
        [1, 1],
        [0, 1],
        [2, 1],
        [3, 1],
      ],
    );
    assert.equal(assignments(logs).length, 8);
  });

  it('a shard assigned twice in a window moved twice; a member that joins again keeps no hand-over', () => {
    const logs: MemberLog[] = [
      { name: 'a', lines: [assigned(5, 0), { t: 'closing', at: 100 }] },
      { name: 'b', lines: [assigned(5, 150), { t: 'revoked', shard: 5, at: 400 }] },
      { name: 'c', lines: [assigned(5, 450), { t: 'reconnecting', at: 600 }, assigned(5, 900)] },
    ];
    assert.deepEqual([...movesPerShard(logs, 50, 1000)], [[5, 3]]);
    assert.deepEqual(
      handOvers(logs, 0, 1000).map((h) => [h.from, h.to, h.pauseMs]),
      [
        ['a', 'b', 50],
        ['b', 'c', 50],
      ],
    );
  });

  it('counts cells handled more than once, over every member', () => {
    const logs: MemberLog[] = [
      { name: 'a', lines: [handled(1, 10, 0), handled(1, 11, 1), handled(2, 10, 2)] },
      { name: 'b', lines: [handled(1, 11, 5), handled(2, 12, 6), handled(1, 11, 7)] },
    ];
    assert.deepEqual([...handledTwice(logs)], [['1/11', 3]]);
  });

  it('the longest wait between two cells of the shards asked for, inside the window', () => {
    const logs: MemberLog[] = [
      {
        name: 'a',
        lines: [handled(0, 1, 0), handled(0, 2, 90), handled(0, 3, 150), handled(1, 1, 100)],
      },
      { name: 'b', lines: [handled(0, 4, 400), handled(2, 1, 100), handled(2, 2, 900)] },
    ];
    // Shard 0: 90 (ends at 90, inside), 60, 250, then 100 to the window's end at 500.
    assert.deepEqual(longestGap(logs, new Set([0]), 50, 500), { shard: 0, gapMs: 250 });
    // Shard 1 started nothing after 100: the wait open at the window's end counts.
    assert.deepEqual(longestGap(logs, new Set([0, 1]), 50, 500), { shard: 1, gapMs: 400 });
    // Shard 2's wait ends after the window: it counts up to the window's end.
    assert.deepEqual(longestGap(logs, new Set([2]), 200, 500), { shard: 2, gapMs: 400 });
    assert.equal(longestGap(logs, new Set(), 0, 500), undefined);
  });

  it("a member's shards and its last confirmed cursors, as its lines say", () => {
    const lines: MemberLine[] = [
      assigned(1, 0),
      assigned(2, 0),
      assigned(3, 0),
      { t: 'committed', shard: 1, cursor: 10, at: 1 },
      { t: 'committed', shard: 1, cursor: 20, at: 2 },
      { t: 'revoked', shard: 2, at: 3 },
      { t: 'lost', shard: 3, at: 4 },
    ];
    // A revoked shard is owned until released.
    assert.deepEqual(ownedShards(lines), [1, 2]);
    assert.deepEqual(ownedShards([...lines, { t: 'released', shard: 2, at: 5 }]), [1]);
    assert.deepEqual(ownedShards([...lines, { t: 'reconnecting', at: 5 }]), []);
    assert.deepEqual([...lastCommitted({ name: 'a', lines })], [[1, 20]]);
  });
});
