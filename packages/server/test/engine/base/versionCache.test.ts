// The version cache and the backoff of one-round-trip writes, alone: what is remembered, what
// is not, and how often a partition tries again after stale tries.
import { expect } from 'chai';
import { testMysqlUrl } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { OneTripBackoff } from '../../../src/engine/mysql/oneTripBackoff.js';
import { MAX_REMEMBERED_BODY_BYTES, VersionCache } from '../../../src/engine/base/versionCache.js';
import { fullCollection } from '../../../src/serving/memoryRelease.js';

/** A full collection, so that what nothing holds is freed now. */
const collectGarbage = fullCollection();

describe('VersionCache', () => {
  it('answers the version last remembered for a cell of a table, and counts lookups', () => {
    const cache = new VersionCache(10);
    const body = Buffer.from('body');
    cache.set('t1', 'u', 'base', 3, body);
    cache.set('t1', 'u', 'base', 4, body);
    expect(cache.get('t1', 'u', 'base')).to.deep.include({ refKey: 4, body });
    expect(cache.get('t2', 'u', 'base')).to.equal(undefined);
    expect(cache.get('t1', 'u', 'meta')).to.equal(undefined);
    expect(cache.stats()).to.deep.include({ entries: 1, hits: 1, misses: 2, stale: 0 });
  });

  it('keeps the version of a cell whose body is too large, without the body', () => {
    const cache = new VersionCache(10);
    cache.set('t', 'u', 'base', 1, Buffer.alloc(MAX_REMEMBERED_BODY_BYTES + 1));
    expect(cache.get('t', 'u', 'base')).to.deep.include({ refKey: 1, body: undefined });
    const fits = Buffer.alloc(MAX_REMEMBERED_BODY_BYTES, 7);
    cache.set('t', 'u', 'base', 2, fits);
    expect(cache.get('t', 'u', 'base')?.body).to.deep.equal(fits);
  });

  it('keeps a copy of a body, not the memory the body was a view into', async () => {
    const cache = new VersionCache(1_000_000);
    // As a network chunk holding a whole result, of which the cache keeps one body.
    const chunk = ((): WeakRef<ArrayBufferLike> => {
      const bytes = Buffer.alloc(1024 * 1024, 1);
      cache.set('t', 'u', 'base', 1, bytes.subarray(5000, 5022));
      return new WeakRef(bytes.buffer);
    })();
    await new Promise(setImmediate);
    collectGarbage();
    expect(chunk.deref(), 'the chunk, freed').to.equal(undefined);
    expect(cache.get('t', 'u', 'base')!.body).to.deep.equal(Buffer.alloc(22, 1));
  });

  it('keeps every byte of a body read by mysql2, which reads it as a view into a packet', async () => {
    const connection = await mysql.createConnection(await testMysqlUrl());
    try {
      const [rows] = await connection.query<mysql.RowDataPacket[]>(
        "SELECT CAST(X'81a16100ff80' AS BINARY) AS body, REPEAT('x', 2000) AS other",
      );
      const read = rows[0]!.body as Buffer;
      expect(read.buffer.byteLength, 'mysql2 reads a view').to.be.above(2000);
      const cache = new VersionCache(1_000_000);
      cache.set('t', 'u', 'base', 0, read);
      const body = Buffer.from([0x81, 0xa1, 0x61, 0x00, 0xff, 0x80]);
      expect(cache.get('t', 'u', 'base')!.body).to.deep.equal(body);
    } finally {
      await connection.end();
    }
  });

  it('keeps bodies of every byte value exactly', () => {
    const cache = new VersionCache(1_000_000);
    const body = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    cache.set('t', 'u', 'base', 0, body);
    expect(cache.get('t', 'u', 'base')!.body).to.deep.equal(body);
    cache.set('t', 'v', 'base', 0, Buffer.alloc(0));
    expect(cache.get('t', 'v', 'base')!.body).to.deep.equal(Buffer.alloc(0));
  });

  it('forgets a stale cell and counts it', () => {
    const cache = new VersionCache(10);
    cache.set('t', 'u', 'base', 1, undefined);
    cache.forget('t', 'u', 'base');
    expect(cache.get('t', 'u', 'base')).to.equal(undefined);
    expect(cache.stats()).to.deep.include({ entries: 0, stale: 1 });
  });

  /** A capacity of `cells` cells of 1,000-byte bodies with their keys. */
  const capacityOf = (cells: number) => {
    const probe = new VersionCache(1_000_000);
    probe.set('t', 'u0', 'base', 0, Buffer.alloc(1000));
    return cells * probe.stats().bytes;
  };

  it('holds at most about its bytes, those used lately, and nothing with 0 bytes', () => {
    const body = Buffer.alloc(1000);
    const capacity = capacityOf(100);
    const cache = new VersionCache(capacity);
    cache.set('t', 'kept', 'base', 0, body);
    for (let i = 0; i < 1000; i++) {
      cache.set('t', `u${i}`, 'base', i, body);
      cache.setCreated('t', `c${i}`, 'base', 0, body);
      expect(cache.get('t', 'kept', 'base'), `in use, after ${i}`).to.not.equal(undefined);
    }
    const { bytes, entries } = cache.stats();
    expect(bytes).to.be.at.most(capacity);
    // Three quarters for cells written to, a quarter for those of records created, each
    // between half full (just after its older half went) and full.
    expect(entries).to.be.within(50, 100);
    expect(cache.get('t', 'u999', 'base')?.refKey).to.equal(999);
    expect(cache.get('t', 'c999', 'base')?.refKey).to.equal(0);
    expect(cache.get('t', 'u0', 'base')).to.equal(undefined);
    expect(cache.get('t', 'c0', 'base')).to.equal(undefined);
    const none = new VersionCache(0);
    none.set('t', 'u', 'base', 1, undefined);
    none.setCreated('t', 'v', 'base', 0, undefined);
    expect(none.get('t', 'u', 'base')).to.equal(undefined);
    expect(none.get('t', 'v', 'base')).to.equal(undefined);
    expect(none.stats().entries).to.equal(0);
  });

  it('keeps the cells written to through any number of records created', () => {
    const body = Buffer.alloc(1000);
    const capacity = capacityOf(100);
    const cache = new VersionCache(capacity);
    const written = Array.from({ length: 30 }, (_, i) => `w${i}`);
    for (const uuid of written) cache.set('t', uuid, 'base', 1, body);
    // A record created and then written to: its cell is in use from the write's lookup on.
    cache.setCreated('t', 'created', 'base', 0, body);
    expect(cache.get('t', 'created', 'base')?.refKey).to.equal(0);
    // As a stream of creates, or an import: records never written to again.
    for (let i = 0; i < 10_000; i++) cache.setCreated('t', `new${i}`, 'base', 0, body);
    for (const uuid of [...written, 'created']) {
      expect(cache.get('t', uuid, 'base'), uuid).to.not.equal(undefined);
    }
    expect(cache.get('t', 'new9999', 'base')?.refKey, 'the last created').to.equal(0);
    expect(cache.get('t', 'new0', 'base'), 'the first created').to.equal(undefined);
    expect(cache.stats().bytes).to.be.at.most(capacity);
  });

  it('counts an entry once, however often it is set or forgotten', () => {
    const cache = new VersionCache(1_000_000);
    for (let i = 0; i < 10; i++) cache.set('t', 'u', 'base', i, Buffer.alloc(100));
    const one = cache.stats().bytes;
    cache.set('t', 'v', 'base', 0, Buffer.alloc(100));
    expect(cache.stats().bytes).to.equal(2 * one);
    cache.forget('t', 'u', 'base');
    cache.forget('t', 'u', 'base');
    expect(cache.stats()).to.deep.include({ entries: 1, bytes: one });
  });
});

describe('OneTripBackoff', () => {
  /** How many of the next `n` groups would be tried. */
  const tried = (backoff: OneTripBackoff, n: number) =>
    Array.from({ length: n }, () => backoff.shouldTry()).filter(Boolean).length;

  it('tries every group until a try is stale', () => {
    expect(tried(new OneTripBackoff(), 20)).to.equal(20);
  });

  it('after f stale tries in a row lets the next 2^f − 1 groups go the usual way, at most 15', () => {
    const backoff = new OneTripBackoff();
    for (const skipped of [1, 3, 7, 15, 15, 15]) {
      backoff.failed();
      for (let i = 0; i < skipped; i++) expect(backoff.shouldTry(), `group ${i}`).to.equal(false);
      expect(backoff.shouldTry()).to.equal(true);
    }
  });

  it('tries every group again once a try commits', () => {
    const backoff = new OneTripBackoff();
    backoff.failed();
    backoff.failed();
    expect(tried(backoff, 4)).to.equal(1);
    backoff.succeeded();
    backoff.failed();
    expect(backoff.shouldTry()).to.equal(false);
    expect(tried(backoff, 5)).to.equal(5);
  });
});
