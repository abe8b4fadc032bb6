// The consumer groups' targets (issue 52) are what a reader of a run takes away: each verdict is
// checked against results built by hand, on both sides of its bound, with the wording
// and anchors, and a figure whose run failed says it was not measured, and why.
import assert from 'node:assert/strict';
import {
  type ConsumerVerdict,
  evaluateConsumerTargets,
  formatConsumerTargets,
} from '../src/report/consumerTargets.js';
import type { ConsumerResult } from '../src/workloads/consumerWorkload.js';

const latency = (p50: number) => ({ count: 1000, p50, p99: p50 * 3, p999: p50 * 4, max: p50 * 5 });
const writing = { written: 10_000, errors: 0, latency: latency(2), writesPerSecond: 1000 };
const read = (label: string, cellsPerSecond: number) => ({
  label,
  cellsPerSecond,
  startMs: 400,
  readerCpuPerCell: 10,
  serverCpuPerCell: 12,
});

function result(): ConsumerResult {
  return {
    plan: {
      tickets: 2000,
      backlogCells: 60_000,
      throughputRounds: 2,
      writesPerSecond: 1000,
      latencyWarmupMs: 2000,
      latencyMs: 10_000,
      settleMs: 2000,
      bodyBytes: 1024,
    },
    settings: {
      shards: 16,
      sessionTimeoutMs: 10_000,
      maxInFlight: 256,
      perShardInFlight: 1,
      maxDeliveries: 5,
      groupPollMs: 200,
    },
    throughput: {
      ok: true,
      value: {
        cells: 62_000,
        each: [read('Each', 60_000), read('Each', 64_000)],
        defaults: [read('member', 19_000), read('member', 21_000)],
        alternatives: [read('member, maxInFlight 1024', 40_000)],
      },
    },
    latency: {
      ok: true,
      value: {
        writing,
        windowMs: 10_000,
        member: { fromCreatedAt: latency(20), fromAcknowledgement: latency(1), missing: 0 },
        each: { fromCreatedAt: latency(5), fromAcknowledgement: latency(1), missing: 0 },
      },
    },
    rebalance: {
      ok: true,
      value: {
        rebalance: {
          joinMs: 80,
          moved: [6, 7, 13, 14, 15],
          unmovedGapMs: 300,
          unmovedGapBeforeMs: 150,
          windowMs: 2000,
          movedPauseMs: 90,
        },
        restarts: {
          steps: ['a', 'b', 'c'].map((member) => ({
            member,
            leaveHandOverMs: 200,
            joinHandOverMs: member === 'c' ? 1000 : 150,
            maxMoves: member === 'b' ? 2 : 1,
            moved: 10,
            graceful: true,
            stepMs: 2000,
          })),
          twice: 0,
          unhandled: 0,
          writing,
        },
      },
    },
    crash: {
      ok: true,
      value: {
        takeoverMs: 2000,
        shards: 8,
        sessionTimeoutMs: 10_000,
        writing,
        twice: 12,
        inFlight: 12,
        sinceConfirmed: 400,
        belowConfirmed: 0,
        unhandled: 0,
      },
    },
    cut: {
      ok: true,
      value: { takeoverMs: 12_001, shards: 8, sessionTimeoutMs: 10_000, writing, backMs: 300 },
    },
    poison: {
      ok: true,
      value: {
        maxDeliveries: 5,
        deliveries: 5,
        crashes: 5,
        parkedAttempts: 5,
        parkedAfterMs: 3000,
        after: 5,
        afterHandled: 5,
        resumedAfterMs: 2,
      },
    },
  };
}

const verdict = (verdicts: ConsumerVerdict[], start: string) => {
  const found = verdicts.find((v) => v.figure.startsWith(start));
  assert.ok(found, `a figure starting "${start}"`);
  return found;
};

