// The results: one row per run with its baselines, printed as a table and saved as JSON.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LatencySummary } from '../load/latency.js';
import type { CpuPerOperation } from '../measure/processCpu.js';
import { type CacheLookups, formatCacheLookups } from '../measure/serverCaches.js';
import type { AlternatingRounds } from '../workloads/alternatingRounds.js';

/** A baseline's run, at the same payload and concurrency (or rate) as its row's. */
export interface Baseline {
  readonly opsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly errors: number;
  readonly firstError?: string;
  /** CPU per operation of the processes it involves (none measured for the echo). */
  readonly cpu?: CpuPerOperation;
}

export interface RunRow {
  /** The workload's id (`put-update`, ...), for `--workloads` and the targets. */
  readonly workloadId: string;
  /** As printed. */
  readonly workload: string;
  readonly bodyBytes: number;
  /** Calls in flight (closed loop); 0 for an open loop at `openLoopRate`. */
  readonly concurrency: number;
  /** Calls started per second, whatever the answers' pace (an open loop). */
  readonly openLoopRate?: number;
  readonly unit: 'calls' | 'cells' | 'records';
  readonly opsPerSecond: number;
  readonly unitsPerSecond: number;
  readonly latency: LatencySummary;
  readonly errors: number;
  readonly firstError?: string;
  /** CPU per operation of the server, the SDK's process and MariaDB over the measured window. */
  readonly cpu: CpuPerOperation;
  /** What the server's caches answered in the window (when the bench reads its metrics). */
  readonly serverCaches?: CacheLookups;
  /** The bare grpc-js echo of the same payload at the same concurrency, as unary calls. */
  readonly echo?: Baseline;
  /** The same echo as messages of one stream: the road the SDK's Pipeline takes. */
  readonly streamEcho?: Baseline;
  /** The same SQL through mysql2 at the same concurrency. */
  readonly mysql?: Baseline;
  /** The Ruby gem's statements for the operation through mysql2 at the same concurrency. */
  readonly gem?: Baseline;
  /**
   * The gem's read run by the gem-shaped service (gemService.ts), a server of its own behind one
   * stream, at the same concurrency or rate; its `cpu.server` is that server's.
   */
  readonly gemService?: Baseline;
  /**
   * One call at a time or 16 in flight, beside the gem-shaped service: rounds of both sides in
   * turn, each figure the median of its rounds (what issue 55's read verdicts read, when there).
   */
  readonly roundsInTurn?: AlternatingRounds;
}

const ratio = (value: number, baseline: Baseline | undefined) =>
  baseline && baseline.opsPerSecond > 0 ? value / baseline.opsPerSecond : undefined;

/** Throughput against the echo's; none for an open loop, where both run at the same rate. */
export function vsEcho(row: RunRow): number | undefined {
  return row.openLoopRate === undefined ? ratio(row.opsPerSecond, row.echo) : undefined;
}

export function vsMysql(row: RunRow): number | undefined {
  return ratio(row.opsPerSecond, row.mysql);
}

export function vsGem(row: RunRow): number | undefined {
  return ratio(row.opsPerSecond, row.gem);
}

const number = (value: number) =>
  Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '-';
const ms = (value: number) =>
  !Number.isFinite(value) ? '-' : value < 10 ? value.toFixed(2) : value.toFixed(1);
const times = (value: number | undefined) => (value === undefined ? '-' : `${value.toFixed(2)}x`);
const size = (bytes: number) => (bytes >= 1024 ? `${Math.round(bytes / 1024)}KB` : `${bytes}B`);

const micros = (value: number | undefined) => (value === undefined ? '-' : value.toFixed(0));

/**
 * The table, as Markdown (it reads as plain text too): a row per run, each followed by its
 * gem-shaped baseline's row when it has one.
 */
