// The targets of issue 55 ("The lone call and the idle server: cost no more than the hop itself"),
// each beside what this run measured and whether it is met. Every figure is compared with one of
// the same run, so that the verdicts hold on any machine: the reads with the gem-shaped service
// (the gem's reads behind a bare hop; a lone read's, and 16 in flight, in rounds the two took in
// turn, each ratio the median of the rounds' own, alternatingRounds.ts, where the run took them),
// the writes with the echo and the gem-shaped baseline, the idle server with fixed bounds. Rows of
// 1 KB bodies, the issue's setting; a target whose run was not part of this one is "not
// measured", with what was missing.
import type { CpuPerOperation } from '../measure/processCpu.js';
import {
  type RatiosToService,
  type RoundFigures,
  cpuSum,
  ratiosToService,
} from '../workloads/alternatingRounds.js';
import { type IdleResult, withServerDefaults } from '../workloads/idleServer.js';
import { type Workload, getCell, putCreate, putUpdate, whereOne } from '../workloads/workloads.js';
import { IDLE_CPU_TARGET, IDLE_STATEMENTS_TARGET } from './idleReport.js';
import { oneAtATimeChecks } from './oneAtATime.js';
import type { Baseline, RunRow } from './report.js';

export interface LoneCallVerdict {
  readonly figure: string;
  readonly target: string;
  /** This run's figure, with what it was compared to; or why it was not measured. */
  readonly measured: string;
  /** Undefined when this run did not measure it. */
  readonly met: boolean | undefined;
}

export interface LoneCallInputs {
  readonly rows: readonly RunRow[];
  /** The idle server's sides (`--workloads idle`), when they ran. */
  readonly idle?: IdleResult;
}

/** One call in flight: a point read's p50 at most this times the gem-shaped service's. */
export const LONE_READ_P50_FACTOR = 1.1;
/** One call in flight: a put's p50 at most the echo's + the gem-shaped baseline's + this. */
export const LONE_WRITE_ALLOWANCE_MS = 0.1;
/** A lone read's CPU (server + SDK + MariaDB) at most this times the gem-shaped service's. */
export const LONE_READ_CPU_FACTOR = 1.3;
/** 16 in flight: a point read's throughput at least this times the gem-shaped service's. */
export const BATCHED_READ_FACTOR = 1.3;
/** The shard counts the idle server is held to its bounds at. */
export const IDLE_SHARDS: readonly number[] = [16, 1024];

const KB = 1024;
const IN_FLIGHT = 16;
const READS: readonly Workload[] = [getCell, whereOne];
const WRITES: readonly Workload[] = [putUpdate, putCreate];

const count = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => `${value.toFixed(2)} ms`;
const micros = (value: number) => value.toFixed(0);

