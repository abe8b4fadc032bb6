// SIGTERM (a graceful stop, as a deploy does) of one of two `shameless serve` processes while the
// SDK has Pipeline calls (saves and puts) in flight on it and an Each follower reads from it:
// no call fails, every acknowledged write is stored exactly once (contiguous ref_keys), and the
// follower, resuming on the other server, hands out every acknowledged cell once.

import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type RecordOf, type Store } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { startTwoServers, type TwoServers } from './support/serveProcess.js';

type Rate = typeof RATE_SCHEMA;

describe('a server stopped with SIGTERM under load', function () {
  this.timeout(60_000);
  const WORKERS = 8;
  const CALLS_BEFORE = 200;
  const CALLS_AFTER = 200;
  const MAX_RUN_MS = 30_000;

  let cluster: TwoServers;
  const stores: Store[] = [];

  before(async () => {
    cluster = await startTwoServers();
  });
  after(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await cluster?.close();
  });

  it('fails no call, stores each acknowledged write once, and the follower sees each once', async () => {
    const [victim, survivor] = cluster.servers;
    const store = await connect({ endpoints: [victim.address, survivor.address] });
    stores.push(store);
    const Rate = await store.defineModel(RATE_SCHEMA);
    // The follower's own store starts on the victim.
    const followerStore = await connect({ endpoints: [victim.address, survivor.address] });
    stores.push(followerStore);
    const Followed = await followerStore.defineModel(RATE_SCHEMA);

    const owned: RecordOf<Rate>[] = [];
    for (let worker = 0; worker < WORKERS; worker++) {
      const record = await Rate.put(rateValues(700 + worker, 'own', '2026-01-01'));
      await record.meta.load();
      owned.push(record);
    }

    const seen: string[] = [];
    const stop = new AbortController();
    const follower = (async () => {
      for await (const cell of Followed.each({ follow: true, signal: stop.signal })) {
        seen.push(`${cell.uuid}/${cell.name}/${cell.refKey}`);
      }
    })().then(
      () => 'ended',
      (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`,
    );

    const saved: string[][] = owned.map(() => []);
    const acknowledged: string[] = owned.map((record) => `${record.uuid}/base/0`);
    const failures: string[] = [];
    const counts = { before: 0, after: 0 };
    let stopped = false;
    const start = performance.now();
    const work = async (worker: number) => {
      const own = owned[worker]!;
      for (let n = 0; ; n++) {
        if ((stopped && counts.after >= CALLS_AFTER) || performance.now() - start > MAX_RUN_MS) {
          return;
        }
        try {
          if (n % 2 === 0) {
            await own.meta.set('seq', `${worker}:${n}`).save();
            saved[worker]!.push(`${worker}:${n}`);
            acknowledged.push(`${own.uuid}/meta/${own.meta.refKey}`);
          } else {
            const record = await Rate.put(rateValues(700 + worker, `room-${n}`, '2026-02-01'));
            acknowledged.push(`${record.uuid}/base/${record.refKey}`);
          }
          counts[stopped ? 'after' : 'before']++;
        } catch (error) {
          failures.push(
            `worker ${worker} op ${n}: ${(error as Error).name}: ${(error as Error).message}`,
          );
        }
      }
    };
    const running = Promise.all(Array.from({ length: WORKERS }, (_, worker) => work(worker)));
    while (counts.before < CALLS_BEFORE && performance.now() - start < MAX_RUN_MS) await sleep(5);
    const exit = await victim.kill('SIGTERM');
    stopped = true;
    await running;
    expect(exit, 'the victim exits cleanly').to.equal(0);
    expect(failures, 'failed calls').to.deep.equal([]);
    expect(counts.after, 'calls after the SIGTERM').to.be.at.least(CALLS_AFTER);

    // Every save one meta version, contiguous from 0.
    for (const [worker, record] of owned.entries()) {
      const versions: number[] = [];
      const latest = await Rate.record(record.uuid).meta.reload();
      let cell: typeof latest | undefined = latest;
      while (cell?.present) {
        versions.push(cell.refKey as number);
        cell = await cell.previous();
      }
      expect(versions.reverse(), `meta versions of worker ${worker}`).to.deep.equal(
        saved[worker]!.map((_, refKey) => refKey),
      );
    }
    // The follower hands out every acknowledged cell, once each.
    const wanted = new Set(acknowledged);
    for (let i = 0; [...wanted].some((key) => !seen.includes(key)); i++) {
      if (i > 400) break;
      await sleep(25);
    }
    stop.abort();
    const missing = [...wanted].filter((key) => !seen.includes(key));
    const twice = seen.filter((key, i) => seen.indexOf(key) !== i);
    console.log(
      `      follower: ${seen.length} cells, ${await follower}; ${acknowledged.length} acknowledged, ${missing.length} missing, ${twice.length} twice`,
    );
    expect(missing, 'acknowledged cells the follower never saw').to.deep.equal([]);
    expect(twice, 'cells the follower saw twice').to.deep.equal([]);
  });
});
