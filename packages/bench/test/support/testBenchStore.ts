// A bench store for tests: a real `shameless serve` of 4 shards over a throwaway database of
// the test MariaDB, dropped when the store closes.
import { randomBytes } from 'node:crypto';
import { mysqlUrlFromEnv } from '@shameless/testkit';
import { type BenchStore, openBenchStore } from '../../src/subjects/benchStore.js';

/** With `metrics`, the server serves its Prometheus metrics too. */
export function openTestBenchStore(options: { metrics?: boolean } = {}): Promise<BenchStore> {
  return openBenchStore({
    mysqlUrl: mysqlUrlFromEnv(),
    database: `shameless_test_bench_${process.pid}_${randomBytes(3).toString('hex')}`,
    shardsCount: 4,
    poolSize: 4,
    coalesce: true,
    pipeline: true,
    ...(options.metrics ? { metrics: true } : {}),
  });
}
