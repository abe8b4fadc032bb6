// The primary-key cache's bounds, and how a put picks its first step (pure).
import { expect } from 'chai';
import { PrimaryKeyCache } from '../../../src/engine/read/primaryKeyCache.js';
import { PutRoutes } from '../../../src/engine/write/putRoute.js';

describe('primary-key cache (pure)', () => {
  it('holds at most its capacity, dropping what was not used since the older half filled', () => {
    const cache = new PrimaryKeyCache(4);
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, `uuid-${key}`);
    expect(cache.size).to.equal(4);
    expect(cache.get('a'), 'read back from the old half, and kept').to.equal('uuid-a');
    cache.set('e', 'uuid-e');
    expect(cache.size).to.be.at.most(4);
    expect(cache.get('a')).to.equal('uuid-a');
    expect(cache.get('e')).to.equal('uuid-e');
    expect(cache.get('b'), 'unused since, dropped').to.equal(undefined);
    for (let i = 0; i < 1000; i++) cache.set(`k${i}`, `u${i}`);
    expect(cache.size).to.be.at.most(4);
    expect(cache.get('k999')).to.equal('u999');
  });

  it('forgets a deleted key, and counts hits and misses', () => {
    const cache = new PrimaryKeyCache(10);
    cache.set('a', 'x');
    cache.set('a', 'y');
    expect(cache.get('a')).to.equal('y');
    cache.delete('a');
    expect(cache.get('a')).to.equal(undefined);
    expect(cache.stats).to.deep.equal({ hits: 1, misses: 1 });
  });

  it('remembers nothing with a capacity of 0, and refuses a negative one', () => {
    const cache = new PrimaryKeyCache(0);
    cache.set('a', 'x');
    expect(cache.get('a')).to.equal(undefined);
    expect(cache.size).to.equal(0);
    expect(() => new PrimaryKeyCache(-1)).to.throw(RangeError);
  });
});

describe('a put’s first step for values not remembered (pure)', () => {
  it('tries the create first for a new model, and looks up once most misses were existing values', () => {
    const routes = new PutRoutes();
    expect(routes.firstStep('rate')).to.equal('create');
    let observed = 0;
    while (routes.firstStep('rate') === 'create') {
      routes.observe('rate', false);
      observed += 1;
      expect(observed, 'turns within a handful of misses').to.be.below(20);
    }
    expect(routes.firstStep('other'), 'each model on its own').to.equal('create');
    while (routes.firstStep('rate') === 'lookup') routes.observe('rate', true);
    expect(routes.firstStep('rate')).to.equal('create');
  });

  it('keeps trying the create first while well over two thirds of the misses are new values', () => {
    const routes = new PutRoutes();
    for (let i = 0; i < 200; i++) {
      routes.observe('rate', i % 4 !== 0);
      expect(routes.firstStep('rate')).to.equal('create');
    }
  });
});
