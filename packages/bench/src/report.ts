// The results: one row per run with its baselines, printed as a table and saved as JSON.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LatencySummary } from './latency.js';

export interface Baseline {
  readonly opsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
}

export interface RunRow {
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
  /** The bare grpc-js echo of the same payload at the same concurrency. */
  readonly echo?: Baseline;
  /** The same SQL through mysql2 at the same concurrency. */
  readonly mysql?: Baseline;
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

const number = (value: number) =>
  Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '-';
const ms = (value: number) =>
  !Number.isFinite(value) ? '-' : value < 10 ? value.toFixed(2) : value.toFixed(1);
const times = (value: number | undefined) => (value === undefined ? '-' : `${value.toFixed(2)}x`);
const size = (bytes: number) => (bytes >= 1024 ? `${Math.round(bytes / 1024)}KB` : `${bytes}B`);

/** The table, as Markdown (it reads as plain text too). */
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
    'vs echo',
    'mysql2 ops/s',
    'vs mysql2',
    'errors',
  ];
  const lines = rows.map((row) => [
    row.workload,
    size(row.bodyBytes),
    row.openLoopRate === undefined ? String(row.concurrency) : `${row.openLoopRate}/s`,
    number(row.opsPerSecond),
    row.unit === 'calls' ? '' : `${number(row.unitsPerSecond)} ${row.unit}`,
    ms(row.latency.p50),
    ms(row.latency.p99),
    ms(row.latency.p999),
    row.echo ? number(row.echo.opsPerSecond) : '-',
    row.echo ? ms(row.echo.p99) : '-',
    times(vsEcho(row)),
    row.mysql ? number(row.mysql.opsPerSecond) : '-',
    times(vsMysql(row)),
    String(row.errors),
  ]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...lines.map((line) => line[i]!.length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i < 3 ? '-'.repeat(width + 2) : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [render(header), rule, ...lines.map(render)].join('\n');
}

/** Writes `report` as `<directory>/<name>.json` and returns the path. */
export async function saveReport(directory: string, name: string, report: unknown) {
  await mkdir(directory, { recursive: true });
  const path = join(directory, `${name}.json`);
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}
