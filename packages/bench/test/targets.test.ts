// The target summary is what a reader of a run takes away, so each verdict is checked against
// rows built by hand: the right row is read (16 in flight, 1 KB, closed loop), the arithmetic
// of each bound is right on both sides, and a target whose run did not happen says so.
import assert from 'node:assert/strict';
import type { FollowResult } from '../src/workloads/followLatency.js';
import { formatOneAtATime, oneAtATimeChecks } from '../src/report/oneAtATime.js';
import { baseline, latency, row } from './support/handMadeRows.js';
import { type TargetResult, evaluateTargets, formatTargets } from '../src/report/targets.js';

const follow = (p99: number): FollowResult => ({
  writesPerSecond: 1000,
  delivered: 100,
  undelivered: 0,
  latency: latency(p99 / 10, p99),
});

const verdict = (results: TargetResult[], start: string) => {
  const found = results.find((result) => result.target.startsWith(start));
  assert.ok(found, `a target starting "${start}"`);
  return found;
};

describe('targets', () => {
  it('compares with the gem-shaped run at 16 in flight and 1 KB, not at other settings', () => {
    const rows = [
      row('put-update', { concurrency: 16, opsPerSecond: 1200, gem: baseline(1000) }),
      // At 64 in flight, or with 16 KB bodies, it would pass: neither is the target's row.
      row('put-create', { concurrency: 16, opsPerSecond: 1190, gem: baseline(1000) }),
      row('put-create', { concurrency: 64, opsPerSecond: 5000, gem: baseline(1000) }),
      row('get-cell', {
        concurrency: 16,
        opsPerSecond: 10,
        bodyBytes: 16 * 1024,
        gem: baseline(1),
      }),
      row('where-1', {
        concurrency: 16,
        opsPerSecond: 600,
        gem: baseline(1000),
        gemService: baseline(450),
      }),
    ];
    const results = evaluateTargets({ rows, follow: follow(20) });
    assert.equal(verdict(results, 'Put (update) ≥ 1.2×').met, true);
    assert.match(
      verdict(results, 'Put (update) ≥ 1.2×').reached,
      /^1\.20× \(1,200 vs 1,000 ops\/s\)$/,
    );
    assert.equal(verdict(results, 'Put (create) ≥ 1.2×').met, false);
    assert.equal(verdict(results, 'Where (1 record) ≥ 0.6×').met, true);
    assert.equal(
      verdict(results, 'Where (1 record) ≥ 0.6×').reached,
      '0.60× (600 vs 1,000 ops/s; gem-shaped service 0.45×)',
    );
    assert.equal(verdict(results, 'GetCell ≥ 0.6×').met, undefined);
  });

  it('budgets one call at a time as echo p50 + gem-shaped p50 + 0.2 ms', () => {
    const rows = [
      row('get-cell', {
        concurrency: 1,
        opsPerSecond: 1000,
        latency: latency(0.7),
        echo: baseline(2000, 0.3),
        gem: baseline(3000, 0.2),
      }),
      row('put-update', {
        concurrency: 1,
        opsPerSecond: 1000,
        latency: latency(1.31),
        echo: baseline(2000, 0.3),
        gem: baseline(3000, 0.8),
      }),
    ];
    const checks = oneAtATimeChecks(rows);
    assert.deepEqual(
      checks.map((check) => [check.workloadId, check.budget.toFixed(2), check.met]),
      [
        ['get-cell', '0.70', true],
        ['put-update', '1.30', false],
      ],
    );
    const results = evaluateTargets({ rows, follow: follow(20) });
    assert.equal(verdict(results, 'GetCell, one at a time').met, true);
    // The target counts a unary echo; beside it, the check over the stream echo, the
    // road the SDK takes, is stricter.
    const overStream = oneAtATimeChecks([{ ...rows[0]!, streamEcho: baseline(9000, 0.1) }])[0]!
      .overStream;
    assert.deepEqual(overStream && [overStream.budget.toFixed(2), overStream.met], ['0.50', false]);
    assert.match(
      formatOneAtATime(oneAtATimeChecks([{ ...rows[0]!, streamEcho: baseline(9000, 0.1) }])),
      /: met; over the stream echo \(0\.10\): budget 0\.50 ms, NOT met$/m,
    );
    assert.equal(verdict(results, 'Put (update), one at a time').met, false);
    assert.equal(verdict(results, 'Put (create), one at a time').met, undefined);
  });

  it('reads batch throughput at 16 in flight, else at the most in flight it ran', () => {
    const rows = [
      row('write-cells', {
        concurrency: 1,
        opsPerSecond: 50,
        unitsPerSecond: 25_000,
        unit: 'cells',
      }),
      row('write-cells', {
        concurrency: 4,
        opsPerSecond: 30,
        unitsPerSecond: 15_000,
        unit: 'cells',
      }),
      row('get-cells', {
        concurrency: 16,
        opsPerSecond: 50,
        unitsPerSecond: 50_000,
        unit: 'cells',
      }),
      row('get-cells', { concurrency: 4, opsPerSecond: 60, unitsPerSecond: 60_000, unit: 'cells' }),
    ];
    const results = evaluateTargets({ rows, follow: follow(20) });
    const writes = verdict(results, 'WriteCells');
    assert.equal(writes.met, false);
    assert.equal(writes.reached, '15,000 cells/s at 4 in flight');
    assert.equal(verdict(results, 'GetCells').reached, '50,000 cells/s at 16 in flight');
    assert.equal(verdict(results, 'GetCells').met, true);
  });

  it("sets no absolute p99 at half peak: issue 55's relative ones replaced them", () => {
    const rows = [
      row('put-update', {
        concurrency: 0,
        openLoopRate: 1000,
        opsPerSecond: 1000,
        latency: latency(1, 50),
      }),
      row('get-cell', {
        concurrency: 0,
        openLoopRate: 1000,
        opsPerSecond: 1000,
        latency: latency(1, 50),
        gemService: baseline(1000, 1),
      }),
    ];
    const results = evaluateTargets({ rows, follow: follow(20) });
    assert.deepEqual(
      results.filter((result) => /half/.test(result.target)),
      [],
    );
  });

  it('calls the Each follow p99 unchanged within 10% of the previous run, and unknown without one', () => {
    const target = 'Each follow p99';
    assert.equal(
      verdict(evaluateTargets({ rows: [], follow: follow(21.9), previousFollowP99: 20 }), target)
        .met,
      true,
    );
    assert.equal(
      verdict(evaluateTargets({ rows: [], follow: follow(22.1), previousFollowP99: 20 }), target)
        .met,
      false,
    );
    assert.equal(
      verdict(evaluateTargets({ rows: [], follow: follow(22.1) }), target).met,
      undefined,
    );
  });

  it('counts what was met among what was measured', () => {
    const rows = [row('put-update', { concurrency: 16, opsPerSecond: 1200, gem: baseline(1000) })];
    const summary = formatTargets(
      evaluateTargets({ rows, follow: follow(20), previousFollowP99: 30 }),
    );
    assert.match(summary, /^Targets \(issue 10\): 2 of 2 measured met, 9 not measured$/m);
  });
});
