// The suite's warm-up runs every workload it is given, through the SDK and each baseline, at
// 16 in flight and then one at a time, and leaves out a workload that prepares records of its
// own. Against a real `shameless serve` and MariaDB: the warm-up's writes reach the store.
import assert from 'node:assert/strict';
import { type BenchStore, type SeededSet, seedRates } from '../src/subjects/benchStore.js';
import { BaselineTables } from '../src/subjects/mysqlBaseline.js';
import { warmUp } from '../src/workloads/warmUp.js';
import { type Workload, getCell, putUpdate } from '../src/workloads/workloads.js';
import { silentProgress } from './support/silentProgress.js';
import { openTestBenchStore } from './support/testBenchStore.js';

/** How often, and at most how many at once, each of a workload's operations ran. */
class Calls {
  private readonly counts = new Map<string, { calls: number; inFlight: number; most: number }>();

  /** `workload` with each of its operations counted under `name/sdk`, `name/mysql`, `name/gem`. */
  counted(workload: Workload): Workload {
    const wrap =
      <C extends unknown[]>(
        kind: string,
        make: ((...given: C) => (worker: number) => Promise<unknown>) | undefined,
      ) =>
      (...given: C) => {
        const operation = make!(...given);
        const entry = { calls: 0, inFlight: 0, most: 0 };
        this.counts.set(`${workload.id}/${kind}`, entry);
        return async (worker: number) => {
          entry.calls += 1;
          entry.most = Math.max(entry.most, ++entry.inFlight);
          try {
            await operation(worker);
          } finally {
            entry.inFlight -= 1;
          }
        };
      };
    return {
      ...workload,
      sdk: wrap('sdk', workload.sdk),
      ...(workload.mysql ? { mysql: wrap('mysql', workload.mysql) } : {}),
      ...(workload.gem ? { gem: wrap('gem', workload.gem) } : {}),
    } as Workload;
  }

  of(key: string) {
    return this.counts.get(key);
  }
}

describe('the suite warm-up', function () {
  this.timeout(60_000);
  let bench: BenchStore;
  let seeded: SeededSet;
  let baselineSeeded: SeededSet;

  before(async () => {
    bench = await openTestBenchStore();
    const seed = (firstHotel: number) =>
      seedRates(bench.rate, { firstHotel, hotels: 2, perHotel: 5, bodyBytes: 100 }, silentProgress);
    seeded = await seed(1);
    baselineSeeded = await seed(101);
  });

  after(() => bench?.close());

  it('runs each workload through the SDK and its baselines, 16 at once then one', async () => {
    const calls = new Calls();
    const prepared: Workload = {
      ...getCell,
      id: 'prepared',
      prepare: () => Promise.reject(new Error('a prepared workload is not warmed')),
      sdk: () => () => Promise.reject(new Error('a prepared workload is not warmed')),
    };
    const tables = new BaselineTables('rate', bench.settings.shardsCount);
    const versionBefore = (await bench.rate.find(seeded.uuids[0]!))!.base.refKey!;

    await warmUp(
      bench,
      {
        tables,
        seeded: new Map([[100, seeded]]),
        baselineSeeded: new Map([[100, baselineSeeded]]),
      },
      {
        workloads: [putUpdate, getCell, prepared].map((workload) => ({
          workload: calls.counted(workload),
          bodyBytes: 100,
        })),
        durationMs: 2000,
      },
      silentProgress,
    );

    for (const key of ['put-update/sdk', 'put-update/mysql', 'put-update/gem', 'get-cell/sdk']) {
      const counted = calls.of(key);
      assert.ok(counted && counted.calls > 16, `${key}: ${counted?.calls} calls`);
    }
    // 16 workers draw the next operation in turn from the mix.
    assert.ok(calls.of('put-update/sdk')!.most > 1, 'several at once');
    assert.ok(calls.of('put-update/sdk')!.most <= 16);
    assert.equal(calls.of('prepared/sdk'), undefined);
    const versionAfter = (await bench.rate.find(seeded.uuids[0]!))!.base.refKey!;
    assert.ok(
      versionAfter > versionBefore,
      `the warm-up's Puts reached the store (${versionBefore} → ${versionAfter})`,
    );
  });
});
