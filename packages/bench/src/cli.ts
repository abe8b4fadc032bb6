#!/usr/bin/env node
// `pnpm bench`: Shameless through the SDK, measured against a bare grpc-js echo and raw mysql2
// running the same SQL, in the same run on the same machine.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startListeningProcess } from '@shameless/testkit';
import { Command, InvalidArgumentError } from 'commander';
import mysql from 'mysql2/promise';
import { openBenchStore, seedRates, serverConnection } from './benchStore.js';
import { memorySummary, sampleMemory } from './memorySampler.js';
import { soak, streamToSlowConsumer } from './memoryRuns.js';
import { buildPlan, workloadIds } from './plan.js';
import { stderrProgress } from './progress.js';
import { formatScaleTable, runScaleCurve, scaleChartSvg } from './scaleCurve.js';
import { formatTable, saveReport, vsEcho, vsMysql } from './report.js';
import { type SuitePlan, runSuite } from './suite.js';

const here = dirname(fileURLToPath(import.meta.url));
const REPO = join(here, '../../../..');
const DEFAULT_SCALE = [10_000, 100_000, 1_000_000];

const positiveInteger = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError('expected a positive integer');
  }
  return parsed;
};

const program = new Command('bench')
  .description(
    'Benchmarks Shameless through the SDK against baselines measured in the same run: a bare ' +
      'grpc-js unary echo of the same payload (the transport limit) and raw mysql2 running the ' +
      "server's SQL at the same concurrency (the database limit). Prints one table (stdout) and\n" +
      'writes it as JSON under --out. Progress goes to stderr. Uses a throwaway database.',
  )
  .option('--quick', 'one concurrency level and 1 KB bodies only: under a minute', false)
  .option(
    '--workloads <ids>',
    `comma-separated subset of: ${workloadIds().join(', ')}`,
    (value: string) => value.split(',').filter(Boolean),
    [] as string[],
  )
  .option(
    '--duration-ms <ms>',
    'measured time of each run (default 2000, quick 1000)',
    positiveInteger,
  )
  .option(
    '--warmup-ms <ms>',
    'unmeasured time before each run (default 400, quick 200)',
    positiveInteger,
  )
  .option(
    '--mysql-url <url>',
    'MySQL server to use, without a database (env MYSQL_URL)',
    process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306',
  )
  .option('--database <name>', 'throwaway database, dropped before and after', 'shameless_bench')
  .option(
    '--shards-count <n>',
    "the store's shard count (the server's default)",
    positiveInteger,
    16,
  )
  .option('--pool-size <n>', "the server's MySQL connections (per partition)", positiveInteger, 32)
  .option(
    '--no-coalesce',
    'send every SDK call on its own, as connect({ coalesce: false }) does (by default the SDK ' +
      'sends calls made in the same tick as one batch call)',
  )
  .option('--out <dir>', 'where the JSON report goes', join(REPO, 'bench-results'))
  .option(
    '--profile [dir]',
    'write a CPU profile of the server (open it in Chrome DevTools or speedscope) to dir',
  )
  .option(
    '--scale [records]',
    'instead of the suite: the scaling curve (Put, GetCell, Where at each model size, comma-separated), ' +
      'then a stream of the 1M cells to a slow consumer',
    (value: string) => value.split(',').map(positiveInteger),
  )
  .option(
    '--soak [minutes]',
    'instead of the suite: a mixed load for this long (default 5), sampling server memory',
    positiveInteger,
  )
  .addHelpText(
    'after',
    '\nExamples:\n  pnpm bench --quick\n  pnpm bench --workloads get-cell,write-cell --duration-ms 5000\n',
  );

program.parse();
const options = program.opts<{
  quick: boolean;
  workloads: string[];
  durationMs?: number;
  warmupMs?: number;
  mysqlUrl: string;
  database: string;
  shardsCount: number;
  poolSize: number;
  coalesce: boolean;
  out: string;
  scale?: number[] | true;
  soak?: number | true;
  profile?: string | true;
}>();

const progress = stderrProgress();
const plan = planFromOptions();
const startedAt = new Date();
const environment = await describeEnvironment(options.mysqlUrl).catch((error: Error): never => {
  return program.error(
    `error: cannot reach MySQL at ${options.mysqlUrl.replace(/:[^:@/]*@/, ':***@')}: ${error.message}\n` +
      'Start MariaDB (see the README) or pass --mysql-url mysql://user:password@host:port',
  );
});
progress.note(
  `${environment.cpus} × ${environment.cpuModel}, Node ${process.version}, ${environment.database}`,
);
const bench = await openBenchStore({
  mysqlUrl: options.mysqlUrl,
  database: options.database,
  shardsCount: options.shardsCount,
  poolSize: options.poolSize,
  coalesce: options.coalesce,
  ...(options.profile
    ? { profileDir: options.profile === true ? join(options.out, 'profiles') : options.profile }
    : {}),
});
const reportName = startedAt.toISOString().replace(/[:.]/g, '-');
const settings = { ...options, mysqlUrl: undefined };
try {
  if (options.scale) await scaleMode(options.scale === true ? DEFAULT_SCALE : options.scale);
  else if (options.soak) await soakMode(options.soak === true ? 5 : options.soak);
  else await suiteMode();
} finally {
  await bench.close();
}

