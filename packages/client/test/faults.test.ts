// The SDK under faults, against real servers on loopback over the local MariaDB (no mocks):
// (a) one of two `shameless serve` processes is SIGKILLed under a steady stream of reads and
//     writes: no call fails, and every acknowledged write is stored exactly once;
// (b) one of two servers answers 10% of its reads 200 ms late: hedged reads cut the tail;
// (c) every endpoint is down: with `waitForConnection: false` calls fail fast with
//     UnavailableError, and once the retry budget is spent they are not retried at all;
// (d) the one server is restarted under 8 writers: calls wait for it (the default) and none
//     fails;
// (e) the server of a follow stream goes silent (its connection hangs): the stream finds the
//     connection dead by its keepalive pings and goes on from its cursors on the other server.

import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  openStore,
  silentLogger,
  startServer,
  type Engine,
  type RunningServer,
} from '@shameless/server';
import {
  createTestDatabases,
  freePort,
  startTcpProxy,
  type TcpProxy,
  type TestDatabases,
} from '@shameless/testkit';
import {
  UnavailableError,
  connect,
  type ExactInteger,
  type RecordOf,
  type Store,
  type TransportStats,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { startTwoServers, type TwoServers } from './support/serveProcess.js';
import { rejection } from './support/storeFixture.js';

type Rate = typeof RATE_SCHEMA;

describe('faults', function () {
  this.timeout(60_000);

  describe('a server is killed mid-stream', () => {
    const WORKERS = 8;
    // The run is counted in calls, not timed: the kill comes after this many calls have
    // succeeded, and the workers stop once as many more have succeeded after it, however slow
    // the machine is. MAX_RUN_MS only stops a run that cannot make progress (the test then fails
    // on its count of calls after the kill).
    const CALLS_BEFORE_KILL = 200;
    const CALLS_AFTER_KILL = 200;
    const MAX_RUN_MS = 30_000;
    const MAX_OPS = 4000;

    let cluster: TwoServers;
    let store: Store | undefined;

    before(async () => {
      cluster = await startTwoServers();
    });
    after(async () => {
      await store?.close();
      await cluster?.close();
    });

    it('no call fails, and every acknowledged write is stored exactly once', async () => {
      const [victim, survivor] = cluster.servers;
      // The SDK's defaults: 5 s deadline, 4 attempts, hedges after the p95, a 100-token budget;
      // single calls, many in flight at once (the 8 workers would otherwise move in step, one
      // batch call at a time; a batch cut off by a kill: coalescing.test.ts).
      store = await connect({ endpoints: [victim.address, survivor.address], coalesce: false });
      const Rate = await store.defineModel(RATE_SCHEMA);

      // Each worker owns a record: it alone writes that record's meta cell (a save checked
      // against the version it last saw), and puts new records into its own hotel.
      const hotelOf = (worker: number) => 500 + worker;
      const owned: RecordOf<Rate>[] = [];
      for (let worker = 0; worker < WORKERS; worker++) {
        const record = await Rate.put(rateValues(hotelOf(worker), 'own', '2026-01-01'));
        await record.meta.load();
        owned.push(record);
      }

      const savedSeqs: string[][] = owned.map(() => []);
      const puts: { worker: number; room: string; serial: string; uuid: string }[] = [];
      const failures: string[] = [];
      const opCounts = { reads: 0, writes: 0, beforeKill: 0, afterKill: 0 };
      let killed = false;
      let ops = 0;
      const start = performance.now();

      const work = async (worker: number): Promise<void> => {
        const own = owned[worker] as RecordOf<Rate>;
        const done = () =>
          (killed && opCounts.afterKill >= CALLS_AFTER_KILL) ||
          performance.now() - start >= MAX_RUN_MS ||
          ops >= MAX_OPS;
        for (let n = 0; !done(); n++) {
          ops++;
          const label = `worker ${worker} op ${n}`;
          try {
            switch (n % 5) {
              case 0: {
                // WriteCell with an SDK-generated requestId, expecting the version last seen.
                const seq = `${worker}:${n}`;
                await own.meta.set('seq', seq).save();
                savedSeqs[worker]?.push(seq);
                expect(own.meta.refKey, label).to.equal((savedSeqs[worker]?.length ?? 0) - 1);
                opCounts.writes++;
                break;
              }
              case 1: {
                // Put of a new tuple: creates a record, once.
                const room = `room-${n}`;
                const serial = `${worker}:${n}`;
                const record = await Rate.put(
                  rateValues(hotelOf(worker), room, '2026-02-01', { serial }),
                );
                expect(record.refKey, label).to.equal(0);
                puts.push({ worker, room, serial, uuid: record.uuid });
                opCounts.writes++;
                break;
              }
              case 2: {
                // GetCell of two cells; the meta cell holds this worker's last acknowledged save.
                const found = await Rate.find(own.uuid, { cells: ['meta'] });
                expect(found?.meta.get('seq'), label).to.equal(savedSeqs[worker]?.at(-1));
                opCounts.reads++;
                break;
              }
              case 3: {
                // GetCell of another worker's record.
                const other = owned[(worker + n) % WORKERS] as RecordOf<Rate>;
                const record = await Rate.record(other.uuid).reload();
                expect(record.present, label).to.equal(true);
                opCounts.reads++;
                break;
              }
              default: {
                // Where on the full primary key.
                const found = await Rate.where({
                  hotel_id: hotelOf(worker),
                  room_type: 'own',
                  check_in_date: '2026-01-01',
                }).toArray();
                expect(
                  found.map((record) => record.uuid),
                  label,
                ).to.deep.equal([own.uuid]);
                opCounts.reads++;
              }
            }
            opCounts[killed ? 'afterKill' : 'beforeKill']++;
          } catch (error) {
            failures.push(`${label}: ${(error as Error).name}: ${(error as Error).message}`);
          }
        }
      };

      const running = Promise.all(Array.from({ length: WORKERS }, (_, worker) => work(worker)));
      while (opCounts.beforeKill < CALLS_BEFORE_KILL && performance.now() - start < MAX_RUN_MS) {
        await sleep(5);
      }
      const atKill = store.transport.stats();
      let lowestTokens = atKill.budgetTokens;
      const watchBudget = setInterval(() => {
        lowestTokens = Math.min(lowestTokens, store?.transport.stats().budgetTokens ?? Infinity);
      }, 1);
      await victim.kill('SIGKILL');
      killed = true;
      await running;
      clearInterval(watchBudget);
      const elapsedMs = performance.now() - start;
      const stats = store.transport.stats();

      console.log(
        `      kill: ${ops} calls in ${Math.round(elapsedMs)} ms by ${WORKERS} workers ` +
          `(${opCounts.reads} reads, ${opCounts.writes} writes; ${opCounts.beforeKill} before the ` +
          `SIGKILL, ${opCounts.afterKill} after); transport: ${describeStats(stats)}; ` +
          `after the kill: ${stats.retries - atKill.retries} retries, ` +
          `${stats.hedges - atKill.hedges} hedges, ${stats.budgetRefusals - atKill.budgetRefusals} ` +
          `budget refusals; budget ${atKill.budgetTokens} tokens at the kill, ${lowestTokens} at ` +
          `the lowest`,
      );
      expect(failures, 'failed calls').to.deep.equal([]);
      expect(opCounts.beforeKill, 'calls before the kill').to.be.at.least(CALLS_BEFORE_KILL);
      expect(opCounts.afterKill, 'calls after the kill').to.be.at.least(CALLS_AFTER_KILL);
      // The calls the kill caught went on to the survivor: retried there, or answered there by a
      // hedge sent before the retry would have been (which of the two is the timing's to say: a
      // run here had 0 retries and 15 hedges after the kill).
      expect(
        stats.retries - atKill.retries + (stats.hedgesWon - atKill.hedgesWon),
        'calls carried to the survivor by a retry or a winning hedge',
      ).to.be.greaterThan(0);

      // The log of every shard: each save is one meta version, contiguous from 0, holding the
      // acknowledged values in order; each put is one base version 0 of the record it answered.
      const metaVersions = new Map<string, { refKey: number; value: unknown }[]>();
      const baseVersions = new Map<string, { refKey: number; value: unknown }[]>();
      for (const shard of Rate.shards) {
        for (let cursor: ExactInteger = 0; ;) {
          const page = await Rate.fetchLatestCells({ shard, cursor, limit: 1000 });
          for (const cell of page.cells) {
            const [versions, key] =
              cell.name === 'meta' ? [metaVersions, 'seq'] : [baseVersions, 'serial'];
            const list = versions.get(cell.uuid) ?? [];
            list.push({ refKey: cell.refKey as number, value: cell.get(key) });
            versions.set(cell.uuid, list);
          }
          if (page.cells.length === 0) break;
          cursor = page.nextCursor;
        }
      }
      expect([...metaVersions.keys()].sort(), 'records with a meta cell in the log').to.deep.equal(
        owned.map((record) => record.uuid).sort(),
      );
      for (const [worker, record] of owned.entries()) {
        expect(
          (baseVersions.get(record.uuid) ?? []).map((version) => version.refKey),
          `base versions of worker ${worker}'s record`,
        ).to.deep.equal([0]);
        const versions = (metaVersions.get(record.uuid) ?? []).sort((a, b) => a.refKey - b.refKey);
        const seqs = savedSeqs[worker] ?? [];
        expect(
          versions.map((version) => version.refKey),
          `meta versions of worker ${worker}`,
        ).to.deep.equal(seqs.map((_, refKey) => refKey));
        expect(
          versions.map((version) => version.value),
          `meta values of worker ${worker}`,
        ).to.deep.equal(seqs);
      }
      for (const put of puts) {
        expect(
          (baseVersions.get(put.uuid) ?? []).map((version) => [version.refKey, version.value]),
          `base versions of the put of ${put.serial}`,
        ).to.deep.equal([[0, put.serial]]);
      }
      // A create cut by the kill after its base cell committed but before its primary-index
      // row did leaves that base cell behind, reachable through no index; the retry then
      // creates the record (another uuid) that the put answered with. Such a leftover shows in
      // the log, so its values appear there twice. Anything else in the log is a stray.
      const reachable = new Set([
        ...owned.map((record) => record.uuid),
        ...puts.map((put) => put.uuid),
      ]);
      const unreachable = [...baseVersions.entries()].filter(([uuid]) => !reachable.has(uuid));
      const putSerials = new Set(puts.map((put) => put.serial));
      for (const [uuid, versions] of unreachable) {
        expect(
          versions.map((version) => [version.refKey, putSerials.has(String(version.value))]),
          `base cell of ${uuid}, reachable through no index`,
        ).to.deep.equal([[0, true]]);
      }
      // Through the index: exactly the records put, once each, with the uuid each put answered.
      for (let worker = 0; worker < WORKERS; worker++) {
        const found = await Rate.where({ hotel_id: hotelOf(worker) }).toArray();
        const expected = [
          ['own', owned[worker]?.uuid],
          ...puts.filter((put) => put.worker === worker).map((put) => [put.room, put.uuid]),
        ];
        expect(
          found.map((record) => [record.get('room_type'), record.uuid]).sort(byFirst),
          `records of hotel ${hotelOf(worker)}`,
        ).to.deep.equal(expected.sort(byFirst));
      }
      console.log(
        `      kill: ${seqsCount(savedSeqs)} saves and ${puts.length} puts acknowledged, each ` +
          `stored once; ${unreachable.length} base cell(s) left by creates the kill cut (in the ` +
          `log, reachable through no index)`,
      );
    });
  });

  describe('a slow server: hedged reads', () => {
    const CALLS = 1000;
    // Two reads at a time: the slow answers (200 ms each) do not serialize the run, and the
    // client and both servers, which share this process, add little latency of their own.
    const CONCURRENCY = 2;
    const SLOW_SHARE = 0.1;
    const SLOW_MS = 200;
    const HEDGE_DELAY_MS = 20;

    let databases: TestDatabases;
    const engines: Engine[] = [];
    const running: RunningServer[] = [];
    let slow: SlowReads;
    let endpoints: string[];
    let uuid: string;

    before(async () => {
      databases = await createTestDatabases(1);
      for (let i = 0; i < 2; i++) engines.push(await openTestEngine(databases.urls));
      const [fast, other] = engines as [Engine, Engine];
      slow = slowReads(other, { share: SLOW_SHARE, ms: SLOW_MS });
      for (const engine of [fast, slow.engine]) running.push(await serve(engine));
      endpoints = running.map((server) => `127.0.0.1:${server.port}`);
      const store = await connect({ endpoints });
      const Rate = await store.defineModel(RATE_SCHEMA);
      uuid = (await Rate.put(rateValues(1, 'one', '2026-01-01', { price: 1 }))).uuid;
      await store.close();
    });
    after(async () => {
      await Promise.all(running.map((server) => server.shutdown(100)));
      await Promise.all(engines.map((engine) => engine.close()));
      await databases?.drop();
    });

    const measure = async (hedge: false | { delayMs: number }) => {
      // Single GetCells, as slowReads delays them: two reads in the same tick would otherwise
      // go as one GetCells (a hedged batch: coalescing.test.ts).
      const store = await connect({ endpoints, hedge, coalesce: false });
      try {
        const Rate = await store.defineModel(RATE_SCHEMA);
        const record = Rate.record(uuid);
        // Warm-up, with no slow answers: a connection to each server.
        for (let i = 0; i < 20; i++) await record.reload();
        const before = store.transport.stats();
        const slowBefore = slow.delayed;
        slow.enabled = true;
        const latencies: number[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < CALLS) {
              next++;
              const reader = Rate.record(uuid);
              const started = performance.now();
              await reader.reload();
              latencies.push(performance.now() - started);
              expect(reader.get('price')).to.equal(1);
            }
          }),
        );
        slow.enabled = false;
        const stats = store.transport.stats();
        return {
          p50: percentile(latencies, 0.5),
          p95: percentile(latencies, 0.95),
          p99: percentile(latencies, 0.99),
          max: percentile(latencies, 1),
          /**
           * Reads about as slow as a slow answer: SLOW_MS less a tenth, since the server's timer
           * counts whole milliseconds of the event loop's clock, read when its turn began, and
           * may end a little short of its delay as this process's clock counts it (once seen:
           * one read of 48 delayed under 200 ms, on a build whose path took some 0.5 ms).
           */
          slowCalls: latencies.filter((ms) => ms >= SLOW_MS * 0.9).length,
          calls: stats.calls - before.calls,
          hedges: stats.hedges - before.hedges,
          hedgesWon: stats.hedgesWon - before.hedgesWon,
          refusals: stats.budgetRefusals - before.budgetRefusals,
          failures: stats.failures - before.failures,
          delayed: slow.delayed - slowBefore,
        };
      } finally {
        slow.enabled = false;
        await store.close();
      }
    };

    // Counted, not timed: a read the slow server delays takes at least SLOW_MS unless a hedge to
    // the other server answers it first, whatever the machine's speed; the p99 is printed.
    it(`without hedging every slow answer is waited for; with a ${HEDGE_DELAY_MS} ms hedge most are not`, async () => {
      const plain = await measure(false);
      const hedged = await measure({ delayMs: HEDGE_DELAY_MS });
      const hedgeRatio = hedged.hedges / hedged.calls;
      console.log(
        `      hedging: ${CALLS} GetCell, ${CONCURRENCY} at a time, over 2 servers; one answers ` +
          `${SLOW_SHARE * 100}% of its reads ${SLOW_MS} ms late`,
      );
      console.log(`      hedging off: ${latencySummary(plain)} (${plain.delayed} slow answers)`);
      console.log(
        `      hedging on (${HEDGE_DELAY_MS} ms): ${latencySummary(hedged)}; ` +
          `${hedged.hedges} hedges for ${hedged.calls} calls ` +
          `(${(hedgeRatio * 100).toFixed(1)}%), ${hedged.hedgesWon} won, ${hedged.refusals} ` +
          `refused by the budget (${hedged.delayed} slow answers)`,
      );
      expect(plain.failures + hedged.failures, 'failed calls').to.equal(0);
      expect(plain.hedges, 'hedges with hedging off').to.equal(0);
      expect(plain.delayed, 'slow answers without hedging').to.be.greaterThan(0);
      expect(plain.slowCalls, 'reads as slow as a slow answer, hedging off').to.be.at.least(
        plain.delayed,
      );
      expect(hedged.delayed, 'slow answers with hedging').to.be.greaterThan(0);
      expect(hedged.hedgesWon, 'hedges that answered first').to.be.greaterThan(0);
      expect(hedged.slowCalls, 'reads as slow as a slow answer, hedging on').to.be.below(
        hedged.delayed / 2,
      );
    });
  });

  describe('a server shuts down with calls in flight', () => {
    let databases: TestDatabases;
    const engines: Engine[] = [];
    const running: RunningServer[] = [];

    before(async () => {
      databases = await createTestDatabases(1);
      for (let i = 0; i < 2; i++) engines.push(await openTestEngine(databases.urls));
    });
    after(async () => {
      await Promise.all(running.map((server) => server.shutdown(100)));
      await Promise.all(engines.map((engine) => engine.close()));
      await databases?.drop();
    });

    it('reads cut off when its grace period ends are retried on the other server', async () => {
      const [steady, leaving] = engines as [Engine, Engine];
      // Every read on the leaving server takes 300 ms: still running when it stops with no grace.
      const slow = slowReads(leaving, { share: 1, ms: 300 });
      const steadyServer = await serve(steady);
      const leavingServer = await serve(slow.engine);
      running.push(steadyServer, leavingServer);
      const store = await connect({
        endpoints: [leavingServer, steadyServer].map((server) => `127.0.0.1:${server.port}`),
        hedge: false,
        // Six single GetCells, spread over both servers (not one GetCells of six reads; a batch
        // cut off by a server that goes away: coalescing.test.ts).
        coalesce: false,
      });
      try {
        const Rate = await store.defineModel(RATE_SCHEMA);
        const { uuid } = await Rate.put(rateValues(1, 'one', '2026-01-01', { price: 1 }));
        slow.enabled = true;
        const reads = Array.from({ length: 6 }, () => Rate.record(uuid).base.reload());
        await sleep(100);
        const before = store.transport.stats();
        expect(slow.delayed, 'reads in flight on the leaving server').to.be.greaterThan(0);
        // grpc-js resets the calls still running: the client sees CANCELLED, not UNAVAILABLE.
        await leavingServer.shutdown(0);
        const cells = await Promise.all(reads);
        expect(cells.map((cell) => cell.get('price'))).to.deep.equal(Array(6).fill(1));
        const retries = store.transport.stats().retries - before.retries;
        console.log(`      ${slow.delayed} reads cut off by the shutdown, ${retries} retried`);
        expect(retries).to.equal(slow.delayed);
      } finally {
        await store.close();
      }
    });
  });

  describe('a server goes silent under a follower', () => {
    let databases: TestDatabases;
    const engines: Engine[] = [];
    const running: RunningServer[] = [];
    const proxies: TcpProxy[] = [];
    const stores: Store[] = [];

    before(async () => {
      databases = await createTestDatabases(1);
      for (let i = 0; i < 2; i++) engines.push(await openTestEngine(databases.urls));
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await Promise.all(proxies.map((proxy) => proxy.close()));
      await Promise.all(running.map((server) => server.shutdown(100)));
      await Promise.all(engines.map((engine) => engine.close()));
      await databases?.drop();
    });

    it('the follow stream finds the connection dead and goes on from its cursors on the other server', async () => {
      for (const engine of engines) running.push(await serve(engine));
      const [silent, other] = await Promise.all(
        running.map((server) =>
          startTcpProxy({ target: { host: '127.0.0.1', port: server.port } }),
        ),
      );
      proxies.push(silent!, other!);
      const writer = await connect({ endpoints: [`127.0.0.1:${running[1]!.port}`] });
      stores.push(writer);
      const Rate = await writer.defineModel(RATE_SCHEMA);
      await Rate.put(rateValues(1, 'before', '2026-01-01'));

      // The follower reaches both servers through proxies; the other one refuses it at first,
      // so that its stream opens on the one that will go silent.
      other!.setFaults({ refuseConnections: true });
      const follower = await connect({ endpoints: [silent!.address, other!.address] });
      stores.push(follower);
      const Followed = await follower.defineModel(RATE_SCHEMA);
      const seen: string[] = [];
      let heartbeats = 0;
      const stop = new AbortController();
      const following = (async () => {
        const cells = Followed.each({
          follow: true,
          heartbeatIntervalMs: 100,
          signal: stop.signal,
          onHeartbeat: () => heartbeats++,
        });
        for await (const cell of cells) seen.push(`${cell.uuid}/${cell.name}@${cell.refKey}`);
      })().then(
        () => 'ended',
        (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`,
      );
      while (heartbeats === 0) await sleep(20);
      other!.setFaults({});

      // A host that hangs: the connection stays open and nothing comes back, no reset, no close.
      silent!.setFaults({ blackhole: true });
      const silentAt = performance.now();
      const written: string[] = [];
      for (let i = 0; i < 3; i++) {
        const rate = await Rate.put(rateValues(2, `after ${i}`, '2026-01-01'));
        written.push(`${rate.uuid}/base@0`);
      }
      while (!written.every((key) => seen.includes(key)) && performance.now() - silentAt < 30_000) {
        await sleep(50);
      }
      const tookMs = performance.now() - silentAt;
      stop.abort();
      expect(await following).to.equal('ended');
      console.log(`      the follower went on on the other server ${Math.round(tookMs)} ms later`);
      expect(seen, 'the cells written while its server was silent').to.include.members(written);
      expect(seen, 'each cell once').to.have.length(new Set(seen).size);
      expect(seen).to.have.length(4);
    });
  });

  describe('every endpoint down', () => {
    const DEADLINE_MS = 5000;

    let databases: TestDatabases;
    let engine: Engine;
    const running: RunningServer[] = [];

    before(async () => {
      databases = await createTestDatabases(1);
      engine = await openTestEngine(databases.urls);
      for (let i = 0; i < 2; i++) running.push(await serve(engine));
    });
    after(async () => {
      await Promise.all(running.map((server) => server.shutdown(100)));
      await engine?.close();
      await databases?.drop();
    });

    it('connect rejects with UnavailableError at once when nothing listens', async () => {
      const started = performance.now();
      const error = await rejection(
        connect({
          endpoints: [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`],
          deadlineMs: DEADLINE_MS,
        }),
      );
      const elapsedMs = performance.now() - started;
      console.log(`      all down: connect rejected after ${Math.round(elapsedMs)} ms`);
      expect(error).to.be.instanceOf(UnavailableError);
      expect(elapsedMs).to.be.below(1000);
    });

    it('calls reject with UnavailableError fast; once the budget is spent, with no retry', async () => {
      // No hedging: a hedge sent while the servers were up would spend a token, and this test
      // counts them. A 10-token budget keeps the count short; the default 100 behaves the same
      // way after about 50 failures.
      const store = await connect({
        endpoints: running.map((server) => `127.0.0.1:${server.port}`),
        deadlineMs: DEADLINE_MS,
        hedge: false,
        budget: { maxTokens: 10, tokenRatio: 0.1 },
        // Fail at once rather than wait for the servers to come back (the default, tested in
        // "a restart under load" below).
        waitForConnection: false,
      });
      try {
        const Rate = await store.defineModel(RATE_SCHEMA);
        const rate = await Rate.put(rateValues(1, 'one', '2026-01-01'));
        await Promise.all(running.map((server) => server.shutdown(0)));

        // Reads and writes of the model API, one at a time.
        const calls: [string, () => Promise<unknown>][] = [
          ['reload', () => Rate.record(rate.uuid).reload()],
          ['put', () => Rate.put(rateValues(2, 'two', '2026-01-01'))],
          ['find', () => Rate.find(rate.uuid)],
          ['update', () => rate.update({ price: 3 })],
          ['where', () => Rate.where({ hotel_id: 1 }).toArray()],
          ['fetchLatestCells', () => Rate.fetchLatestCells({ shard: 0 })],
          ['reload', () => rate.reload()],
        ];
        const outcomes: { name: string; ms: number; attempts: number; stats: TransportStats }[] =
          [];
        for (const [name, call] of calls) {
          const before = store.transport.stats();
          const started = performance.now();
          const error = await rejection(call());
          const ms = performance.now() - started;
          const stats = store.transport.stats();
          expect(error, `${name}: ${error.message}`).to.be.instanceOf(UnavailableError);
          outcomes.push({ name, ms, attempts: stats.attempts - before.attempts, stats });
        }
        console.log(
          `      all down: ${outcomes
            .map((o) => `${o.name} ${o.attempts} attempt(s) ${Math.round(o.ms)} ms`)
            .join(', ')}; transport: ${describeStats(store.transport.stats())}`,
        );
        // The budget starts full (10 tokens): the first call spends 4 on its 4 attempts; the
        // next failure leaves 5, which is not more than half, so no call retries after that.
        const [first, ...later] = outcomes as [(typeof outcomes)[0], ...typeof outcomes];
        expect(first.attempts, 'attempts of the first call').to.equal(4);
        expect(first.ms, 'time to fail the first call').to.be.below(DEADLINE_MS / 5);
        for (const outcome of later) {
          expect(outcome.attempts, `attempts of ${outcome.name}`).to.equal(1);
          expect(outcome.ms, `time to fail ${outcome.name}`).to.be.below(DEADLINE_MS / 20);
        }
        const last = outcomes.at(-1)?.stats as TransportStats;
        expect(last.retries, 'retries in all').to.equal(3);
        expect(last.budgetRefusals, 'retries refused by the budget').to.equal(later.length);
      } finally {
        await store.close();
      }
    });
  });
});

