// The integer range of index columns narrower than ours, and the refusal of values they cannot
// hold (pure; gem.test.ts refuses such a Put against the gem's tables).
import { expect } from 'chai';
import { InvalidArgumentError } from '../../../src/engine/base/errors.js';
import { IndexColumns, integerRangeOf } from '../../../src/engine/model/indexColumns.js';
import type { IndexSpec } from '../../../src/engine/model/model.js';

describe('index columns narrower than BIGINT (pure)', () => {
  it('knows the range of every integer type narrower than BIGINT, signed or not', () => {
    const range = (type: string) => {
      const found = integerRangeOf(type);
      return found && [found.min, found.max];
    };
    expect(range('int(11)')).to.deep.equal([-(2n ** 31n), 2n ** 31n - 1n]);
    expect(range('INT')).to.deep.equal([-(2n ** 31n), 2n ** 31n - 1n]);
    expect(range('int(10) unsigned')).to.deep.equal([0n, 2n ** 32n - 1n]);
    expect(range('mediumint(9)')).to.deep.equal([-(2n ** 23n), 2n ** 23n - 1n]);
    expect(range('smallint unsigned zerofill')).to.deep.equal([0n, 65535n]);
    expect(range('tinyint(1)')).to.deep.equal([-128n, 127n]);
    for (const wide of ['bigint(20)', 'bigint unsigned', 'varchar(255)', 'decimal(10,0)']) {
      expect(range(wide), wide).to.equal(undefined);
    }
  });

  it("refuses a value its table's column cannot hold, naming the field, the table and the range", () => {
    const columns = new IndexColumns();
    const index: IndexSpec = {
      name: '',
      fields: [
        { name: 'hotel_id', type: 'integer' },
        { name: 'room_type', type: 'string' },
      ],
      shardOn: 'hotel_id',
    };
    columns.learn(
      'gem_index',
      new Map([
        ['hotel_id', 'int(11)'],
        ['room_type', 'varchar(255)'],
        ['uuid', 'varchar(36)'],
      ]),
    );
    columns.learn('our_index', new Map([['hotel_id', 'bigint(20)']]));
    columns.requireFit('gem_index', index, [2 ** 31 - 1, 'double'], 'values');
    columns.requireFit('gem_index', index, [-(2n ** 31n), 'double'], 'values');
    columns.requireFit('our_index', index, [2n ** 62n, 'double'], 'values');
    columns.requireFit('never_inspected', index, [2n ** 62n, 'double'], 'values');
    const refusal = (() => {
      try {
        columns.requireFit('gem_index', index, [3_000_000_000, 'double'], 'puts[2].values');
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).to.be.instanceOf(InvalidArgumentError);
    expect((refusal as InvalidArgumentError).field).to.equal('puts[2].values');
    expect((refusal as Error).message).to.contain(
      'hotel_id 3000000000 does not fit the column of index table gem_index (int(11): -2147483648 to 2147483647)',
    );
  });
});
