// The records a server remembers to exist: per model, bounded (pure).
import { expect } from 'chai';
import { KnownRecords } from '../../../src/engine/write/knownRecords.js';

describe('known records (pure)', () => {
  it('remembers a record per model, within its capacity, keeping those asked about', () => {
    const known = new KnownRecords(4);
    known.add('rate', 'a');
    expect(known.has('rate', 'a')).to.equal(true);
    expect(known.has('hotel', 'a'), 'another model').to.equal(false);
    expect(known.has('rate', 'b')).to.equal(false);
    for (const uuid of ['b', 'c', 'd']) known.add('rate', uuid);
    expect(known.has('rate', 'a'), 'asked about: kept').to.equal(true);
    for (let i = 0; i < 100; i++) known.add('rate', `u${i}`);
    expect(known.size).to.be.at.most(4);
    expect(known.has('rate', 'u99')).to.equal(true);
    expect(known.has('rate', 'b'), 'not asked about since: dropped').to.equal(false);
  });

  it('remembers nothing with a capacity of 0, and refuses a negative one', () => {
    const known = new KnownRecords(0);
    known.add('rate', 'a');
    expect(known.has('rate', 'a')).to.equal(false);
    expect(known.size).to.equal(0);
    expect(() => new KnownRecords(-1)).to.throw(RangeError);
  });
});
