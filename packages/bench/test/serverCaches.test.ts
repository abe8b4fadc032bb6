// The server's cache counters in a run's window, read from a real `shameless serve`: what the
// bench prints beside each SDK run, so a full run's slower writes can be told from a cold cache.
import assert from 'node:assert/strict';
import { type BenchStore, seededRate } from '../src/subjects/benchStore.js';
import { runClosedLoop } from '../src/load/closedLoop.js';
import { samplesOf } from '../src/measure/metricsScrape.js';
import { CacheMeter, cacheLookupsOf, formatCacheLookups } from '../src/measure/serverCaches.js';
import { openTestBenchStore } from './support/testBenchStore.js';

describe('server caches in a run window', function () {
  let bench: BenchStore;

  before(async () => {
    bench = await openTestBenchStore({ metrics: true });
  });
  after(async () => {
    await bench?.close();
  });

  it('counts the lookups of the window only: the updates of records the server created hit', async () => {
    const values = seededRate(77, 1);
    // Before the window: the create, and so the record's cells, remembered; then updates that
    // the window must not count.
    await bench.rate.put({ ...values, net_price: 1 });
    for (let i = 0; i < 100; i++) await bench.rate.put({ ...values, net_price: 1 });
    const meter = new CacheMeter(bench.metricsUrl!);
    const result = await runClosedLoop(
      async () => void (await bench.rate.put({ ...values, net_price: 2 })),
      { concurrency: 1, warmupMs: 1, durationMs: 200, window: meter },
    );
    const lookups = await meter.lookups();
    assert.ok(lookups, 'both edges read');
    assert.ok(lookups.versionHits > 0, JSON.stringify(lookups));
    assert.equal(lookups.versionMisses, 0, JSON.stringify(lookups));
    assert.ok(lookups.primaryKeyHits > 0, JSON.stringify(lookups));
    // The window's puts, give or take those the scrapes, a moment after each edge, let through.
    const offBy = Math.abs(lookups.primaryKeyHits - result.operations);
    assert.ok(offBy <= 5 + result.operations / 10, `${offBy} off ${result.operations}`);
    assert.match(formatCacheLookups(lookups), /^version cache [\d,]+ hits, 0 misses; primary keys/);
  });

  it('reads 0 for a counter a scrape does not have, and says nothing of caches not asked', () => {
    const lookups = cacheLookupsOf(
      samplesOf(
        [
          '# HELP shameless_version_cache_lookups_total Writes that asked the version cache',
          '# TYPE shameless_version_cache_lookups_total counter',
          'shameless_version_cache_lookups_total{result="hit"} 12',
          'shameless_version_cache_lookups_total{result="miss"} 3',
        ].join('\n'),
      ),
    );
    assert.deepEqual(lookups, {
      versionHits: 12,
      versionMisses: 3,
      versionStale: 0,
      primaryKeyHits: 0,
      primaryKeyMisses: 0,
    });
    assert.equal(formatCacheLookups(lookups), 'version cache 12 hits, 3 misses');
    assert.equal(formatCacheLookups({ ...lookups, versionHits: 0, versionMisses: 0 }), '');
  });
});
