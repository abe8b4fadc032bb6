import { expect } from 'chai';
import { ManualClock } from '../../src/transport/call/clock.js';
import { EndpointPool, EndpointSelector } from '../../src/transport/policy/endpoints.js';

describe('endpoint selection', () => {
  it('picks round robin', () => {
    const selector = new EndpointSelector(['a:1', 'b:1', 'c:1']);
    const picks = Array.from({ length: 6 }, () => selector.pickAddress());
    expect(picks).to.deep.equal(['a:1', 'b:1', 'c:1', 'a:1', 'b:1', 'c:1']);
  });

  it('picks a different endpoint than the excluded ones where there is one', () => {
    const selector = new EndpointSelector(['a:1', 'b:1']);
    expect(selector.pickAddress(new Set(['a:1']))).to.equal('b:1');
    expect(selector.pickAddress(new Set(['a:1']))).to.equal('b:1');
    expect(selector.pickAddress(new Set(['b:1']))).to.equal('a:1');
    // All excluded: still answers (a retry on the only endpoint).
    expect(['a:1', 'b:1']).to.include(selector.pickAddress(new Set(['a:1', 'b:1'])));
    const single = new EndpointSelector(['only:1']);
    expect(single.pickAddress(new Set(['only:1']))).to.equal('only:1');
  });

  it('avoids an endpoint marked down until the mark expires', async () => {
    const clock = new ManualClock();
    const selector = new EndpointSelector(['a:1', 'b:1'], { downMs: 100, clock });
    selector.markDown('a:1');
    expect([1, 2, 3, 4].map(() => selector.pickAddress())).to.deep.equal([
      'b:1',
      'b:1',
      'b:1',
      'b:1',
    ]);
    await clock.advance(100);
    expect(selector.isDown('a:1')).to.equal(false);
    expect(new Set([1, 2].map(() => selector.pickAddress()))).to.deep.equal(
      new Set(['a:1', 'b:1']),
    );
  });

  it('prefers a down endpoint not yet tried over an excluded healthy one', () => {
    const selector = new EndpointSelector(['a:1', 'b:1']);
    selector.markDown('b:1');
    expect(selector.pickAddress(new Set(['a:1']))).to.equal('b:1');
  });

  it('uses a down endpoint when every endpoint is down, and markUp clears the mark', () => {
    const selector = new EndpointSelector(['a:1', 'b:1']);
    selector.markDown('a:1');
    selector.markDown('b:1');
    expect(['a:1', 'b:1']).to.include(selector.pickAddress());
    selector.markUp('b:1');
    expect(selector.pickAddress()).to.equal('b:1');
  });

  it('drops duplicates and refuses an empty list', () => {
    expect(new EndpointSelector(['a:1', 'a:1', 'b:1']).addresses).to.deep.equal(['a:1', 'b:1']);
    expect(() => new EndpointSelector([])).to.throw(TypeError);
    expect(() => new EndpointSelector([''])).to.throw(TypeError);
  });

  it('EndpointPool makes one client per endpoint and closes them all', () => {
    const pool = new EndpointPool({ endpoints: ['127.0.0.1:1', '127.0.0.1:2'] });
    const a = pool.pick();
    const b = pool.pick(new Set([a.address]));
    expect(a.address).to.not.equal(b.address);
    expect(a.client).to.not.equal(b.client);
    expect(pool.get(a.address)).to.equal(a);
    pool.close();
    expect(pool.closed).to.equal(true);
  });
});
