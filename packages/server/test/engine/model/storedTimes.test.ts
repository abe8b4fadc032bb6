// What a created_at column keeps of a time (pure).
import { expect } from 'chai';
import { StoredTimes } from '../../../src/engine/model/storedTimes.js';

describe('stored times (pure)', () => {
  const at = new Date('2026-11-25T10:20:30.456Z');

  it('cuts a time to the fractional digits a DATETIME keeps', () => {
    const times = new StoredTimes('datetime');
    times.learn('t0', 0);
    times.learn('t1', 1);
    times.learn('t3', 3);
    times.learn('t6', 6);
    expect(times.asStored('t0', at)?.toISOString()).to.equal('2026-11-25T10:20:30.000Z');
    expect(times.asStored('t1', at)?.toISOString()).to.equal('2026-11-25T10:20:30.400Z');
    expect(times.asStored('t3', at)?.toISOString()).to.equal(at.toISOString());
    expect(times.asStored('t6', at)?.toISOString()).to.equal(at.toISOString());
  });

  it('knows nothing of a table not inspected, and keeps milliseconds in a BIGINT store', () => {
    expect(new StoredTimes('datetime').asStored('unknown', at)).to.equal(undefined);
    expect(new StoredTimes('bigint').asStored('unknown', at)?.getTime()).to.equal(at.getTime());
  });
});
