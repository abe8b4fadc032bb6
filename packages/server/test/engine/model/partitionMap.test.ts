// The partition map's pure logic: version 0 is the gem's layout, moves make the next version,
// what is stored reads back the same, and a split gives the gem's map for the longer list.
import { expect } from 'chai';
import { PartitionMap } from '../../../src/engine/model/partitionMap.js';
import { partitionOfShard } from '../../../src/engine/model/sharding.js';

describe('partition map (pure)', () => {
  it("starts as the gem's contiguous ranges over the partition list", () => {
    const map = PartitionMap.initial(['a', 'b', 'c', 'd'], 16);
    expect(map.version).to.equal(0);
    for (let shard = 0; shard < 16; shard++) {
      expect(map.partitionOf(shard)).to.equal(partitionOfShard(shard, 16, 4));
    }
    expect(map.shardsOf(1)).to.deep.equal([4, 5, 6, 7]);
    expect(map.toRecord().ranges).to.deep.equal([
      [0, 3, 0],
      [4, 7, 1],
      [8, 11, 2],
      [12, 15, 3],
    ]);
    expect(map.gemOrder()).to.deep.equal(['a', 'b', 'c', 'd']);
  });

  it('moves shards to a new partition as the next version, leaving the old one unchanged', () => {
    const before = PartitionMap.initial(['a', 'b'], 8);
    const after = before.moved([2, 3], 2, 'c');
    expect(after.version).to.equal(1);
    expect(after.locations).to.deep.equal(['a', 'b', 'c']);
    expect(after.shardsOf(0)).to.deep.equal([0, 1]);
    expect(after.shardsOf(2)).to.deep.equal([2, 3]);
    expect(before.partitionOf(2)).to.equal(0);
    expect(() => before.moved([1], 3, 'x')).to.throw(RangeError, /partition 3 is not in the map/);
    expect(() => before.moved([1], 2)).to.throw(RangeError, /give its location/);
    expect(() => before.moved([8], 1)).to.throw(RangeError, /shard 8 is not in the map/);
  });

  it("after a split to twice the partitions, gives the gem's order for the longer list", () => {
    const split = PartitionMap.initial(['a', 'b'], 16)
      .moved([4, 5, 6, 7], 2, 'a2')
      .moved([12, 13, 14, 15], 3, 'b2');
    expect(split.version).to.equal(2);
    const order = split.gemOrder();
    expect(order).to.deep.equal(['a', 'a2', 'b', 'b2']);
    const gem = PartitionMap.initial(order!, 16);
    for (let shard = 0; shard < 16; shard++) {
      expect(split.locations[split.partitionOf(shard)]).to.equal(
        gem.locations[gem.partitionOf(shard)],
      );
    }
    expect(PartitionMap.initial(['a', 'b'], 16).moved([3], 2, 'c').gemOrder()).to.equal(undefined);
  });

  it('reads back what it stores, and refuses a record that does not cover every shard once', () => {
    const map = PartitionMap.initial(['a', 'b'], 8).moved([5, 6], 0);
    const again = PartitionMap.fromRecord(JSON.parse(JSON.stringify(map.toRecord())), 8);
    for (let shard = 0; shard < 8; shard++)
      expect(again.partitionOf(shard)).to.equal(map.partitionOf(shard));
    expect(again.version).to.equal(map.version);
    const record = { version: 3, locations: ['a'] };
    expect(() => PartitionMap.fromRecord({ ...record, ranges: [[0, 6, 0]] }, 8)).to.throw(
      /shard 7 has no partition/,
    );
    expect(() =>
      PartitionMap.fromRecord(
        {
          ...record,
          ranges: [
            [0, 7, 0],
            [3, 3, 0],
          ],
        },
        8,
      ),
    ).to.throw(/mapped twice/);
    expect(() => PartitionMap.fromRecord({ ...record, ranges: [[0, 7, 1]] }, 8)).to.throw(
      /does not list/,
    );
    expect(() => PartitionMap.fromRecord({ ...record, ranges: [[0, 8, 0]] }, 8)).to.throw(
      /past the store/,
    );
  });
});