export function evaluateLoneCallTargets({ rows, idle }: LoneCallInputs): LoneCallVerdict[] {
  const closedLoop = (workload: Workload, concurrency: number) =>
    rows.find(
      (row) =>
        row.workloadId === workload.id &&
        row.bodyBytes === KB &&
        row.openLoopRate === undefined &&
        row.concurrency === concurrency,
    );
  const halfPeak = (workload: Workload) =>
    rows.find(
      (row) =>
        row.workloadId === workload.id && row.bodyBytes === KB && row.openLoopRate !== undefined,
    );
  const verdicts: LoneCallVerdict[] = [];
  const add = (
    figure: string,
    target: string,
    judged: { measured: string; met: boolean } | string,
  ) =>
    verdicts.push(
      typeof judged === 'string'
        ? { figure, target, measured: `not measured: ${judged}`, met: undefined }
        : { figure, target, ...judged },
    );
  // The row and its gem-shaped service, or why either is missing.
  const withService = (row: RunRow | undefined, run: string) =>
    !row
      ? `no ${run} run`
      : !row.gemService
        ? `no gem-shaped service beside the ${run} run`
        : { row, service: row.gemService };

  for (const workload of READS) {
    const found = withService(closedLoop(workload, 1), '1 in flight');
    add(
      `${workload.name}, 1 in flight: p50`,
      `≤ ${LONE_READ_P50_FACTOR}× the gem-shaped service's p50`,
      typeof found === 'string' ? found : p50Verdict(loneFigures(found.row, found.service)),
    );
  }

  const checks = oneAtATimeChecks(rows, LONE_WRITE_ALLOWANCE_MS).filter(
    (check) => check.bodyBytes === KB,
  );
  for (const workload of WRITES) {
    const check = checks.find((candidate) => candidate.workloadId === workload.id);
    add(
      `${workload.name}, 1 in flight: p50`,
      `≤ echo p50 + gem-shaped p50 + ${LONE_WRITE_ALLOWANCE_MS} ms`,
      check
        ? {
            measured:
              `${ms(check.sdkP50)} vs ${ms(check.budget)} (echo ${check.echoP50.toFixed(2)} + ` +
              `gem-shaped ${check.gemP50.toFixed(2)} + ${LONE_WRITE_ALLOWANCE_MS})`,
            met: check.met,
          }
        : closedLoop(workload, 1)
          ? 'no echo or gem-shaped baseline beside the 1 in flight run'
          : 'no 1 in flight run',
    );
  }

  for (const workload of READS) {
    const found = withService(closedLoop(workload, 1), '1 in flight');
    add(
      `${workload.name}, 1 in flight: CPU µs per read`,
      `≤ ${LONE_READ_CPU_FACTOR}× the gem-shaped service's, each server + client + MariaDB`,
      typeof found === 'string' ? found : cpuVerdict(loneFigures(found.row, found.service)),
    );
  }

  for (const workload of READS) {
    const found = withService(closedLoop(workload, IN_FLIGHT), `${IN_FLIGHT} in flight`);
    add(
      `${workload.name}, ${IN_FLIGHT} in flight: ops/s`,
      `≥ ${BATCHED_READ_FACTOR}× the gem-shaped service's`,
      typeof found === 'string' ? found : throughputVerdict(found.row, found.service),
    );
  }

  for (const shards of IDLE_SHARDS) {
    // The server's defaults: the side with the health probe on, resting while the server idles.
    const side = idle?.sides.find(
      (candidate) => candidate.shards === shards && withServerDefaults(candidate),
    );
    add(
      `idle server, ${count(shards)} shards`,
      `≤ ${IDLE_CPU_TARGET * 100}% of a core, ≤ ${IDLE_STATEMENTS_TARGET} statements/s per partition`,
      side
        ? {
            measured:
              `${(side.cpuShare * 100).toFixed(2)}% of a core, ` +
              `${side.statementsPerSecond.toFixed(2)} statements/s`,
            met:
              side.cpuShare <= IDLE_CPU_TARGET &&
              side.statementsPerSecond <= IDLE_STATEMENTS_TARGET,
          }
        : idle
          ? `no side of ${count(shards)} shards with the defaults`
          : 'no idle run (--workloads idle)',
    );
  }

  for (const workload of READS) {
    const found = withService(halfPeak(workload), 'half-peak');
    add(
      `${workload.name}, p99 at half its peak`,
      "≤ the gem-shaped service's p99 at the same rate",
      typeof found === 'string'
        ? found
        : {
            measured:
              `${ms(found.row.latency.p99)} vs ${ms(found.service.p99)} at ${count(found.row.openLoopRate!)}/s` +
              floorsOf(found.row),
            met: found.row.latency.p99 <= found.service.p99,
          },
    );
  }
  return verdicts;
}

/**
 * A lone read's figures and the gem-shaped service's: the medians of their rounds in turn where
 * the run took them, else each side's one window.
 */
interface LoneFigures {
  readonly store: RoundFigures;
  readonly service: RoundFigures;
  /** The store's protocol over a bare handler, where its rounds took it (protocolFloor.ts). */
  readonly floor?: RoundFigures;
  /** The store's server called by a bare Pipeline client (no SDK), where its rounds took it. */
  readonly bareClient?: RoundFigures;
  /** Each side's ratios to the service: the rounds' medians of their own, else the windows'. */
  readonly overService: {
    readonly store: RatiosToService;
    readonly floor?: RatiosToService;
    readonly bareClient?: RatiosToService;
  };
  /** What the figures are: said after them. */
  readonly from: string;
}

/**
 * Reads 16 in flight against the gem-shaped service's: the medians of their rounds in turn, and
 * the median of the rounds' own ratios, where the run took them; else the two runs' figures.
 */
function throughputVerdict(row: RunRow, service: Baseline): { measured: string; met: boolean } {
  const rounds = row.roundsInTurn;
  const ratio = rounds?.overService.store.opsPerSecond;
  if (rounds && ratio !== undefined) {
    return {
      measured:
        `${ratio.toFixed(2)}× (${count(rounds.store.opsPerSecond!)} vs ` +
        `${count(rounds.service.opsPerSecond!)}; medians of ${rounds.rounds} rounds in turn, ` +
        "each ratio the median of the rounds' own; the runs above " +
        `${count(row.opsPerSecond)} vs ${count(service.opsPerSecond)})`,
      met: ratio >= BATCHED_READ_FACTOR,
    };
  }
  return {
    measured:
      `${(row.opsPerSecond / service.opsPerSecond).toFixed(2)}× ` +
      `(${count(row.opsPerSecond)} vs ${count(service.opsPerSecond)})`,
    met: row.opsPerSecond >= BATCHED_READ_FACTOR * service.opsPerSecond,
  };
}

