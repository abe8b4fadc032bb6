// Issue 53's replica health, against a real primary and replica with the server's defaults
// (--replica-check-ms 250, --replica-max-lag-ms 1000, --replica-wait-ms 20): a replica whose
// replication stops while its primary takes writes leaves the rotation within about a second and
// its reads go to the primary, then comes back once replication resumes; a replica stopped and
// then killed under 1,000 reads/s costs the callers no error, and its p99 is printed beside a
// primary-only p99 of the same run; restarted, it serves again. A replica that hangs (SIGSTOP)
// holds no read past the monitor's finding it down.
import { expect } from 'chai';
import { type EachResponse, Replica_State, WriteMode } from '@shameless/proto';
import {
  type MariaDbServer,
  type ReplicatedMariaDb,
  startReplicatedMariaDb,
} from '@shameless/testkit';
import {
  type StoreFixture,
  RATE_MODEL,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { contentShardOf, range, sleep } from '../consistency/support.js';
import { type StoreApi, connectStore } from '../support/grpcCalls.js';
import { startServerProcess } from '../support/serverProcess.js';
import {
  CONSISTENCY,
  SESSION_TOKEN,
  boundedRead,
  callWith,
  countStatements,
  metadataOf,
  openLoop,
  percentile,
  probeBound,
  sentBetween,
  sessionRead,
  waitForReplicaState,
  withDatabase,
} from './support.js';

/** Resolves once `condition()` holds; rejects after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not so after ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** The server's default --replica-check-ms. */
const CHECK_MS = 250;
/** Servers that probe the replica: `store` and `other`. */
const ENGINES = 2;
const RECORDS = 32;
/** The primary index values of record `i`. */
const rateKey = (i: number) => ({ hotel_id: i, room_type: 'double', check_in_date: '2026-01-01' });

describe('read replicas: a replica that stops, lags, dies and comes back (issue 53)', function () {
  this.timeout(120_000);
  let set: ReplicatedMariaDb;
  let replicaServer: MariaDbServer;
  let store: StoreFixture;
  /** Another server over the same partition and replica: its writes reach `store` by its polls. */
  let other: StoreFixture;
  let uuids: string[];

  /** WriteCell of `uuid`'s meta cell through the store; the version written and its token. */
  const writeMeta = async (uuid: string, value: number) => {
    const { response, trailers } = await callWith(store.api.client, store.api.client.writeCell, {
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ value }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    });
    return { refKey: response.cell!.refKey, token: trailers[SESSION_TOKEN] };
  };
  const readMeta = async (uuid: string, metadata: Record<string, string>) =>
    (
      await callWith(
        store.api.client,
        store.api.client.getCell,
        { model: 'rate', uuid, cell: 'meta' },
        metadata,
      )
    ).response.cell!;

  /**
   * Writes to the primary every `everyMs` until the returned stop() is called, to a record of
   * its own (the last), so that the tests' reads of the others know the latest version.
   */
  const keepWriting = (everyMs: number) => {
    let stopped = false;
    let n = 0;
    const done = (async () => {
      while (!stopped) {
        await writeMeta(uuids[RECORDS - 1]!, n);
        n += 1;
        await sleep(everyMs);
      }
    })();
    return async () => {
      stopped = true;
      await done;
      return n;
    };
  };

  before(async () => {
    set = await startReplicatedMariaDb({
      replicas: 1,
      // Commits without a flush each: the test measures routing, not the disk.
      extraArgs: ['--innodb-flush-log-at-trx-commit=2'],
    });
    replicaServer = set.replicas[0]!;
    const serverWith = () =>
      startStoreFixture({
        partitionUrls: [withDatabase(set.primary.url, 'rr')],
        replicas: [{ partition: 0, url: withDatabase(replicaServer.url, 'rr') }],
        namespace: 'rr',
        shardsCount: 4,
        poolSize: 16,
      });
    store = await serverWith();
    await store.api.defineModel({ model: RATE_MODEL });
    other = await serverWith();
    uuids = await Promise.all(
      range(RECORDS).map(
        async (i) =>
          (
            await store.api.put({
              model: 'rate',
              values: pack({
                hotel_id: i,
                room_type: 'double',
                check_in_date: '2026-01-01',
                gateway: 'g',
                discount_type: 'd',
              }),
              requestId: requestId(),
            })
          ).uuid,
      ),
    );
    await Promise.all(uuids.map((uuid, i) => writeMeta(uuid, -i)));
    await set.waitForReplicaToCatchUp(replicaServer);
    await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 10_000);
  });
  after(async () => {
    await store?.close();
    await other?.close();
    await set?.destroy();
  });

  it('a replayed write (a retry whose first answer was lost) answers a token covering the write it replays', async () => {
    // The caller's session so far: a write the replica has applied.
    const earlier = await writeMeta(uuids[0]!, -100);
    await set.waitForReplicaToCatchUp(replicaServer);
    // The replica stops applying before the next write, so that it never has it: a read it
    // answered after the replay would not see the write the replay stands for.
    await set.stopReplication(replicaServer);
    try {
      const request = {
        model: 'rate',
        uuid: uuids[0]!,
        cell: 'meta',
        body: pack({ value: 'replayed' }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      };
      // Its answer (and token) lost, the caller sends the write again: a replay.
      const first = await callWith(store.api.client, store.api.client.writeCell, request);
      const again = await callWith(store.api.client, store.api.client.writeCell, request);
      expect(again.response.replayed).to.equal(true);
      expect(again.response.cell!.refKey).to.equal(first.response.cell!.refKey);
      // The caller reads with the token it holds: the replay's, or else its earlier one. At once,
      // before the replica leaves the rotation (its lag is not yet past 1 s).
      const token = again.trailers[SESSION_TOKEN] ?? earlier.token;
      const cell = await readMeta(uuids[0]!, sessionRead(token));
      expect(cell.refKey, 'the version the replay answered').to.equal(first.response.cell!.refKey);

      // The same for a Put (an update of the record's base).
      const put = {
        model: 'rate',
        values: pack({ ...rateKey(0), replayed: true }),
        requestId: requestId(),
      };
      const putFirst = await callWith(store.api.client, store.api.client.put, put);
      const putAgain = await callWith(store.api.client, store.api.client.put, put);
      expect(putAgain.response.base!.refKey).to.equal(putFirst.response.base!.refKey);
      const base = await callWith(
        store.api.client,
        store.api.client.getCell,
        { model: 'rate', uuid: uuids[0]!, cell: 'base' },
        sessionRead(putAgain.trailers[SESSION_TOKEN] ?? earlier.token),
      );
      expect(base.response.cell!.refKey, 'the base version the Put replay answered').to.equal(
        putFirst.response.base!.refKey,
      );
    } finally {
      await set.startReplication(replicaServer);
      await set.waitForReplicaToCatchUp(replicaServer);
      await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 10_000);
    }
  });

  it('replication stopped under writes: the replica leaves the rotation in about a second, bounded reads see the primary, and it comes back', async () => {
    const stopWriting = keepWriting(20);
    try {
      await sleep(300);
      await set.stopReplication(replicaServer);
      const leftAfterMs = await waitForReplicaState(store.api, Replica_State.STATE_LAGGING, 10_000);
      const lagging = (await store.api.describeStore({})).partitions[0]!.replicas[0]!;
      console.log(
        `      replication stopped: STATE_LAGGING after ${leftAfterMs} ms (lag ${lagging.lagMs} ms; bound 1000 ms, probes every ${CHECK_MS} ms)`,
      );
      // About a second: the lag bound plus a probe interval; generous, for a busy machine.
      expect(leftAfterMs).to.be.below(5000);

      // The replica misses every write since: a read it answered would be stale.
      const count = await countStatements(set.primary.url, replicaServer.url);
      const READS = 40;
      for (const i of range(READS)) {
        // Not the last record: the background writes go there.
        const uuid = uuids[i % (RECORDS - 1)]!;
        const written = await writeMeta(uuid, 10_000 + i);
        const metadata = i % 2 === 0 ? boundedRead(5000) : sessionRead(written.token);
        const cell = await readMeta(uuid, metadata);
        expect(cell.refKey, `read ${i} (${metadata[CONSISTENCY]})`).to.equal(written.refKey);
        expect(unpack(cell.body).value).to.equal(10_000 + i);
      }
      const deltas = await count.delta();
      const probes = probeBound(deltas.elapsedMs, CHECK_MS, ENGINES);
      console.log(
        `      ${READS} bounded and session reads while lagging: all fresh; replica Com_select ${deltas.replicaSelects} (lag probes alone may make ${probes}), ` +
          `${deltas.replicaGtidWaits} MASTER_GTID_WAIT`,
      );
      expect(
        deltas.replicaSelects,
        'SELECTs on the lagging replica: lag probes only',
      ).to.be.at.most(probes);

      const startedAt = Date.now();
      await set.startReplication(replicaServer);
      const backAfterMs = await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 10_000);
      console.log(
        `      replication started again: STATE_SERVING after ${backAfterMs} ms (${Date.now() - startedAt} ms with START SLAVE)`,
      );
    } finally {
      await stopWriting();
    }
    // Serving again, it answers the reads that allow it (the lag probes are subtracted at their
    // most, so a few reads may not be told apart from them).
    const count = await countStatements(set.primary.url, replicaServer.url);
    for (const i of range(100)) await readMeta(uuids[i % RECORDS]!, boundedRead(5000));
    const deltas = await count.delta();
    const replicaReads = deltas.replicaSelects - probeBound(deltas.elapsedMs, CHECK_MS, ENGINES);
    console.log(`      serving again: 100 bounded reads, ≥ ${replicaReads} of them on the replica`);
    expect(replicaReads).to.be.at.least(90);
  });

  it('an Each follow while the replica has stopped applying: the write through another server is delivered, without reading the replica over and over', async () => {
    const uuid = uuids[1]!;
    const shard = contentShardOf(uuid, 4);
    const stream = store.api.client.each(
      {
        model: 'rate',
        shards: [shard],
        cursors: {},
        follow: true,
        batchSize: 0,
        heartbeatIntervalMs: 0,
      },
      metadataOf(sessionRead()),
    );
    const delivered: { uuid: string; cell: string; at: number }[] = [];
    stream.on('data', (message: EachResponse) => {
      if (message.event?.$case !== 'batch') return;
      for (const cell of message.event.batch.cells) {
        delivered.push({ uuid: cell.uuid, cell: cell.name, at: Date.now() });
      }
    });
    stream.on('error', () => {});
    try {
      // The shard's log so far, then quiet.
      await until(() => delivered.some((cell) => cell.uuid === uuid), 10_000);
      await set.stopReplication(replicaServer);
      const count = await countStatements(set.primary.url, replicaServer.url);
      const writtenAt = Date.now();
      // Through the other server: this one learns of it by its poll of the primary's max ids,
      // and reads the shard where the stream's consistency allows, the replica, which lacks it.
      await callWith(other.api.client, other.api.client.writeCell, {
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ value: 'followed' }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      });
      await until(
        () => delivered.some((cell) => cell.at >= writtenAt && cell.cell === 'meta'),
        10_000,
      );
      const deliveredAfterMs = delivered.at(-1)!.at - writtenAt;
      const deltas = await count.delta();
      console.log(
        `      follow: the write delivered ${deliveredAfterMs} ms after it (the replica left the rotation, the primary answered); ` +
          `replica Com_select ${deltas.replicaSelects} in ${deltas.elapsedMs} ms (lag probes alone may make ${probeBound(deltas.elapsedMs, CHECK_MS, ENGINES)})`,
      );
      // One read of the replica per poll of the primary (--follow-poll-ms, 50 ms here) and the
      // probes: a few dozen. Reading it again at once after each empty read made thousands.
      expect(deltas.replicaSelects).to.be.below(300);
    } finally {
      stream.cancel();
      await set.startReplication(replicaServer);
      await set.waitForReplicaToCatchUp(replicaServer);
      await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 10_000);
    }
  });

  it('a replica that hangs (SIGSTOP) under reads: the reads waiting on it are read on the primary once it is found down, none fails, and it serves again when it resumes', async () => {
    const HANG_MS = 6000;
    const hung = await openLoop(
      200,
      HANG_MS + 1000,
      (i) => readMeta(uuids[i % RECORDS]!, boundedRead(5000)),
      [
        { atMs: 500, run: async () => replicaServer.pause() },
        { atMs: 500 + HANG_MS, run: async () => replicaServer.resume() },
      ],
    );
    const max = Math.max(...hung.latencies);
    console.log(
      `      replica hung for ${HANG_MS} ms under bounded reads: ${hung.latencies.length} reads, ` +
        `p99 ${percentile(hung.latencies, 0.99).toFixed(1)} ms, max ${max.toFixed(1)} ms, ${hung.errors.length} errors`,
    );
    expect(hung.errors, 'errors surfaced to callers').to.deep.equal([]);
    // The reads sent to it before it left the rotation would otherwise wait out the whole hang;
    // the monitor finds it down within two probe intervals. Generous, for a busy machine.
    expect(max, 'the slowest read').to.be.below(HANG_MS / 2);
    await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 20_000);
  });

  it('a replica stopped, then killed, under 1,000 reads/s: no error reaches a caller, p99 beside the primary-only p99; restarted, it serves again', async () => {
    const RATE = 1000;
    // The reads go to a `shameless serve` process of its own, as a service's would. Served in
    // this process (with the load and `other`), the harness's own collections stalled every
    // call in flight for 25-85 ms every few seconds, in both windows alike, and set both p99s.
    const served = await startServerProcess([
      '--partition',
      withDatabase(set.primary.url, 'rr'),
      '--replica',
      `0=${withDatabase(replicaServer.url, 'rr')}`,
      '--namespace',
      'rr',
      '--shards-count',
      '4',
      // The load comes from this process, whose own pauses (its collector, the engines it
      // hosts) hold calls back and then send them at once: in CI, past the default 256 calls in
      // progress, refused RESOURCE_EXHAUSTED in the primary-only window. The replica's failure,
      // not admission, is what the windows compare.
      '--max-concurrent-calls',
      '4096',
    ]);
    const api = connectStore(served.address);
    try {
      await waitForReplicaState(api, Replica_State.STATE_SERVING, 10_000);
      await measureReplicaFailure(api, RATE);
    } finally {
      api.close();
      await served.kill();
    }
    const down = (await store.api.describeStore({})).partitions[0]!.replicas[0]!;
    expect(down.state).to.equal(Replica_State.STATE_DOWN);

    const startedAt = Date.now();
    await replicaServer.start();
    const restartedMs = Date.now() - startedAt;
    const servingMs = await waitForReplicaState(store.api, Replica_State.STATE_SERVING, 20_000);
    console.log(
      `      replica restarted in ${restartedMs} ms; STATE_SERVING ${servingMs} ms later`,
    );
    // It replicates again (mariadbd starts replication on start): a write through the primary
    // reaches it, and a session read waits there for it.
    const written = await writeMeta(uuids[0]!, 99_999);
    expect((await readMeta(uuids[0]!, sessionRead(written.token))).refKey).to.equal(written.refKey);
    await set.waitForReplicaToCatchUp(replicaServer);
  });

  /** The primary-only window, then the window in which the replica stops and dies, through `api`. */
  async function measureReplicaFailure(api: StoreApi, rate: number): Promise<void> {
    const read = (metadata: (i: number) => Record<string, string>) => async (i: number) =>
      (
        await callWith(
          api.client,
          api.client.getCell,
          { model: 'rate', uuid: uuids[i % RECORDS]!, cell: 'meta' },
          metadata(i),
        )
      ).response.cell!;
    // Unmeasured: the first second at this rate runs slower (optimising, pools filling).
    await openLoop(
      rate,
      1000,
      read((i) => (i % 2 === 0 ? sessionRead() : { [CONSISTENCY]: 'strong' })),
    );
    // Primary only: strong reads of the same cells, through the same server, at the same rate,
    // as long and beside the same writes as the window with the faults, so that the two p99s
    // differ by the replica's failure and not by the load around them.
    let stopWriting = keepWriting(20);
    let primaryOnly;
    try {
      primaryOnly = await openLoop(
        rate,
        6000,
        read(() => ({ [CONSISTENCY]: 'strong' })),
      );
    } finally {
      await stopWriting();
    }
    stopWriting = keepWriting(20);
    let faults;
    try {
      faults = await openLoop(
        rate,
        6000,
        read((i) => (i % 2 === 0 ? sessionRead() : boundedRead(5000))),
        [
          { atMs: 1000, run: () => set.stopReplication(replicaServer) },
          { atMs: 3000, run: () => replicaServer.kill() },
        ],
      );
    } finally {
      await stopWriting();
    }
    const p99 = percentile(faults.latencies, 0.99);
    const primaryP99 = percentile(primaryOnly.latencies, 0.99);
    console.log(
      `      primary only (strong): ${primaryOnly.latencies.length} reads at ${Math.round(primaryOnly.sentPerSecond)}/s, ` +
        `p50 ${percentile(primaryOnly.latencies, 0.5).toFixed(1)} ms, p99 ${primaryP99.toFixed(1)} ms, ${primaryOnly.errors.length} errors`,
    );
    console.log(
      `      session and bounded, replica stopped at 1 s and killed at 3 s: ${faults.latencies.length} reads at ${Math.round(faults.sentPerSecond)}/s, ` +
        `p50 ${percentile(faults.latencies, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (+${(p99 - primaryP99).toFixed(1)} ms; target ≤ +50 ms), ` +
        `max ${Math.max(...faults.latencies).toFixed(1)} ms, ${faults.errors.length} errors`,
    );
    const phases = (
      [
        ['serving', 0, 1000],
        ['stopped', 1000, 3000],
        ['killed', 3000, 6000],
      ] as const
    ).map(
      ([name, from, to]) =>
        `${name} ${percentile(sentBetween(faults, from, to), 0.99).toFixed(1)} ms`,
    );
    console.log(`      p99 by phase: ${phases.join(', ')}`);
    expect(faults.errors, 'errors surfaced to callers').to.deep.equal([]);
    expect(primaryOnly.errors).to.deep.equal([]);
    // The target is +50 ms; asserted generously, for a busy machine: a read that waited on the
    // dead replica (a connect or statement timeout) would be seconds.
    expect(p99, 'p99 with the replica failing').to.be.below(primaryP99 + 500);
    const down = (await api.describeStore({})).partitions[0]!.replicas[0]!;
    expect(down.state).to.equal(Replica_State.STATE_DOWN);
  }
});