/** An engine over the given databases, as `shameless serve` opens it. */
function openTestEngine(urls: string[]): Promise<Engine> {
  return openStore(
    {
      namespace: 'faults',
      shardsCount: 4,
      partitionUrls: urls,
      poolSize: 8,
      connectTimeoutMs: 1000,
      startupTimeoutMs: 0,
      followPollIntervalMs: 20,
    },
    silentLogger,
  );
}

/** The gRPC server in-process on a free loopback port. */
function serve(engine: Engine): Promise<RunningServer> {
  return startServer(
    engine,
    { listen: '127.0.0.1:0', maxMessageBytes: 16 * 1024 * 1024 },
    silentLogger,
  );
}

/** An engine whose GetCell answers a share of the time `ms` late, while `enabled`. */
interface SlowReads {
  readonly engine: Engine;
  enabled: boolean;
  /** GetCell answers held back so far. */
  readonly delayed: number;
}

/**
 * Wraps `engine` so that a `share` of GetCell answers are held back `ms`, in a fixed
 * pseudo-random pattern. The delay is per answer: other calls on the same HTTP/2 connection
 * are not held up. (testkit's TCP proxy cannot do this: it delays TCP chunks, a GetCell answer
 * is two of them, a held chunk holds back every later chunk of the connection, and held chunks
 * wait one after the other, so the connection falls behind without bound once calls no longer
 * wait for it, as when hedges answer them.)
 */