async function suiteMode() {
  const echo = await startListeningProcess([join(here, 'echoServerMain.js')], {
    name: 'echo baseline',
  });
  const memory = sampleMemory(bench.server);
  try {
    const result = await runSuite(bench, echo.address, plan, progress);
    const series = memory.stop();
    const follow = result.follow;
    const steady = memorySummary(series, 10);
    console.log(formatTable(result.rows));
    console.log(
      `\nEach follow (${plan.follow.writers} writers, ${Math.round(follow.writesPerSecond)} writes/s): ` +
        `acknowledgement → delivery p50 ${follow.latency.p50.toFixed(1)} ms, p99 ${follow.latency.p99.toFixed(1)} ms, ` +
        `p99.9 ${follow.latency.p999.toFixed(1)} ms over ${follow.delivered} cells (${follow.undelivered} undelivered)`,
    );
    if (steady) {
      console.log(
        `Server RSS: ${steady.firstMiB.toFixed(0)} MiB after start-up, ${steady.lastMiB.toFixed(0)} MiB at the end, ` +
          `${steady.maxMiB.toFixed(0)} MiB at most`,
      );
    }
    await save(reportName, {
      plan: { ...plan, runs: plan.runs.map((run) => ({ ...run, workload: run.workload.id })) },
      rows: result.rows.map((row) => ({ ...row, vsEcho: vsEcho(row), vsMysql: vsMysql(row) })),
      follow,
      memory: { summary: steady, samples: series.samples },
    });
  } finally {
    memory.stop();
    await echo.kill();
  }
}

async function scaleMode(steps: readonly number[]) {
  const { points } = await runScaleCurve(
    bench,
    {
      steps,
      concurrency: 16,
      warmupMs: plan.warmupMs,
      durationMs: options.durationMs ?? 5000,
      bodyBytes: 1024,
    },
    progress,
  );
  console.log(formatScaleTable(points));
  const largest = Math.max(...steps);
  const stream = await streamToSlowConsumer(
    bench,
    { cells: largest, cellsPerSecond: 20_000 },
    progress,
  );
  console.log(
    `\nStreaming ${stream.received.toLocaleString('en-US')} cells to a consumer taking 20,000/s (${stream.seconds.toFixed(0)} s): ` +
      `server RSS ${stream.beforeMiB.toFixed(0)} MiB before, ${stream.maxMiB.toFixed(0)} MiB at most`,
  );
  const chart = join(options.out, `${reportName}-scale.svg`);
  await mkdir(options.out, { recursive: true });
  await writeFile(chart, scaleChartSvg(points));
  console.log(`Chart: ${relative(process.cwd(), chart)}`);
  await save(`${reportName}-scale`, { points, stream });
}

async function soakMode(minutes: number) {
  const seeded = await seedRates(
    bench.rate,
    { firstHotel: 1, hotels: 40, perHotel: 100, bodyBytes: 1024 },
    progress,
  );
  const { load, series, summary } = await soak(
    bench,
    seeded,
    { minutes, concurrency: 16 },
    progress,
  );
  console.log(
    `Soak: ${minutes} min of GetCell/WriteCell/Put (update) at 16 in flight, ${Math.round(load.opsPerSecond)} ops/s, ` +
      `p99 ${load.latency.p99.toFixed(2)} ms, ${load.errors} errors`,
  );
  if (summary) {
    console.log(
      `Server RSS after 30 s: ${summary.firstMiB.toFixed(0)} MiB; at the end: ${summary.lastMiB.toFixed(0)} MiB ` +
        `(${(summary.growth * 100).toFixed(1)}%); at most ${summary.maxMiB.toFixed(0)} MiB`,
    );
  }
  await save(`${reportName}-soak`, { load, memory: { summary, samples: series.samples } });
}

async function save(name: string, report: Record<string, unknown>) {
  const path = await saveReport(options.out, name, { startedAt, environment, settings, ...report });
  console.log(`\nSaved ${relative(process.cwd(), path)}`);
}

async function describeEnvironment(mysqlUrl: string) {
  const connection = await mysql.createConnection(serverConnection(mysqlUrl));
  try {
    const [rows] = await connection.query(
      `SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush,
              @@innodb_buffer_pool_size AS pool, @@sync_binlog AS sync_binlog`,
    );
    const row = (rows as Record<string, unknown>[])[0]!;
    return {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown CPU',
      node: process.version,
      database: `MySQL ${String(row.version)} (innodb_flush_log_at_trx_commit=${String(row.flush)}, buffer pool ${Math.round(Number(row.pool) / 1024 / 1024)} MiB)`,
    };
  } finally {
    await connection.end();
  }
}

function planFromOptions(): SuitePlan {
  try {
    return buildPlan({
      quick: options.quick,
      only: options.workloads,
      durationMs: options.durationMs,
      warmupMs: options.warmupMs,
    });
  } catch (error) {
    return program.error(`error: ${(error as Error).message}`);
  }
}