export function formatTable(rows: readonly RunRow[]): string {
  const header = [
    'workload',
    'body',
    'in flight or rate',
    'ops/s',
    'units/s',
    'p50 ms',
    'p99 ms',
    'p99.9 ms',
    'echo ops/s',
    'echo p99',
    'stream echo ops/s',
    'stream echo p99',
    '× echo',
    'mysql2 ops/s',
    '× mysql2',
    '× gem',
    'server µs/op',
    'client µs/op',
    'MariaDB µs/op',
    'errors',
  ];
  const lines = rows.flatMap((row) => {
    const load = row.openLoopRate === undefined ? String(row.concurrency) : `${row.openLoopRate}/s`;
    const line = [
      row.workload,
      size(row.bodyBytes),
      load,
      number(row.opsPerSecond),
      row.unit === 'calls' ? '' : `${number(row.unitsPerSecond)} ${row.unit}`,
      ms(row.latency.p50),
      ms(row.latency.p99),
      ms(row.latency.p999),
      row.echo ? number(row.echo.opsPerSecond) : '-',
      row.echo ? ms(row.echo.p99) : '-',
      row.streamEcho ? number(row.streamEcho.opsPerSecond) : '-',
      row.streamEcho ? ms(row.streamEcho.p99) : '-',
      times(vsEcho(row)),
      row.mysql ? number(row.mysql.opsPerSecond) : '-',
      times(vsMysql(row)),
      times(vsGem(row)),
      micros(row.cpu.server),
      micros(row.cpu.client),
      micros(row.cpu.mariadb),
      String(row.errors),
    ];
    // Each baseline that ran beside it in a row of its own: no echo, mysql2 or ratio columns.
    const below = [
      ['gem-shaped', row.gem],
      ['gem-shaped service', row.gemService],
    ] as const;
    const lines = [line];
    for (const [name, baseline] of below) {
      if (!baseline) continue;
      lines.push([
        `${row.workload}, ${name}`,
        size(row.bodyBytes),
        load,
        number(baseline.opsPerSecond),
        '',
        ms(baseline.p50),
        ms(baseline.p99),
        ms(baseline.p999),
        ...Array.from({ length: 8 }, () => '-'),
        // The gem-shaped client has no server: it talks to MariaDB itself.
        micros(baseline.cpu?.server),
        micros(baseline.cpu?.client),
        micros(baseline.cpu?.mariadb),
        String(baseline.errors),
      ]);
    }
    return lines;
  });
  const widths = header.map((title, i) =>
    Math.max(title.length, ...lines.map((line) => line[i]!.length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i < 3 ? '-'.repeat(width + 2) : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [render(header), rule, ...lines.map(render)].join('\n');
}

/** What the table's columns mean, printed under it. */
export function tableLegend(cpu: { clock: string; mariadb: string }): string {
  return [
    "× echo, × mysql2, × gem: ops/s over the baseline's at the same concurrency (echo: unary calls;",
    'stream echo: the same payload as messages of one open stream, the road the SDK takes). gem-shaped: the Ruby',
    "gem's statements for the operation (autocommit, no lock) through mysql2, one connection per worker;",
    "its errors are the gem's own update race (two updates read version n, the second insert fails).",
    'gem-shaped service: the same reads run by a bare grpc-js server of their own, one per message of one',
    "stream, its CPU in the server column: the gem behind the store's hop.",
    'µs/op: CPU time per operation completed in the measured window. server = `shameless serve`;',
    'client = this process (the SDK, or the gem-shaped client, and the load loop);',
    `MariaDB = ${cpu.mariadb}, with any other client's load on it. ${cpu.clock}`,
  ].join('\n');
}

/**
 * What the server's caches answered in each SDK run that asked them: a miss costs its call a
 * round trip more. Empty when no run has the counters.
 */
export function formatCacheSection(rows: readonly RunRow[]): string {
  const lines = rows.flatMap((row) => {
    const said = row.serverCaches ? formatCacheLookups(row.serverCaches) : '';
    if (said === '') return [];
    const load =
      row.openLoopRate === undefined ? `${row.concurrency} in flight` : `${row.openLoopRate}/s`;
    return [`  ${row.workload}, ${size(row.bodyBytes)}, ${load}: ${said}`];
  });
  if (lines.length === 0) return '';
  return [
    "The server's caches in each SDK run's window (a miss costs its call a round trip more):",
    ...lines,
  ].join('\n');
}

/** Writes `report` as `<directory>/<name>.json` and returns the path. */
export async function saveReport(directory: string, name: string, report: unknown) {
  await mkdir(directory, { recursive: true });
  const path = join(directory, `${name}.json`);
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}
