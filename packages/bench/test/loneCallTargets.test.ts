// Issue 55's targets are read off rows of the same run, so each verdict is checked against rows
// built by hand: the right row is read (1 KB, its concurrency or the half-peak open loop), each
// bound is right on both sides, and a target whose run or baseline is missing says what was.
import assert from 'node:assert/strict';
import {
  type LoneCallVerdict,
  evaluateLoneCallTargets,
  formatLoneCallTargets,
} from '../src/report/loneCallTargets.js';
import { baseline, latency, row } from './support/handMadeRows.js';
import type { RunRow } from '../src/report/report.js';
import type { IdleResult, IdleSide } from '../src/workloads/idleServer.js';

const verdict = (verdicts: LoneCallVerdict[], start: string) => {
  const found = verdicts.filter((v) => v.figure.startsWith(start));
  assert.equal(found.length, 1, `one figure starting "${start}"`);
  return found[0]!;
};

const side = (shards: number, healthProbe: boolean, cpuShare: number, statements: number) =>
  ({
    shards,
    healthProbe,
    probeRests: healthProbe,
    cpuShare,
    statementsPerSecond: statements,
    windowMs: 20_000,
  }) satisfies IdleSide;
const idle = (...sides: IdleSide[]): IdleResult => ({
  plan: { sides, settleMs: 40_000, windowMs: 20_000 },
  sides,
});

