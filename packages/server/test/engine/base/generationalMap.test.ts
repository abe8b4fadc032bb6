// The bounded map of the engine's caches and of each connection's prepared statements: what an
// old generation drops is told, so that its owner can let go of it (a prepared statement
// closed); what is in use moves back to the young generation and is not dropped.
import { expect } from 'chai';
import { GenerationalMap } from '../../../src/engine/base/generationalMap.js';

describe('GenerationalMap', () => {
  it('tells each entry an old generation drops, and only those', () => {
    const dropped: string[] = [];
    const map = new GenerationalMap<number>(4, undefined, (key) => dropped.push(key));
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3); // generations of two: a and b are old now, c young
    expect(map.get('a')).to.equal(1); // in use: back to the young generation, beside c
    map.set('b', 20); // replaced: young again, and c and a are the old generation
    map.delete('c'); // deleted: its owner knows
    expect(dropped).to.deep.equal([]);
    map.set('d', 4); // young: b, d
    map.set('e', 5); // the young generation was full: the old one (a) goes
    expect(dropped).to.deep.equal(['a']);
    expect([...'bde'].map((key) => map.get(key))).to.deep.equal([20, 4, 5]);
  });
});
