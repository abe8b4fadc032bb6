// The consistency a read coalesced for several calls is made with: the one that satisfies them
// all, and no stricter, so that a turn of session and bounded reads can still read a replica.
import { expect } from 'chai';
import { STRONG, sharedConsistency } from '../../../src/engine/base/consistency.js';
import { parsePosition } from '../../../src/engine/base/gtidPosition.js';

const session = (text?: string) =>
  ({
    mode: 'session',
    after: text === undefined ? new Map() : new Map([[0, parsePosition(text)]]),
  }) as const;
const bounded = (maxStalenessMs: number) => ({ mode: 'bounded', maxStalenessMs }) as const;

describe('sharedConsistency', () => {
  it('is strong when one caller is strong or says nothing', () => {
    expect(sharedConsistency([session(), STRONG, bounded(10)])).to.deep.equal(STRONG);
    expect(sharedConsistency([bounded(10), undefined])).to.deep.equal(STRONG);
  });

  it('keeps one mode when the callers agree: every session position, the tightest bound', () => {
    const shared = sharedConsistency([session('0-1-5'), session('0-1-7')]);
    expect(shared).to.deep.equal({
      mode: 'session',
      after: new Map([[0, parsePosition('0-1-7')]]),
    });
    expect(sharedConsistency([bounded(5000), bounded(200)])).to.deep.equal(bounded(200));
  });

  it('session and bounded callers together: the session positions within the tightest bound, not the primary', () => {
    const shared = sharedConsistency([bounded(5000), session('0-1-9'), bounded(300), session()]);
    expect(shared).to.deep.equal({
      mode: 'session',
      after: new Map([[0, parsePosition('0-1-9')]]),
      maxStalenessMs: 300,
    });
  });
});
