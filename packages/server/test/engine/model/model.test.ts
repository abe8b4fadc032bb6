import { expect } from 'chai';
import {
  CompiledModel,
  type ModelSpec,
  compareDefinitions,
  normaliseModelSpec,
} from '../../../src/engine/model/model.js';

const rate: ModelSpec = {
  name: 'rate',
  primaryIndex: {
    name: 'anything',
    fields: [
      { name: 'hotel_id', type: 'integer' },
      { name: 'room_type', type: 'string' },
    ],
    shardOn: 'hotel_id',
  },
  secondaryIndices: [
    {
      name: 'by_gateway',
      fields: [
        { name: 'hotel_id', type: 'integer' },
        { name: 'gateway', type: 'string' },
      ],
      shardOn: 'hotel_id',
    },
  ],
  cells: ['meta', 'base', 'meta'],
};

describe('model definitions (pure)', () => {
  it('normalises: primary index named primary, base implicit, cells sorted and unique', () => {
    const spec = normaliseModelSpec(rate, 'ns');
    expect(spec.primaryIndex.name).to.equal('primary');
    expect(spec.cells).to.deep.equal(['meta']);
  });

  it('names the offending field of an invalid definition', () => {
    const cases: [Partial<ModelSpec>, RegExp][] = [
      [{ name: 'Rate' }, /^model.name:/],
      [
        { primaryIndex: { ...rate.primaryIndex, fields: [] } },
        /^model.primary_index.fields: an index needs at least one field/,
      ],
      [
        { primaryIndex: { ...rate.primaryIndex, shardOn: 'nope' } },
        /^model.primary_index.shard_on: must name one of the index's fields/,
      ],
      [
        {
          primaryIndex: {
            ...rate.primaryIndex,
            fields: [{ name: 'uuid', type: 'integer' }],
            shardOn: 'uuid',
          },
        },
        /fields\[0\].name/,
      ],
      [
        { secondaryIndices: [rate.secondaryIndices[0]!, rate.secondaryIndices[0]!] },
        /^model.secondary_indices\[1\].name: index by_gateway is defined twice/,
      ],
      [
        {
          secondaryIndices: [
            { name: 'x', fields: [{ name: 'room_type', type: 'integer' }], shardOn: 'room_type' },
          ],
        },
        /room_type is integer in index x but string in index primary/,
      ],
      [{ cells: ['Bad'] }, /^model.cells\[0\]:/],
      // An index table name past 64 characters: the index's name is what to shorten.
      [
        { secondaryIndices: [{ ...rate.secondaryIndices[0]!, name: 'by'.repeat(25) }] },
        /^model.secondary_indices\[0\].name: table name ns_rate_(by)+_index_999999 is 71 characters long/,
      ],
      // Its place in the request, not in the sorted cells without base.
      [{ cells: ['meta', 'base', 'Bad'] }, /^model.cells\[2\]:/],
      [
        {
          primaryIndex: {
            ...rate.primaryIndex,
            fields: ['a', 'b', 'c']
              .map((name) => ({ name, type: 'string' as const }))
              .concat([{ name: 'h', type: 'string' }]),
            shardOn: 'a',
          },
        },
        /shard_on|bytes/,
      ],
    ];
    for (const [change, pattern] of cases) {
      expect(() => normaliseModelSpec({ ...rate, ...change }, 'ns'), String(pattern)).to.throw(
        pattern,
      );
    }
  });

  it('allows adding cells, keeps stored cells an older definition lacks, refuses index changes', () => {
    const stored = normaliseModelSpec(rate, '');
    expect(compareDefinitions(stored, stored)).to.deep.equal({ change: 'none', cells: ['meta'] });
    expect(compareDefinitions(stored, { ...stored, cells: ['meta', 'ota'] })).to.deep.equal({
      change: 'adds_cells',
      cells: ['meta', 'ota'],
    });
    expect(compareDefinitions(stored, { ...stored, cells: [] })).to.deep.equal({
      change: 'none',
      cells: ['meta'],
    });
    expect(compareDefinitions(stored, { ...stored, secondaryIndices: [] })).to.deep.equal({
      change: 'conflict',
      reason:
        'model rate is already defined with other indices: stored index by_gateway ' +
        '(hotel_id integer, gateway string; shard_on hotel_id) is not in the request; ' +
        'only cells may be added, so define the new shape under another model name (or namespace)',
    });
    const narrower = {
      ...stored.primaryIndex,
      fields: stored.primaryIndex.fields.slice(0, 1),
    };
    const changed = compareDefinitions(stored, {
      ...stored,
      primaryIndex: narrower,
      secondaryIndices: [...stored.secondaryIndices, { ...narrower, name: 'extra' }],
    });
    expect(changed)
      .to.have.property('reason')
      .that.matches(
        /index primary is stored as \(hotel_id integer, room_type string; shard_on hotel_id\), requested as \(hotel_id integer; shard_on hotel_id\); the request adds index extra \(hotel_id integer; shard_on hotel_id\); only cells/,
      );
  });

  it('knows which index owns each field', () => {
    const model = new CompiledModel(normaliseModelSpec(rate, ''));
    expect(model.indexOfField.get('gateway')).to.deep.equal({
      index: 'by_gateway',
      type: 'string',
    });
    expect(model.indexOfField.get('hotel_id')).to.deep.equal({ index: 'primary', type: 'integer' });
    expect(model.secondaryFields).to.deep.equal([{ name: 'gateway', type: 'string' }]);
    expect([...model.cellNames]).to.deep.equal(['base', 'meta']);
  });
});
