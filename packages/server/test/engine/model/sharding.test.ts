import { expect } from 'chai';
import {
  contentShard,
  findShard,
  lastContentShard,
  partitionOfShard,
  shardLayoutProblem,
  shardsOfPartition,
  withContentShard,
} from '../../../src/engine/model/sharding.js';
import {
  contentTableName,
  indexTableName,
  padShard,
  storeTableName,
  tableNameProblem,
} from '../../../src/engine/model/tableNames.js';
import { isIdentifier, quoteIdentifier } from '../../../src/engine/model/identifiers.js';
import { StoreLayout } from '../../../src/engine/model/layout.js';
import type { CompiledModel } from '../../../src/engine/model/model.js';

describe('sharding (pure)', () => {
  it('takes the floored modulo, never negative', () => {
    expect(findShard(0, 4)).to.equal(0);
    expect(findShard(5, 4)).to.equal(1);
    expect(findShard(-1, 4)).to.equal(3);
    expect(findShard(-4, 4)).to.equal(0);
    expect(findShard(-5, 4)).to.equal(3);
    expect(findShard(2n ** 62n + 3n, 4)).to.equal(3);
    expect(findShard(-(2n ** 63n), 7)).to.equal(Number(((-(2n ** 63n) % 7n) + 7n) % 7n));
  });

  it("equals Ruby's floored value % shards_count at the edges of int64", () => {
    // Worked out by hand from Ruby's Integer#% (Python's % floors the same way):
    // [-2^63, 2^63 - 1, -1, 2^53 + 1] % n.
    const values = [-(2n ** 63n), 2n ** 63n - 1n, -1n, 2n ** 53n + 1n];
    const ruby: [number, number[]][] = [
      [4, [0, 3, 3, 1]],
      [7, [6, 0, 6, 5]],
      [512, [0, 511, 511, 1]],
      [1000, [192, 807, 999, 993]],
      [999_999, [963955, 36043, 999998, 949254]],
    ];
    for (const [shardsCount, shards] of ruby) {
      expect(
        values.map((value) => findShard(value, shardsCount)),
        `mod ${shardsCount}`,
      ).to.deep.equal(shards);
    }
    // A safe integer gives the same shard as a number and as a bigint.
    for (const value of [-1, -(2 ** 53 - 1), 2 ** 53 - 1, 123_456_789]) {
      expect(findShard(value, 999_999)).to.equal(findShard(BigInt(value), 999_999));
    }
  });

  it('shards content by the first four hex characters of the uuid', () => {
    expect(contentShard('0000aaaa-0000-4000-8000-000000000000', 512)).to.equal(0);
    expect(contentShard('01ff0000-0000-4000-8000-000000000000', 512)).to.equal(0x01ff % 512);
    expect(contentShard('ffff0000-0000-4000-8000-000000000000', 512)).to.equal(0xffff % 512);
  });

  it('gives a uuid the content shard asked for, changing only its first four hex characters', () => {
    const uuid = '3b1f0c2e-9d4a-4e6b-8c1d-2f3e4a5b6c7d';
    for (const [shard, count] of [
      [0, 16],
      [15, 16],
      [2, 3],
      [0, 1],
      [65_535, 100_000],
      [12_345, 65_536],
    ] as const) {
      for (const fraction of [0, 0.25, 0.999_999]) {
        const placed = withContentShard(uuid, shard, count, fraction);
        expect(contentShard(placed, count), `${shard} of ${count}`).to.equal(shard);
        expect(placed.slice(4)).to.equal(uuid.slice(4));
        expect(placed).to.match(
          /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
      }
    }
    // Every prefix of the shard is reachable, from the lowest to the highest.
    expect(withContentShard(uuid, 5, 16, 0).slice(0, 4)).to.equal('0005');
    expect(withContentShard(uuid, 5, 16, 0.999_999).slice(0, 4)).to.equal('fff5');
  });

  it('knows the shards no uuid can lead to, past the 65,536 prefixes', () => {
    expect(lastContentShard(16)).to.equal(15);
    expect(lastContentShard(65_536)).to.equal(65_535);
    expect(lastContentShard(999_999)).to.equal(65_535);
    expect(() =>
      withContentShard('3b1f0c2e-9d4a-4e6b-8c1d-2f3e4a5b6c7d', 65_536, 100_000, 0),
    ).to.throw(RangeError, 'no uuid');
  });

  it('places contiguous blocks of shards on each partition', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((s) => partitionOfShard(s, 8, 2))).to.deep.equal([
      0, 0, 0, 0, 1, 1, 1, 1,
    ]);
    expect(shardsOfPartition(1, 8, 2)).to.deep.equal({ first: 4, last: 7 });
    expect(partitionOfShard(511, 512, 4)).to.equal(3);
  });

  it('groups items by the partition of their shard, keeping their order', () => {
    const layout = new StoreLayout('', 8, 2);
    const items = [7, 0, 5, 3, 4].map((shard) => ({ shard }));
    const groups = layout.byPartition(items, (item) => item.shard);
    expect([...groups].map(([p, group]) => [p, group.map((item) => item.shard)])).to.deep.equal([
      [1, [7, 5, 4]],
      [0, [0, 3]],
    ]);
  });

  it('tells whether a record’s content lives on the partition of an index shard', () => {
    const layout = new StoreLayout('', 8, 2);
    // Content shard parseInt('0003', 16) % 8 = 3, on partition 0 (shards 0-3).
    const uuid = '0003aaaa-0000-4000-8000-000000000000';
    expect(layout.contentBeside(uuid, 0)).to.equal(true);
    expect(layout.contentBeside(uuid, 3)).to.equal(true);
    expect(layout.contentBeside(uuid, 4)).to.equal(false);
    expect(new StoreLayout('', 8, 1).contentBeside(uuid, 7)).to.equal(true);
  });

  it("names each model's tables as the gem does, the same for every call", () => {
    const layout = new StoreLayout('ns', 8, 2);
    const rate = { name: 'rate' } as CompiledModel;
    const room = { name: 'room' } as CompiledModel;
    expect(layout.contentTable(rate, 7)).to.equal('ns_rate_000007');
    expect(layout.contentTable(room, 7)).to.equal('ns_room_000007');
    expect(layout.contentTable(rate, 0)).to.equal('ns_rate_000000');
    expect(layout.indexTable(rate, 'primary', 3)).to.equal('ns_rate_primary_index_000003');
    expect(layout.indexTable(rate, 'by_day', 3)).to.equal('ns_rate_by_day_index_000003');
    expect(layout.indexTable(room, 'primary', 3)).to.equal('ns_room_primary_index_000003');
    expect(layout.contentTable(rate, 7)).to.equal('ns_rate_000007');
  });

  it('refuses a shard count that is not a multiple of the partition count', () => {
    expect(shardLayoutProblem(8, 2)).to.equal(undefined);
    expect(shardLayoutProblem(9, 2)).to.match(/multiple of the number of partitions/);
    expect(shardLayoutProblem(0, 1)).to.match(/from 1 to 999999/);
    expect(shardLayoutProblem(4, 0)).to.match(/at least one partition/);
  });
});

