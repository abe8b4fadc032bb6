// The consumer-group figures against real parts, small: a `shameless serve` of 4 shards (and a
// second one for the members that must sit behind two), member processes running the SDK, a
// few hundred cells. What is checked is that each figure measures what it says (a takeover
// after a real SIGKILL, the cells both members handled, a poison cell parked after the
// default deliveries, a backlog read to its end by a member and by Each, commit → handler for
// every write), not the targets: those are the full bench's, on its 16 shards.
import assert from 'node:assert/strict';
import type { ListeningProcess } from '@shameless/testkit';
import { type BenchStore, startServe } from '../src/subjects/benchStore.js';
import { TICKET_SCHEMA } from '../src/subjects/consumerMember.js';
import { measureCrash } from '../src/workloads/consumerFailover.js';
import { measureDeliveryLatency } from '../src/workloads/consumerLatency.js';
import { type TicketModel, seedTickets, writeBacklog } from '../src/workloads/consumerLoad.js';
import { measurePoison } from '../src/workloads/consumerPoison.js';
import { measureThroughput } from '../src/workloads/consumerThroughput.js';
import { silentProgress } from './support/silentProgress.js';
import { openTestBenchStore } from './support/testBenchStore.js';

const TICKETS = 100;
const BACKLOG = 1500;

describe('consumer group figures', function () {
  this.timeout(60_000);
  let bench: BenchStore;
  let second: ListeningProcess;
  let ticket: TicketModel;
  let uuids: string[];

  before(async () => {
    bench = await openTestBenchStore();
    second = await startServe(bench.settings, bench.partitionUrl);
    ticket = await bench.store.defineModel(TICKET_SCHEMA);
    uuids = await seedTickets(ticket, TICKETS, 1024, silentProgress);
    await writeBacklog(ticket, uuids, BACKLOG, 1024, silentProgress);
  });
  after(async () => {
    await second?.kill();
    await bench?.close();
  });

  it('reads the whole backlog with a member and with Each, alternating, with the CPU of each', async () => {
    const result = await measureThroughput(
      bench.server.address,
      bench.server.process.pid,
      { cells: TICKETS + BACKLOG, rounds: 1, alternatives: [] },
      silentProgress,
    );
    assert.equal(result.cells, TICKETS + BACKLOG);
    for (const run of [...result.each, ...result.defaults]) {
      assert.ok(run.cellsPerSecond > 0 && Number.isFinite(run.cellsPerSecond), run.label);
      assert.ok(run.startMs > 0, run.label);
      assert.ok(run.readerCpuPerCell > 0, run.label);
    }
    assert.deepEqual(
      [...result.each, ...result.defaults].map((run) => run.label),
      ['Each', 'member, SDK defaults'],
    );
  });

  it('times commit → handler for every write of the window, beside an Each follow', async () => {
    const result = await measureDeliveryLatency(
      ticket,
      uuids,
      bench.server.address,
      { ratePerSecond: 200, warmupMs: 300, durationMs: 1000, bodyBytes: 1024 },
      silentProgress,
    );
    assert.equal(result.writing.errors, 0);
    for (const reader of [result.member, result.each]) {
      assert.equal(reader.missing, 0);
      // About 200 writes in the window (the window's edges are the server's clock's).
      assert.ok(reader.fromCreatedAt.count >= 150, String(reader.fromCreatedAt.count));
      assert.ok(reader.fromCreatedAt.p50 >= 0 && reader.fromCreatedAt.p50 < 1000);
      assert.ok(reader.fromAcknowledgement.p50 >= 0);
    }
  });

  it('a member SIGKILLed: the other, behind the other server, takes its shards; no confirmed cell comes again', async () => {
    const result = await measureCrash(
      ticket,
      uuids,
      { lost: second.address, survivor: bench.server.address },
      { ratePerSecond: 200, bodyBytes: 1024, settleMs: 1200 },
      silentProgress,
    );
    assert.equal(result.shards, 2);
    assert.ok(result.takeoverMs > 0 && result.takeoverMs < 10_000, String(result.takeoverMs));
    assert.equal(result.belowConfirmed, 0);
    assert.equal(result.unhandled, 0);
    assert.ok(
      result.twice <= result.inFlight,
      `${result.twice} twice, ${result.inFlight} in flight`,
    );
    assert.ok(result.sinceConfirmed >= result.inFlight);
  });

  it('a poison cell kills member after member until it is parked after 5 deliveries; its shard goes on', async () => {
    const result = await measurePoison(
      bench.store,
      ticket,
      uuids,
      bench.server.address,
      silentProgress,
    );
    assert.deepEqual(
      [result.deliveries, result.crashes, result.parkedAttempts, result.afterHandled],
      [5, 5, 5, 5],
    );
    assert.ok(result.resumedAfterMs !== undefined && result.resumedAfterMs >= 0);
  });
});