function slowReads(engine: Engine, options: { share: number; ms: number }): SlowReads {
  let seed = 0x5eed;
  const random = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const state = { enabled: false, delayed: 0 };
  const getCell: Engine['getCell'] = async (...args) => {
    if (state.enabled && random() < options.share) {
      state.delayed++;
      await sleep(options.ms);
    }
    return engine.getCell(...args);
  };
  const wrapped = new Proxy(engine, {
    get(target, property) {
      if (property === 'getCell') return getCell;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    engine: wrapped,
    get enabled() {
      return state.enabled;
    },
    set enabled(value: boolean) {
      state.enabled = value;
    },
    get delayed() {
      return state.delayed;
    },
  };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

function latencySummary(l: { p50: number; p95: number; p99: number; max: number }): string {
  return (
    `p50 ${l.p50.toFixed(1)} ms, p95 ${l.p95.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, ` +
    `max ${l.max.toFixed(1)} ms`
  );
}

function describeStats(stats: TransportStats): string {
  return (
    `${stats.calls} calls, ${stats.attempts} attempts, ${stats.retries} retries, ` +
    `${stats.hedges} hedges (${stats.hedgesWon} won), ${stats.budgetRefusals} budget refusals, ` +
    `${stats.failures} failures, ${stats.budgetTokens} tokens left`
  );
}

function seqsCount(seqs: readonly string[][]): number {
  return seqs.reduce((sum, list) => sum + list.length, 0);
}

function byFirst(a: unknown[], b: unknown[]): number {
  return String(a[0]).localeCompare(String(b[0]));
}