describe("issue 55's targets", () => {
  it("holds a lone read's p50 to 1.1× the gem-shaped service's, at 1 in flight and 1 KB", () => {
    const rows = [
      row('get-cell', {
        concurrency: 1,
        opsPerSecond: 2000,
        latency: latency(0.55),
        gemService: baseline(2000, 0.5),
      }),
      // With 16 KB bodies it would pass: not the target's row.
      row('where-1', {
        concurrency: 1,
        bodyBytes: 16 * 1024,
        opsPerSecond: 2000,
        latency: latency(0.1),
        gemService: baseline(2000, 0.5),
      }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    assert.deepEqual(verdict(verdicts, 'GetCell, 1 in flight: p50'), {
      figure: 'GetCell, 1 in flight: p50',
      target: "≤ 1.1× the gem-shaped service's p50",
      measured: '0.55 ms vs 0.50 ms (1.10×)',
      met: true,
    });
    assert.equal(verdict(verdicts, 'Where (1 record), 1 in flight: p50').met, undefined);
    assert.equal(
      verdict(verdicts, 'Where (1 record), 1 in flight: p50').measured,
      'not measured: no 1 in flight run',
    );
  });

  it('finds rows by workload id, calls a lone read over 1.1× not met, and says what is missing', () => {
    const rows = [
      row('where-1', {
        workload: 'Where (1 record)',
        concurrency: 1,
        opsPerSecond: 2000,
        latency: latency(0.56),
        gemService: baseline(2000, 0.5),
      }),
      row('get-cell', { concurrency: 1, opsPerSecond: 2000, latency: latency(0.5) }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    assert.equal(verdict(verdicts, 'Where (1 record), 1 in flight: p50').met, false);
    assert.equal(
      verdict(verdicts, 'GetCell, 1 in flight: p50').measured,
      'not measured: no gem-shaped service beside the 1 in flight run',
    );
  });

  it("budgets a lone put as echo p50 + gem-shaped p50 + 0.1 ms (issue 10's allowed 0.2)", () => {
    const rows = [
      row('put-update', {
        concurrency: 1,
        opsPerSecond: 1000,
        latency: latency(1.2),
        echo: baseline(5000, 0.3),
        gem: baseline(2000, 0.8),
      }),
      row('put-create', {
        concurrency: 1,
        opsPerSecond: 1000,
        latency: latency(1.21),
        echo: baseline(5000, 0.3),
        gem: baseline(2000, 0.8),
      }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    const update = verdict(verdicts, 'Put (update), 1 in flight: p50');
    assert.equal(update.target, '≤ echo p50 + gem-shaped p50 + 0.1 ms');
    assert.equal(update.measured, '1.20 ms vs 1.20 ms (echo 0.30 + gem-shaped 0.80 + 0.1)');
    assert.equal(update.met, true);
    assert.equal(verdict(verdicts, 'Put (create), 1 in flight: p50').met, false);

    const withoutGem = evaluateLoneCallTargets({
      rows: [row('put-create', { concurrency: 1, opsPerSecond: 1000, echo: baseline(5000) })],
    });
    assert.equal(
      verdict(withoutGem, 'Put (create), 1 in flight: p50').measured,
      'not measured: no echo or gem-shaped baseline beside the 1 in flight run',
    );
  });

  it("holds a lone read's CPU to 1.3× the gem-shaped service's, summed over three processes", () => {
    const service = baseline(2000, 0.5, { cpu: { server: 100, client: 100, mariadb: 100 } });
    const rows = [
      row('get-cell', {
        concurrency: 1,
        opsPerSecond: 2000,
        cpu: { server: 200, client: 100, mariadb: 90 },
        gemService: service,
      }),
      row('where-1', {
        concurrency: 1,
        opsPerSecond: 2000,
        cpu: { server: 200, client: 100, mariadb: 91 },
        gemService: service,
      }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    const get = verdict(verdicts, 'GetCell, 1 in flight: CPU');
    assert.equal(get.measured, '390 vs 300 µs (1.30×; 200 + 100 + 90 vs 100 + 100 + 100)');
    assert.equal(get.met, true);
    assert.equal(verdict(verdicts, 'Where (1 record), 1 in flight: CPU').met, false);

    // A process whose clock was not read leaves the sum unknown, not smaller.
    const unread = evaluateLoneCallTargets({
      rows: [
        { ...rows[0]!, cpu: { server: 200, client: 100 } },
        { ...rows[1]!, gemService: baseline(2000, 0.5, { cpu: { server: 1, client: 1 } }) },
      ],
    });
    assert.equal(
      verdict(unread, 'GetCell, 1 in flight: CPU').measured,
      "not measured: a process's CPU unread in the SDK's run",
    );
    assert.equal(
      verdict(unread, 'Where (1 record), 1 in flight: CPU').measured,
      "not measured: a process's CPU unread in the gem-shaped service's run",
    );
  });

  /** A lone GetCell's row whose one window each says 2× the service's, with `roundsInTurn`. */
  const loneGetCell = (roundsInTurn: NonNullable<RunRow['roundsInTurn']>) => [
    row('get-cell', {
      concurrency: 1,
      opsPerSecond: 2000,
      // One window each, a minute apart: the store's looks 2× the service's.
      latency: latency(1.0),
      cpu: { server: 600, client: 300, mariadb: 200 },
      gemService: baseline(2000, 0.5, { cpu: { server: 300, client: 150, mariadb: 150 } }),
      roundsInTurn,
    }),
  ];

  it("reads a lone read's rounds in turn with the service where the run took them, not its one window", () => {
    const rows = loneGetCell({
      rounds: 5,
      store: { p50: 0.6, cpu: { server: 400, client: 200, mariadb: 180 } },
      service: { p50: 0.55, cpu: { server: 250, client: 120, mariadb: 160 } },
      overService: { store: { p50: 1.08, cpu: 1.47 } },
    });
    const verdicts = evaluateLoneCallTargets({ rows });
    assert.deepEqual(verdict(verdicts, 'GetCell, 1 in flight: p50'), {
      figure: 'GetCell, 1 in flight: p50',
      target: "≤ 1.1× the gem-shaped service's p50",
      measured:
        "0.60 ms vs 0.55 ms (1.08×; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
      met: true,
    });
    const cpu = verdict(verdicts, 'GetCell, 1 in flight: CPU');
    assert.equal(
      cpu.measured,
      "780 vs 530 µs (1.47×; 400 + 200 + 180 vs 250 + 120 + 160; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(cpu.met, false);
  });

  it("judges a lone read by the median of its rounds' own ratios, not by the ratio of the medians", () => {
    // The medians' ratio says 1.09× (met); the rounds' own ratios, each side at the same moments,
    // say 1.25× and 1.20×: the medians of each side were taken at different paces of the machine.
    const { p50, cpu } = loneVerdicts({
      rounds: 5,
      store: { p50: 0.6, cpu: { server: 200, client: 100, mariadb: 100 } },
      service: { p50: 0.55, cpu: { server: 200, client: 100, mariadb: 100 } },
      overService: { store: { p50: 1.25, cpu: 1.2 } },
    });
    assert.equal(
      p50.measured,
      "0.60 ms vs 0.55 ms (1.25×; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(p50.met, false);
    assert.equal(
      cpu.measured,
      "400 vs 400 µs (1.20×; 200 + 100 + 100 vs 200 + 100 + 100; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(cpu.met, true);
  });

  /** A lone GetCell's p50 and CPU verdicts from its rounds. */
  const loneVerdicts = (roundsInTurn: NonNullable<RunRow['roundsInTurn']>) => {
    const verdicts = evaluateLoneCallTargets({ rows: loneGetCell(roundsInTurn) });
    return {
      p50: verdict(verdicts, 'GetCell, 1 in flight: p50'),
      cpu: verdict(verdicts, 'GetCell, 1 in flight: CPU'),
    };
  };

  it("prints the protocol floor's p50 and CPU beside a lone GetCell's where its rounds took it; the verdict stays the service's", () => {
    const { p50, cpu } = loneVerdicts({
      rounds: 3,
      store: { p50: 0.5, cpu: { server: 240, client: 180, mariadb: 110 } },
      service: { p50: 0.2, cpu: { server: 100, client: 70, mariadb: 90 } },
      floor: { p50: 0.23, cpu: { server: 110, client: 80, mariadb: 100 } },
      overService: { store: { p50: 2.5, cpu: 2.04 }, floor: { p50: 1.15, cpu: 1.12 } },
    });
    assert.equal(
      p50.measured,
      "0.50 ms vs 0.20 ms (2.50×; the protocol's floor 0.23 ms, 1.15×; medians of 3 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(p50.met, false);
    assert.equal(
      cpu.measured,
      "530 vs 260 µs (2.04×; 240 + 180 + 110 vs 100 + 70 + 90; the protocol's floor 290, 1.12×; medians of 3 rounds in turn, each ratio the median of the rounds' own)",
    );
  });

  it("prints the store's figures without the SDK before the floor's, as ratios to the service's; the verdict stays the SDK's", () => {
    const { p50, cpu } = loneVerdicts({
      rounds: 5,
      store: { p50: 0.84, cpu: { server: 462, client: 258, mariadb: 211 } },
      service: { p50: 0.58, cpu: { server: 307, client: 135, mariadb: 204 } },
      floor: { p50: 0.61, cpu: { server: 330, client: 170, mariadb: 213 } },
      bareClient: { p50: 0.62, cpu: { server: 400, client: 150, mariadb: 210 } },
      overService: {
        store: { p50: 1.45, cpu: 1.44 },
        floor: { p50: 1.05, cpu: 1.1 },
        bareClient: { p50: 1.07, cpu: 1.18 },
      },
    });
    assert.equal(
      p50.measured,
      "0.84 ms vs 0.58 ms (1.45×; without the SDK 0.62 ms, 1.07×; the protocol's floor 0.61 ms, 1.05×; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(p50.met, false);
    assert.equal(
      cpu.measured,
      "931 vs 646 µs (1.44×; 462 + 258 + 211 vs 307 + 135 + 204; without the SDK 760, 1.18×; the protocol's floor 713, 1.10×; medians of 5 rounds in turn, each ratio the median of the rounds' own)",
    );
    assert.equal(cpu.met, false);
  });

  it("asks 1.3× the gem-shaped service's throughput at 16 in flight", () => {
    const rows = [
      row('get-cell', { concurrency: 16, opsPerSecond: 1300, gemService: baseline(1000) }),
      row('where-1', { concurrency: 16, opsPerSecond: 1299, gemService: baseline(1000) }),
      // At 64 in flight it would pass: not the target's row.
      row('where-1', { concurrency: 64, opsPerSecond: 9000, gemService: baseline(1000) }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    const get = verdict(verdicts, 'GetCell, 16 in flight');
    assert.equal(get.measured, '1.30× (1,300 vs 1,000)');
    assert.equal(get.met, true);
    assert.equal(verdict(verdicts, 'Where (1 record), 16 in flight').met, false);
  });

  it('judges 16 in flight by its rounds in turn with the service where the run took them, not its one run', () => {
    // The two runs, seconds apart, say 0.81×; the rounds, each side at the same moments, 1.35×.
    const rounds = (ratio: number) => ({
      rounds: 20,
      store: { p50: 1.1, cpu: {}, opsPerSecond: 16_200 },
      service: { p50: 1.0, cpu: {}, opsPerSecond: 12_000 },
      overService: { store: { p50: 1.1, opsPerSecond: ratio } },
    });
    const at16 = (ratio: number) =>
      verdict(
        evaluateLoneCallTargets({
          rows: [
            row('get-cell', {
              concurrency: 16,
              opsPerSecond: 11_872,
              gemService: baseline(14_697),
              roundsInTurn: rounds(ratio),
            }),
          ],
        }),
        'GetCell, 16 in flight',
      );
    assert.deepEqual(at16(1.35), {
      figure: 'GetCell, 16 in flight: ops/s',
      target: "≥ 1.3× the gem-shaped service's",
      measured:
        "1.35× (16,200 vs 12,000; medians of 20 rounds in turn, each ratio the median of the rounds' own; the runs above 11,872 vs 14,697)",
      met: true,
    });
    assert.equal(at16(1.29).met, false);
  });

  it('holds the idle server with its defaults to 0.5% of a core and 2 statements/s', () => {
    const verdicts = evaluateLoneCallTargets({
      rows: [],
      idle: idle(
        // The side whose probe never rests is not the defaults either: it would fail.
        { ...side(16, true, 0.009, 1), probeRests: false },
        side(16, true, 0.005, 2),
        // The side with the probe off is not the defaults: it would pass.
        side(1024, false, 0, 0),
        side(1024, true, 0.0051, 1),
      ),
    });
    const sixteen = verdict(verdicts, 'idle server, 16 shards');
    assert.equal(sixteen.target, '≤ 0.5% of a core, ≤ 2 statements/s per partition');
    assert.equal(sixteen.measured, '0.50% of a core, 2.00 statements/s');
    assert.equal(sixteen.met, true);
    assert.equal(verdict(verdicts, 'idle server, 1,024 shards').met, false);

    const statements = evaluateLoneCallTargets({ rows: [], idle: idle(side(16, true, 0, 2.01)) });
    assert.equal(verdict(statements, 'idle server, 16 shards').met, false);
    assert.equal(
      verdict(statements, 'idle server, 1,024 shards').measured,
      'not measured: no side of 1,024 shards with the defaults',
    );
    assert.equal(
      verdict(evaluateLoneCallTargets({ rows: [] }), 'idle server, 16 shards').measured,
      'not measured: no idle run (--workloads idle)',
    );
  });

  it("holds the half-peak p99 to the gem-shaped service's at the same rate, echoes beside it", () => {
    const rows = [
      row('get-cell', { concurrency: 16, opsPerSecond: 2000, latency: latency(1, 1) }),
      row('get-cell', {
        concurrency: 0,
        openLoopRate: 1000,
        opsPerSecond: 1000,
        latency: latency(1, 4),
        echo: baseline(1000, 0.5),
        streamEcho: baseline(1000, 0.25),
        gemService: baseline(1000, 2),
      }),
      row('where-1', {
        concurrency: 0,
        openLoopRate: 1500,
        opsPerSecond: 1500,
        latency: latency(1, 4.01),
        gemService: baseline(1500, 2),
      }),
      // The writes' half-peak rows have no target.
      row('put-update', {
        concurrency: 0,
        openLoopRate: 500,
        opsPerSecond: 500,
        latency: latency(1, 99),
      }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows });
    const get = verdict(verdicts, 'GetCell, p99 at half its peak');
    assert.equal(get.target, "≤ the gem-shaped service's p99 at the same rate");
    assert.equal(get.measured, '4.00 ms vs 4.00 ms at 1,000/s (bare echo 1.00, stream echo 0.50)');
    assert.equal(get.met, true);
    const where = verdict(verdicts, 'Where (1 record), p99 at half its peak');
    assert.equal(where.measured, '4.01 ms vs 4.00 ms at 1,500/s');
    assert.equal(where.met, false);
    assert.deepEqual(
      verdicts.filter((v) => v.figure.startsWith('Put') && v.figure.includes('half')),
      [],
    );
    assert.equal(
      verdict(evaluateLoneCallTargets({ rows: [] }), 'GetCell, p99 at half its peak').measured,
      'not measured: no half-peak run',
    );
  });

  it('prints a row per target and counts what was met among what was measured', () => {
    const rows = [
      row('get-cell', { concurrency: 16, opsPerSecond: 1300, gemService: baseline(1000) }),
      row('where-1', { concurrency: 16, opsPerSecond: 1000, gemService: baseline(1000) }),
    ];
    const verdicts = evaluateLoneCallTargets({ rows, idle: idle(side(16, true, 0.001, 1)) });
    assert.equal(verdicts.length, 12);
    const printed = formatLoneCallTargets(verdicts);
    assert.match(printed, /^Targets \(issue 55\): 2 of 3 measured met, 9 not measured$/m);
    assert.match(printed, /^\| figure +\| target +\| this run +\| +\|$/m);
    assert.match(printed, /^\| GetCell, 16 in flight: ops\/s +\| ≥ 1\.3× .*\| met +\|$/m);
    assert.match(printed, /^\| Where \(1 record\), 16 in flight: ops\/s .*\| NOT met +\|$/m);
    assert.match(printed, /^\| idle server, 1,024 shards .*\| not measured \|$/m);
  });
});
