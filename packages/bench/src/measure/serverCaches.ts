// What the server's caches answered in a run's measured window, read from its Prometheus
// counters at the window's edges. A write whose cell the version cache does not remember, or a
// put or point Where whose primary values the primary-key cache does not, takes a round trip
// more: CPU per operation shows what that costs, these show why (a full run's updates of records
// created long before, say, against a quick run's).
import type { MeasuredWindow } from '../load/measuredWindow.js';
import { scrapeMetrics } from './metricsScrape.js';

export interface CacheLookups {
  readonly versionHits: number;
  readonly versionMisses: number;
  /** Remembered versions that a write found were no longer the latest. */
  readonly versionStale: number;
  readonly primaryKeyHits: number;
  readonly primaryKeyMisses: number;
}

const COUNTERS: Readonly<Record<keyof CacheLookups, string>> = {
  versionHits: 'shameless_version_cache_lookups_total{result="hit"}',
  versionMisses: 'shameless_version_cache_lookups_total{result="miss"}',
  versionStale: 'shameless_version_cache_lookups_total{result="stale"}',
  primaryKeyHits: 'shameless_primary_key_cache_lookups_total{result="hit"}',
  primaryKeyMisses: 'shameless_primary_key_cache_lookups_total{result="miss"}',
};

const LOOKUPS = Object.keys(COUNTERS) as (keyof CacheLookups)[];

/** Each lookup's count, as `count` gives it. */
function eachLookup(count: (lookup: keyof CacheLookups) => number): CacheLookups {
  return Object.fromEntries(LOOKUPS.map((lookup) => [lookup, count(lookup)])) as Record<
    keyof CacheLookups,
    number
  >;
}

/** The lookup counters among a scrape's samples (metricsScrape.ts); a counter not there reads 0. */
export function cacheLookupsOf(samples: ReadonlyMap<string, number>): CacheLookups {
  return eachLookup((lookup) => samples.get(COUNTERS[lookup]) ?? 0);
}

/** The lookups counted from `before` to `after`. */
export function lookupsBetween(before: CacheLookups, after: CacheLookups): CacheLookups {
  return eachLookup((lookup) => after[lookup] - before[lookup]);
}

/** As the progress line says it; empty when the run asked neither cache. */
export function formatCacheLookups(lookups: CacheLookups): string {
  const parts: string[] = [];
  const count = (n: number) => n.toLocaleString('en-US');
  const versions = lookups.versionHits + lookups.versionMisses;
  if (versions > 0) {
    parts.push(
      `version cache ${count(lookups.versionHits)} hits, ${count(lookups.versionMisses)} misses` +
        (lookups.versionStale > 0 ? `, ${count(lookups.versionStale)} stale` : ''),
    );
  }
  if (lookups.primaryKeyHits + lookups.primaryKeyMisses > 0) {
    parts.push(
      `primary keys ${count(lookups.primaryKeyHits)} hits, ${count(lookups.primaryKeyMisses)} misses`,
    );
  }
  return parts.join('; ');
}

/**
 * Reads the server's counters at each edge of a run's window. A scrape is an HTTP request the
 * server answers between its calls, so each reading lands a moment after its edge.
 */
export class CacheMeter implements MeasuredWindow {
  #before: Promise<CacheLookups> | undefined;
  #after: Promise<CacheLookups> | undefined;

  constructor(private readonly metricsUrl: string) {}

  open(): void {
    this.#before = this.read();
    // Read later, if at all: an unread failure must not end the process.
    this.#before.catch(() => undefined);
  }

  close(): void {
    this.#after = this.read();
    this.#after.catch(() => undefined);
  }

  /** The lookups in the window; undefined when an edge's scrape failed or never ran. */
  async lookups(): Promise<CacheLookups | undefined> {
    if (!this.#before || !this.#after) return undefined;
    try {
      return lookupsBetween(await this.#before, await this.#after);
    } catch {
      return undefined;
    }
  }

  private async read(): Promise<CacheLookups> {
    return cacheLookupsOf(await scrapeMetrics(this.metricsUrl));
  }
}