function loneFigures(row: RunRow, service: Baseline): LoneFigures {
  const rounds = row.roundsInTurn;
  if (rounds) {
    return {
      ...rounds,
      from: `; medians of ${rounds.rounds} rounds in turn, each ratio the median of the rounds' own`,
    };
  }
  // One window of each side: its ratios are those of the two windows.
  const storeWindow = { p50: row.latency.p50, cpu: row.cpu };
  const serviceWindow = { p50: service.p50, cpu: service.cpu ?? {} };
  return {
    store: storeWindow,
    service: serviceWindow,
    overService: { store: ratiosToService([storeWindow], [serviceWindow]) },
    from: '',
  };
}

/**
 * A lone read's p50 against the gem-shaped service's (and, where measured, the store's without
 * the SDK and the protocol floor's).
 */
function p50Verdict({ store, service, floor, bareClient, overService, from }: LoneFigures): {
  measured: string;
  met: boolean;
} {
  const beside = (name: string, side?: RoundFigures, ratios?: RatiosToService) =>
    side && ratios ? `; ${name} ${ms(side.p50)}, ${ratios.p50.toFixed(2)}×` : '';
  return {
    measured:
      `${ms(store.p50)} vs ${ms(service.p50)} (${overService.store.p50.toFixed(2)}×` +
      beside('without the SDK', bareClient, overService.bareClient) +
      `${beside("the protocol's floor", floor, overService.floor)}${from})`,
    met: overService.store.p50 <= LONE_READ_P50_FACTOR,
  };
}

/** A lone read's CPU against the gem-shaped service's, each the sum of its three processes. */
function cpuVerdict({
  store,
  service,
  floor,
  bareClient,
  overService,
  from,
}: LoneFigures): { measured: string; met: boolean } | string {
  const parts = (of: CpuPerOperation) =>
    of.server !== undefined && of.client !== undefined && of.mariadb !== undefined
      ? [of.server, of.client, of.mariadb]
      : undefined;
  const ours = parts(store.cpu);
  const gem = parts(service.cpu);
  if (!ours) return "a process's CPU unread in the SDK's run";
  if (!gem) return "a process's CPU unread in the gem-shaped service's run";
  // A median has a process's CPU only where every round read it: with all three of both
  // sides there, every round's ratio was taken.
  const ratio = overService.store.cpu!;
  const beside = (name: string, side?: RoundFigures, ratios?: RatiosToService) => {
    const sum = side && cpuSum(side.cpu);
    return sum !== undefined && ratios?.cpu !== undefined
      ? `; ${name} ${micros(sum)}, ${ratios.cpu.toFixed(2)}×`
      : '';
  };
  return {
    measured:
      `${micros(cpuSum(store.cpu)!)} vs ${micros(cpuSum(service.cpu)!)} µs ` +
      `(${ratio.toFixed(2)}×; ` +
      `${ours.map(micros).join(' + ')} vs ${gem.map(micros).join(' + ')}` +
      beside('without the SDK', bareClient, overService.bareClient) +
      `${beside("the protocol's floor", floor, overService.floor)}${from})`,
    met: ratio <= LONE_READ_CPU_FACTOR,
  };
}

/**
 * The echoes' p99 at a half-peak row's rate, where they ran: the transport's own floor, which no
 * call through it can beat.
 */
function floorsOf(row: RunRow): string {
  const floors = [
    row.echo && `bare echo ${row.echo.p99.toFixed(2)}`,
    row.streamEcho && `stream echo ${row.streamEcho.p99.toFixed(2)}`,
  ].filter(Boolean);
  return floors.length > 0 ? ` (${floors.join(', ')})` : '';
}

export function formatLoneCallTargets(verdicts: readonly LoneCallVerdict[]): string {
  const verdict = (met: boolean | undefined) =>
    met === undefined ? 'not measured' : met ? 'met' : 'NOT met';
  const columns = ['figure', 'target', 'this run', ''];
  const rows = verdicts.map((v) => [v.figure, v.target, v.measured, verdict(v.met)]);
  const widths = columns.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  const met = verdicts.filter((v) => v.met === true).length;
  const measured = verdicts.filter((v) => v.met !== undefined).length;
  return [
    `Targets (issue 55): ${met} of ${measured} measured met, ${verdicts.length - measured} not measured`,
    '',
    render(columns),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...rows.map(render),
    '',
    "1 KB bodies; each figure against the same run's: the gem-shaped service (the gem's reads in a " +
      'server of their own behind one stream), the echo and the gem-shaped (in-process) baseline. ' +
      'CPU µs per read as in the table (a lone read: the medians of its rounds in turn with the ' +
      "service, where said, and each ratio the median of the rounds' own; 16 in flight the same, " +
      "where said, the runs' own figures after them); beside a half-peak p99, the echoes' at the " +
      'same rate.',
  ].join('\n');
}
