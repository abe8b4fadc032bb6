// The scaling curve: Put (update), GetCell and Where (1 record) measured as the model grows
// to each size in turn (10k, 100k, 1M records by default), to show latency stays flat.
import type { BenchStore, SeededSet } from '../subjects/benchStore.js';
import { bulkSeed } from './bulkSeed.js';
import { runClosedLoop } from '../load/closedLoop.js';
import type { LatencySummary } from '../load/latency.js';
import { BaselineTables, openBaselinePools } from '../subjects/mysqlBaseline.js';
import type { Progress } from '../load/progress.js';
import { type Workload, getCell, putUpdate, whereOne } from './workloads.js';

export const SCALE_WORKLOADS: readonly Workload[] = [putUpdate, getCell, whereOne];

export interface ScalePoint {
  readonly records: number;
  readonly workload: string;
  readonly concurrency: number;
  readonly opsPerSecond: number;
  readonly latency: LatencySummary;
  readonly errors: number;
}

export interface ScaleOptions {
  readonly steps: readonly number[];
  readonly concurrency: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly bodyBytes: number;
}

const FIRST_HOTEL = 500_000;
const PER_HOTEL = 100;

export async function runScaleCurve(
  bench: BenchStore,
  options: ScaleOptions,
  progress: Progress,
): Promise<{ points: ScalePoint[]; seeded: SeededSet }> {
  const tables = new BaselineTables('rate', bench.settings.shardsCount);
  const pools = await openBaselinePools(bench.partitionUrl, 4, tables);
  const uuids: string[] = [];
  const points: ScalePoint[] = [];
  let seeded: SeededSet = { bodyBytes: options.bodyBytes, hotels: [], perHotel: PER_HOTEL, uuids };
  try {
    for (const records of [...options.steps].sort((a, b) => a - b)) {
      const from = uuids.length;
      const task = progress.task(
        `growing the model to ${records.toLocaleString('en-US')} records`,
        records - from,
      );
      const started = Date.now();
      await bulkSeed(
        pools.pool,
        tables,
        { from, to: records, firstHotel: FIRST_HOTEL, bodyBytes: options.bodyBytes },
        uuids,
        task,
      );
      task.done(`in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      seeded = {
        bodyBytes: options.bodyBytes,
        hotels: Array.from({ length: Math.floor(records / PER_HOTEL) }, (_, i) => FIRST_HOTEL + i),
        perHotel: PER_HOTEL,
        uuids,
      };
      for (const workload of SCALE_WORKLOADS) {
        const result = await runClosedLoop(
          workload.sdk({
            rate: bench.rate,
            tables,
            seeded,
            bodyBytes: options.bodyBytes,
            shardsCount: bench.settings.shardsCount,
          }),
          options,
        );
        points.push({
          records,
          workload: workload.name,
          concurrency: options.concurrency,
          opsPerSecond: result.opsPerSecond,
          latency: result.latency,
          errors: result.errors,
        });
        progress.note(
          `${records.toLocaleString('en-US')} records, ${workload.name}: ${Math.round(result.opsPerSecond)} ops/s, ` +
            `p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms`,
        );
      }
    }
  } finally {
    await pools.end();
  }
  return { points, seeded };
}

/** The curve as a Markdown table: one row per size, p50 / p99 per workload. */
export function formatScaleTable(points: readonly ScalePoint[]): string {
  const workloads = [...new Set(points.map((point) => point.workload))];
  const sizes = [...new Set(points.map((point) => point.records))];
  const header = ['records', ...workloads.map((w) => `${w} ops/s · p50 · p99 ms`)];
  const rows = sizes.map((records) => [
    records.toLocaleString('en-US'),
    ...workloads.map((workload) => {
      const point = points.find((p) => p.records === records && p.workload === workload);
      return point
        ? `${Math.round(point.opsPerSecond).toLocaleString('en-US')} · ${point.latency.p50.toFixed(2)} · ${point.latency.p99.toFixed(2)}`
        : '-';
    }),
  ]);
  return [header, header.map(() => '---'), ...rows]
    .map((cells) => `| ${cells.join(' | ')} |`)
    .join('\n');
}

/** A small SVG line chart of p50 and p99 against the record count (log scale). */
export function scaleChartSvg(points: readonly ScalePoint[]): string {
  const width = 640;
  const height = 360;
  const margin = { left: 60, right: 190, top: 30, bottom: 50 };
  const sizes = [...new Set(points.map((p) => p.records))].sort((a, b) => a - b);
  const workloads = [...new Set(points.map((p) => p.workload))];
  const maxMs = Math.max(1, ...points.map((p) => p.latency.p99)) * 1.1;
  const logMin = Math.log10(sizes[0]!);
  const logSpan = Math.max(1e-9, Math.log10(sizes[sizes.length - 1]!) - logMin);
  const x = (records: number) =>
    margin.left + ((Math.log10(records) - logMin) / logSpan) * (width - margin.left - margin.right);
  const y = (ms: number) =>
    height - margin.bottom - (ms / maxMs) * (height - margin.top - margin.bottom);
  const colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
  const lines: string[] = [];
  workloads.forEach((workload, i) => {
    const series = sizes
      .map((records) => points.find((p) => p.records === records && p.workload === workload))
      .filter((p): p is ScalePoint => p !== undefined);
    for (const [stat, dash] of [
      ['p50', ''],
      ['p99', ' stroke-dasharray="5,4"'],
    ] as const) {
      const path = series
        .map(
          (p) =>
            `${x(p.records).toFixed(1)},${y(stat === 'p50' ? p.latency.p50 : p.latency.p99).toFixed(1)}`,
        )
        .join(' ');
      lines.push(
        `<polyline fill="none" stroke="${colours[i % colours.length]}" stroke-width="2"${dash} points="${path}"/>`,
      );
    }
    const legendY = margin.top + i * 36;
    lines.push(
      `<text x="${width - margin.right + 12}" y="${legendY + 12}" fill="${colours[i % colours.length]}">${escapeXml(workload)}</text>`,
      `<text x="${width - margin.right + 12}" y="${legendY + 26}" font-size="10" fill="#555">solid p50, dashed p99</text>`,
    );
  });
  const ticks = sizes.map(
    (records) =>
      `<text x="${x(records).toFixed(1)}" y="${height - margin.bottom + 18}" text-anchor="middle">${records.toLocaleString('en-US')}</text>`,
  );
  const msTicks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const value = maxMs * f;
    return `<text x="${margin.left - 8}" y="${y(value).toFixed(1)}" text-anchor="end" dominant-baseline="middle">${value.toFixed(1)}</text>
<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(value).toFixed(1)}" y2="${y(value).toFixed(1)}" stroke="#eee"/>`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="${margin.left}" y="18" font-weight="bold">Latency (ms) as the model grows (records, log scale)</text>
${msTicks.join('\n')}
${ticks.join('\n')}
${lines.join('\n')}
</svg>
`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