describe('table names (pure)', () => {
  it('follows the gem: namespace, model, index, six-digit shard', () => {
    expect(padShard(7)).to.equal('000007');
    expect(contentTableName('rate_store', 'rate', 7)).to.equal('rate_store_rate_000007');
    expect(contentTableName('', 'rate', 511)).to.equal('rate_000511');
    expect(indexTableName('rate_store', 'rate', 'primary', 3)).to.equal(
      'rate_store_rate_primary_index_000003',
    );
    expect(indexTableName('', 'rate', 'secondary', 0)).to.equal('rate_secondary_index_000000');
    expect(storeTableName('ns', 'models')).to.equal('ns_shameless_models');
    expect(storeTableName('', 'store')).to.equal('shameless_store');
  });

  it('validates identifiers and the 64-character limit before any SQL is built', () => {
    expect(isIdentifier('rate_2')).to.equal(true);
    for (const bad of ['', 'Rate', '2rate', 'rate-x', 'a`b', 'a b', 'x'.repeat(65)]) {
      expect(isIdentifier(bad), bad).to.equal(false);
    }
    expect(() => quoteIdentifier('a`; DROP TABLE x')).to.throw(/unvalidated identifier/);
    expect(tableNameProblem(`${'x'.repeat(58)}_000001`)).to.match(
      /65 characters long; MySQL allows 64/,
    );
    expect(tableNameProblem('ok_000001')).to.equal(undefined);
  });
});