describe('consumer group targets', () => {
  it("states each figure with the issue's anchor and target", () => {
    const verdicts = evaluateConsumerTargets(result());
    assert.deepEqual(
      verdicts.map((v) => [v.figure, v.anchor, v.target]),
      [
        [
          'a member SIGKILLed: its shards owned again by a live member',
          'Kafka 45 s, KCL 10–30 s, NATS 30 s',
          '≤ 2 s',
        ],
        [
          'a member cut off silently (fault proxy drops its traffic)',
          'Kafka 45 s, KCL 10–30 s, NATS 30 s',
          '≤ session timeout + 2 s (12 s)',
        ],
        [
          'graceful leave (each member of the rolling restart closing)',
          'KCL waits the failover time; Kafka classic stops the world',
          'hand-over ≤ 1 s, 0 cells delivered twice',
        ],
        [
          'rolling restart of 3 members, each step',
          'KCL waits the failover time; Kafka classic stops the world',
          'hand-over ≤ 1 s, 0 cells delivered twice, each shard moves ≤ 2 times per restart',
        ],
        [
          'shards not moving while a third member joins',
          'Kafka classic: all pause',
          'no pause: longest wait between two cells ≤ 2× that just before',
        ],
        [
          'cells delivered twice after a member crash',
          'everything since the last commit',
          "≤ that member's unacknowledged in-flight cells; none whose acknowledgement the server confirmed",
        ],
        [
          'poison cell (its handler kills the member)',
          'NATS: unlimited redelivery',
          'parked after maxDeliveries (5), counted across crashes; its shard goes on',
        ],
        ["one member's throughput, 1 KB cells, no-op handler", '—', '≥ 20,000 cells/s'],
        ['commit → handler, at 1,000 writes/s', '—', 'p50 ≤ 20 ms'],
      ],
    );
  });

  it('judges each bound on both sides', () => {
    const verdicts = evaluateConsumerTargets(result());
    // At the bound is met; a millisecond past the cut-off's is not.
    assert.equal(verdict(verdicts, 'a member SIGKILLed').met, true);
    assert.equal(verdict(verdicts, 'a member SIGKILLed').measured, '2.00 s');
    assert.equal(verdict(verdicts, 'a member cut off').met, false);
    assert.equal(verdict(verdicts, 'graceful leave').met, true);
    assert.equal(verdict(verdicts, 'rolling restart').met, true);
    assert.equal(verdict(verdicts, 'rolling restart').measured, '≤ 1000 ms, ≤ 2 moves, 0 twice');
    assert.equal(verdict(verdicts, 'shards not moving').met, true);
    assert.equal(verdict(verdicts, 'cells delivered twice').met, true);
    assert.equal(verdict(verdicts, 'poison cell').met, true);
    // The mean of the runs with the defaults: 20,000.
    assert.equal(verdict(verdicts, "one member's throughput").met, true);
    assert.equal(
      verdict(verdicts, "one member's throughput").measured,
      '20,000 cells/s (Each 62,000)',
    );
    assert.equal(verdict(verdicts, 'commit → handler').met, true);

    const worse = result();
    const rebalance = worse.rebalance.ok ? worse.rebalance.value : assert.fail();
    Object.assign(rebalance.rebalance, { unmovedGapMs: 301 });
    Object.assign(rebalance.restarts.steps[1]!, { maxMoves: 3 });
    Object.assign(rebalance.restarts, { twice: 1 });
    if (worse.crash.ok) Object.assign(worse.crash.value, { twice: 13, takeoverMs: 2001 });
    if (worse.poison.ok) Object.assign(worse.poison.value, { deliveries: 6 });
    if (worse.throughput.ok) {
      Object.assign(worse.throughput.value.defaults[0]!, { cellsPerSecond: 18_999 });
    }
    if (worse.latency.ok) Object.assign(worse.latency.value.member.fromCreatedAt, { p50: 20.1 });
    const failing = evaluateConsumerTargets(worse);
    for (const start of [
      'a member SIGKILLed',
      'graceful leave',
      'rolling restart',
      'shards not moving',
      'cells delivered twice',
      'poison cell',
      "one member's throughput",
      'commit → handler',
    ]) {
      assert.equal(verdict(failing, start).met, false, start);
    }
  });

  it('a crash that brought back a confirmed cell, or a poison cell never parked, misses', () => {
    const worse = result();
    if (worse.crash.ok) Object.assign(worse.crash.value, { twice: 1, belowConfirmed: 1 });
    if (worse.poison.ok) {
      Object.assign(worse.poison.value, { parkedAttempts: undefined, parkedAfterMs: undefined });
    }
    const verdicts = evaluateConsumerTargets(worse);
    assert.equal(verdict(verdicts, 'cells delivered twice').met, false);
    assert.equal(verdict(verdicts, 'poison cell').met, false);
    assert.equal(verdict(verdicts, 'poison cell').measured, 'not parked after 5');
  });

  it('a figure whose run failed is not measured, and says why', () => {
    const failed = { ...result(), cut: { ok: false as const, error: 'b to own a’s shards' } };
    const verdicts = evaluateConsumerTargets(failed);
    assert.equal(verdict(verdicts, 'a member cut off').met, undefined);
    const table = formatConsumerTargets(failed, verdicts);
    assert.match(table, /^Consumer groups \(issue 52\): \d of 8 measured met, 1 not measured/);
    assert.match(table, /not measured: b to own a’s shards/);
    assert.match(table, /sessionTimeoutMs 10,000, maxInFlight 256, perShardInFlight 1/);
    assert.match(table, /--group-poll-ms 200/);
  });
});
