// The content shards new records get (createShards.ts): the creates of one turn of the event
// loop share a few shards of their partition, one per write transaction, and over many turns
// every shard of the partition gets content.
import { expect } from 'chai';
import { CreateShards } from '../../../src/engine/schema/createShards.js';
import { StoreLayout } from '../../../src/engine/model/layout.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('content shards of new records (CreateShards)', () => {
  it('gives the creates of one turn the same shards of the partition, in turn', () => {
    const layout = new StoreLayout('ns', 16, 2);
    const shards = new CreateShards(layout, 2);
    const placed = Array.from({ length: 8 }, () => layout.contentShard(shards.uuidOn(1)));
    expect(new Set(placed).size).to.equal(2);
    for (const shard of placed) expect(layout.partitionOf(shard)).to.equal(1);
    expect(placed.slice(2)).to.deep.equal([...placed.slice(0, 2), ...placed.slice(0, 4)]);
    // Each partition has its own.
    const other = new Set(Array.from({ length: 4 }, () => layout.contentShard(shards.uuidOn(0))));
    expect(other.size).to.equal(2);
    for (const shard of other) expect(layout.partitionOf(shard)).to.equal(0);
  });

  it('picks new shards each turn, so that every shard of the partition gets content', async () => {
    const layout = new StoreLayout('ns', 16, 2);
    const shards = new CreateShards(layout, 2);
    const seen = new Set<number>();
    const perTurn = new Set<number>();
    for (let turn = 0; turn < 400; turn++) {
      const now = new Set(
        [shards.uuidOn(1), shards.uuidOn(1), shards.uuidOn(1)].map((uuid) =>
          layout.contentShard(uuid),
        ),
      );
      perTurn.add(now.size);
      for (const shard of now) seen.add(shard);
      await nextTurn();
    }
    expect([...perTurn]).to.deep.equal([2]);
    expect([...seen].sort((a, b) => a - b)).to.deep.equal([8, 9, 10, 11, 12, 13, 14, 15]);
  });

  it('spreads lone creates over every shard of a partition with no more shards than transactions', async () => {
    // 4 shards over 2 partitions, 2 transactions each: every turn's shards are all of them.
    const layout = new StoreLayout('ns', 4, 2);
    const shards = new CreateShards(layout, 2);
    const seen = new Map<number, number>();
    for (let turn = 0; turn < 200; turn++) {
      const shard = layout.contentShard(shards.uuidOn(1));
      seen.set(shard, (seen.get(shard) ?? 0) + 1);
      await nextTurn();
    }
    expect([...seen.keys()].sort()).to.deep.equal([2, 3]);
    // Each about half of them (a binomial of 200 draws is within 60-140 but once in 10^8).
    for (const count of seen.values()) expect(count).to.be.within(60, 140);
  });

  it('gives uuids that are all different, v4, even in one shard', () => {
    const shards = new CreateShards(new StoreLayout('ns', 1, 1), 2);
    const uuids = Array.from({ length: 10_000 }, () => shards.uuidOn(0));
    expect(new Set(uuids).size).to.equal(uuids.length);
    for (const uuid of uuids.slice(0, 100)) {
      expect(uuid).to.match(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    }
  });

  it('uses only the shards a uuid can lead to, and says so when a partition has none', () => {
    const layout = new StoreLayout('ns', 200_000, 4);
    const shards = new CreateShards(layout, 2);
    for (let i = 0; i < 50; i++)
      expect(layout.contentShard(shards.uuidOn(1))).to.be.within(50_000, 65_535);
    expect(() => shards.uuidOn(2)).to.throw(RangeError, 'partition 2 holds shards 100000-149999');
  });
});
