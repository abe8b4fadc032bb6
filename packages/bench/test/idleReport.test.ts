// The idle server's plan and rows: a quick run measures the targets' two sides after the same
// settling as a full run (V8's one-off start-up work must not fall in its window), and the rows
// explain the probe's variants only where they were measured.
import assert from 'node:assert/strict';
import { formatIdleRows } from '../src/report/idleReport.js';
import { type IdleSide, idlePlan } from '../src/workloads/idleServer.js';

const side = (shards: number, healthProbe: boolean, probeRests: boolean): IdleSide => ({
  shards,
  healthProbe,
  probeRests,
  cpuShare: 0.001,
  statementsPerSecond: 0.1,
  windowMs: 10_000,
});

describe('idle server plan and rows', () => {
  it('measures the two defaults in a quick run, after the 40 s a full run settles', () => {
    const quick = idlePlan(true);
    const full = idlePlan(false);
    assert.equal(quick.settleMs, 40_000);
    assert.equal(full.settleMs, 40_000);
    assert.deepEqual(
      quick.sides.map((s) => [s.shards, s.healthProbe, s.probeRests]),
      [
        [16, true, true],
        [1024, true, true],
      ],
    );
    assert.equal(full.sides.length, 4);
  });

  it("says what the probe's variants are only when they were measured", () => {
    const defaults = [side(16, true, true), side(1024, true, true)];
    const quick = formatIdleRows({ plan: idlePlan(true), sides: defaults });
    assert.ok(!quick.includes('never rests:'), quick);
    assert.match(quick, /met {6}16 shards/);
    assert.match(quick, /met {6}1,024 shards/);
    const full = formatIdleRows({
      plan: idlePlan(false),
      sides: [...defaults, side(16, true, false), side(16, false, true)],
    });
    assert.match(full, /never rests: --idle-health-check-ms 0/);
  });
});
