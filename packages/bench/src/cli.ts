#!/usr/bin/env node
// `pnpm bench`: Shameless through the SDK, measured against a bare grpc-js echo, raw mysql2
// running the same SQL and mysql2 running the Ruby gem's statements, in the same run on the
// same machine, with the CPU each operation costs each process.
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startListeningProcess } from '@shameless/testkit';
import { Command, InvalidArgumentError } from 'commander';
import mysql from 'mysql2/promise';
import {
  SDK_DEADLINE_MS,
  openBenchStore,
  seedRates,
  serverConnection,
} from './subjects/benchStore.js';
import { bufferPoolNote } from './measure/bufferPool.js';
import { type DatabasePid, localDatabasePid } from './measure/databaseProcess.js';
import { memorySummary, sampleMemory } from './measure/memorySampler.js';
import {
  type ConcurrentReadsResult,
  concurrentLargeReads,
  neverReadStreams,
} from './workloads/memoryBounds.js';
import { formatMemoryParts } from './measure/serverMemory.js';
import { soak, streamToSlowConsumer } from './workloads/memoryRuns.js';
import { formatOneAtATime, oneAtATimeChecks } from './report/oneAtATime.js';
import { buildPlan, workloadIds } from './plan.js';
import { ProcessCpu, clockTicks } from './measure/processCpu.js';
import { formatProfileSummary, summariseProfiles } from './measure/profileFrames.js';
import { stderrProgress } from './load/progress.js';
import { formatScaleTable, runScaleCurve, scaleChartSvg } from './workloads/scaleCurve.js';
import {
  formatCacheSection,
  formatTable,
  saveReport,
  tableLegend,
  vsEcho,
  vsGem,
  vsMysql,
} from './report/report.js';
import { SdkProfiler } from './measure/sdkProfiler.js';
import { SourceLocator } from './measure/sourceLocations.js';
import { type SuitePlan, runSuite } from './suite.js';
import { FOLLOW_TOLERANCE, evaluateTargets, formatTargets } from './report/targets.js';
import { evaluateConsumerTargets, formatConsumerTargets } from './report/consumerTargets.js';
import { formatIdleRows } from './report/idleReport.js';
import { evaluateLoneCallTargets, formatLoneCallTargets } from './report/loneCallTargets.js';
import { formatMovesRows } from './report/movesReport.js';
import { formatReplicaRows } from './report/replicaReport.js';

const here = dirname(fileURLToPath(import.meta.url));
const REPO = join(here, '../../../..');
const DEFAULT_SCALE = [10_000, 100_000, 1_000_000];
/** The committed reference run, the default `--previous`. */
const REFERENCE_RUN = join(REPO, 'docs/bench/suite.json');

const positiveInteger = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError('expected a positive integer');
  }
  return parsed;
};

const wholeNumber = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new InvalidArgumentError('expected a whole number (0 or more)');
  }
  return parsed;
};

const HELP_AFTER = `
The gem-shaped baseline sends, for each operation, the statements of the Ruby gem
shameless (Sequel over mysql2), each on its own (autocommit), one connection per worker:
  Put (create)      INSERT the base cell (version 0, every value), then one INSERT per index
  Put (update)      SELECT uuid FROM the primary index; SELECT * the latest base cell;
                    merge in process (MessagePack); INSERT version n + 1
  Where (1 record)  SELECT uuid FROM the primary index; SELECT * the latest base cell
  GetCell           SELECT * the latest base cell (ORDER BY ref_key DESC LIMIT 1)
Its errors are the gem's own race: two updates of one record read version n at once.
For GetCell and Where (1 record), the gem-shaped service runs the same reads in a bare
grpc-js server of their own, one read per message of one stream (gemService.ts): the gem
behind the hop the store has, with none of the store's work. Its rows show what the hop
alone costs the gem at the same concurrency and at the same half-peak rate; issue 55's read
targets are set against it. Its server µs/op is its own process's.
The baselines work on records of their own, seeded as the SDK's are (as many, as large, in
the same tables): the server remembers the versions it writes, and writes to its records
from outside would measure their interference with that memory, not the store.
Each run of Put (update), Where (1 record) and GetCell, and each of its baselines', starts
with one unmeasured pass over the records it works on (each one's primary-index row and
latest base cell): once the tables outgrow MySQL's buffer pool, the first run after a change
of working set would read from disk pages that the runs after it find cached.

CPU µs/op is the CPU a process spent in the measured window over the operations completed
in it: server (shameless serve, /proc/<pid>/stat), client (this process: the SDK or a
baseline's mysql2 client, and the load loop; process.cpuUsage()) and MariaDB (the whole
mariadbd, found through its pid file; other clients' load on it counts too). /proc counts
in clock ticks (getconf CLK_TCK; 100 assumed, and said so, if that fails), so figures from
short windows are coarse. Profiling adds to the CPU it measures.

With --server-caches, under the table, what the server's caches answered in each SDK run's
window (read from its metrics at the window's edges): the version cache's and the
primary-key cache's hits and misses. A miss costs its call a round trip more, which the CPU
figures alone do not say.

Targets (issue 10), printed at the end with this run's figure and whether it is met:
  Put (update), Put (create) ≥ 1.2× and Where (1 record), GetCell ≥ 0.6× the gem-shaped
  baseline at 16 in flight, 1 KB; one at a time, their p50 ≤ echo p50 + gem-shaped p50 +
  0.2 ms; WriteCells ≥ 20,000 and GetCells ≥ 50,000 cells/s (at 16 in flight, else at
  the most in flight run); Each follow p99 within 10% of --previous's, or better. Its
  absolute p99s at half peak gave way to issue 55's below; the half-peak rows of Put (update)
  and WriteCell are still run and printed in the table, with no target.

Targets (issue 55), printed after issue 10's as a table (figure, target, this run, verdict),
each against figures of the same run, 1 KB bodies; a row whose run was not part of this one
is "not measured", with what was missing:
  1 in flight, p50: GetCell and Where (1 record) ≤ 1.1× the gem-shaped service's p50;
    Put (update) and Put (create) ≤ echo p50 + gem-shaped p50 + 0.1 ms
  1 in flight, CPU µs per read of GetCell and Where (1 record), server + SDK + MariaDB
    ≤ 1.3× the gem-shaped service's (its server + its client + MariaDB)
  The lone reads are measured in rounds taken in turn with the service (20, 30 in a full
    run; each side a quarter of a second after 100 ms unmeasured), and each ratio is the
    median of the rounds' own: this machine's pace changes in steps of seconds
  A lone GetCell's rounds take a third side, the protocol floor (protocolFloor.ts): the
    Store's Pipeline, its protobuf both ways, answered by a bare grpc-js handler in a process
    of its own with the statement the store's server sends (its MariaDB time limit included,
    prepared once it repeats, as the server's) and nothing else; its p50 and CPU are
    printed beside the GetCell verdicts: what any server of this protocol pays, with none
    of the store's work. And a fourth, the store's own server called by the same bare
    client ("without the SDK"): the SDK's share of the gap and the server's, at the same
    moments
  16 in flight: GetCell and Where (1 record) ≥ 1.3× the gem-shaped service's ops/s, in
    rounds taken in turn with the service as the lone reads are (the runs' own after them)
  idle server (--workloads idle), defaults, 16 and 1,024 shards: ≤ 0.5% of a core and
    ≤ 2 statements/s per partition
  p99 at half peak (an open loop at half the most ops/s of the workload's 1 KB runs):
    GetCell and Where (1 record) ≤ the gem-shaped service's p99 at the same rate

Read replicas (issue 53; --workloads replicas, about 30 s): a primary and one replica of its
own (the test kit's MariaDB servers, GTID replication, on loopback ports) behind two shameless
serve processes, one without and one with --replica (the server's default replica settings).
The same reads, GetCell of 1,000 seeded 1 KB records through the SDK at 16 in flight with
connect()'s default session consistency and no recent write, against each: both servers warmed
up (5 s each, quick 2 s), then each side twice, primary, replica, replica, primary (3 s each,
quick 1 s): reads/s, p50 and p99, and the share of read statements the replica ran (Com_select
of each server, less the MASTER_GTID_WAITs and the lag probes; the primary's every SELECT
counted). On one machine the replica shares its cores with everything else: the row says what
a read through a replica costs, not what a second machine would add.

Idle server (issue 55; --workloads idle, about 4 minutes, quick 1.7): a shameless serve that no
client calls, over a MariaDB of its own (the test kit's, on a loopback port), at 16 and at 1,024
shards with the server's defaults, and (not with --quick) at 16 with the partition health probe
that never rests (--idle-health-check-ms 0) and put off (--health-check-ms 3600000): its CPU
(every thread, /proc) and the statements it sends MariaDB (Questions), per second, over 20 s
(quick 10 s) from 40 s after it listens (its first half minute holds a one-off cost of V8's).
Targets: at most 0.5% of a core and 2 statements a second per partition, at 16 and at 1,024
shards.

Consumer groups (issue 52; --workloads consumer, last in the default suite, about 1.5 minutes):
members are node processes running the SDK (Model.consume), with the defaults users get
(session timeout 10 s, maxInFlight 256, perShardInFlight 1, maxDeliveries 5) behind two
shameless serve processes with the default --group-poll-ms (200), 16 shards (--shards-count),
while this process writes 1 KB cells at 1,000/s. Printed as a table, each figure beside what
Kafka, the Kinesis Client Library and NATS JetStream are known for, with its target:
  a member SIGKILLed: its shards owned by the other member ≤ 2 s after the kill
  a member cut off silently (the fault proxy drops its bytes): ≤ session timeout + 2 s
  graceful leave and each step of a rolling restart of 3 (SIGTERM, exit, a new process):
    each shard's hand-over ≤ 1 s, 0 cells handled twice, each shard moved ≤ 2 times a step
  a third member joining: the shards that stay keep being delivered (their longest wait
    between two cells ≤ 2× that just before)
  after a crash, cells handled twice ≤ the killed member's cells handled and not yet
    acknowledged to the server, none at or below a cursor the server had confirmed to it
  a poison cell (its handler kills the member process, which is restarted): parked after
    maxDeliveries deliveries, and the cells after it on its shard handled
  one member over a backlog of 62,000 cells of 1 KB (32,000 with --quick), no-op handler:
    ≥ 20,000 cells/s, beside an Each of the same backlog; maxInFlight 1024 and 4096 and
    perShardInFlight 16 are read too
  commit → handler at 1,000 writes/s: p50 ≤ 20 ms, from each cell's createdAt (the server's
    clock, set before the commit) to its handler's start, beside an Each follow of the same
    writes; from the write's acknowledgement too

Shard moves (issue 54; --workloads moves, not in the default suite, about 25 s, quick
15 s): a store of its own on the bench's MySQL whose shard 0 holds 100,000 cells of 1 KB
(quick 20,000, written by plain SQL), and a second MariaDB of its own (the test kit's, on a
loopback port). mariadb-dump --single-transaction of the shard's tables piped into mariadb on
the second server, timed end to end; then MoveShards of the shard to a database there, its copy
timed from the created step to the copied step, and the whole move (create, copy, catch up,
verify, cut over) with the cut-over's hold. Both in cells/s, the mover's as a multiple of
mariadb-dump's. Then shards 1-4 moved there while 500 WriteCells/s go to them through two
shameless serve processes taking turns (and 125/s to shards 5-8, which stay): each shard's
hold as the mover reports it, and the writes' p50, p99 and max while the move runs, on the
shards moved beside those that stay (the machine's own latency; needs --shards-count 9 or
more). Targets: the mover's copy at least 15,000 cells/s; writes held at the cut-over p99
≤ 100 ms over the shards moved, none refused.

Examples:
  pnpm bench --quick
  pnpm bench --workloads get-cell,write-cell --duration-ms 5000
  pnpm bench --quick --workloads put-update --profile --profile-sdk
  pnpm bench --workloads consumer
  pnpm bench --workloads replicas
  pnpm bench --workloads idle
  pnpm bench --workloads moves
`;

const program = new Command('bench')
  .description(
    'Benchmarks Shameless through the SDK against baselines measured in the same run, at the ' +
      'same concurrency: a bare grpc-js unary echo of the same payload (the transport limit), ' +
      "raw mysql2 running the server's SQL (the database limit) and, where the Ruby gem has the " +
      "operation, mysql2 running the gem's statements (the gem-shaped baseline, × gem), and for " +
      'the point reads the same statements behind a stream in a server of their own (the ' +
      'gem-shaped service). Every ' +
      'SDK row shows the CPU µs per operation of the server, the SDK process and MariaDB. ' +
      'Last, the consumer groups: member processes through crashes, silent cut-offs, joins, ' +
      'rolling restarts and a poison cell, their throughput and latency beside Each.\n\n' +
      'Prints the table (stdout), the one-at-a-time check, the targets of issue 10, those of ' +
      'issue 55 (the lone call and the idle server; the reads, alone and 16 in flight, against ' +
      'rounds taken in turn with the gem-shaped service) and those of issue 52 (consumer groups, ' +
      'each beside what other systems reach) with the figures this run reached, and writes it ' +
      'all as JSON under --out. Progress goes to ' +
      "stderr. Uses a throwaway database. Says so when MySQL's buffer pool is under 2 GiB, " +
      "which the suite's tables outgrow (writes then go at the pace of its page flushing, and " +
      'reads wait for pages from disk).',
  )
  .option(
    '--quick',
    'about four minutes: 1 KB bodies, 16 in flight (4 for batches), plus 1 in flight for the ' +
      'workloads with a gem-shaped baseline; the idle server over 10 s windows; the consumer ' +
      'groups over a smaller backlog, one read of it each, and 5 s of latency',
    false,
  )
  .option(
    '--workloads <ids>',
    `comma-separated subset of: ${workloadIds().join(', ')}`,
    (value: string) => value.split(',').filter(Boolean),
    [] as string[],
  )
  .option(
    '--duration-ms <ms>',
    'measured time of each run (default 2000, quick 1000); longer when calls are slower, until twice the calls in flight have completed in it (at most 10 times as long or 30 s, whichever is longer)',
    positiveInteger,
  )
  .option(
    '--warmup-ms <ms>',
    'unmeasured time before each run (default 400, quick 200), after 1,000 unmeasured calls ' +
      '(8 batch calls; at most 3 s) that let V8 optimise the code the run measures',
    positiveInteger,
  )
  .option(
    '--server-warmup-ms <ms>',
    'before the first run, every workload of the run mixed, through the SDK and the ' +
      'baselines (16 in flight, then 1), so that the runs measure code V8 has optimised, as ' +
      'in a server that has been up a while (default 40000, quick 20000); 0 measures a ' +
      'server fresh from its start',
    wholeNumber,
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
  .option(
    '--no-pipeline',
    'send every SDK call as a gRPC call of its own, as connect({ pipeline: false }) does (by ' +
      'default the SDK sends them as messages of one Pipeline stream per server)',
  )
  .option(
    '--max-batches-in-flight <n>',
    "batch calls of one kind the SDK keeps out at once, as connect's maxBatchesInFlight (default " +
      '1, one per endpoint); calls made meanwhile wait and go together. Infinity: calls never wait',
    (value: string) => (value === 'Infinity' ? Infinity : positiveInteger(value)),
  )
  .option('--out <dir>', 'where the JSON report goes', join(REPO, 'bench-results'))
  .option(
    '--profile [dir]',
    'write a CPU profile of the server, its whole life, to dir (default <out>/profiles; open it ' +
      'in Chrome DevTools or speedscope) and print its top 15 frames by self time from the ' +
      "suite's first run on (the warm-up's samples left out)",
  )
  .option(
    '--profile-sdk',
    'profile this process (the SDK) during each SDK run (an inspector session), one ' +
      '.cpuprofile per run in the --profile dir (default <out>/profiles), and print their top ' +
      '15 frames summed (suite only)',
    false,
  )
  .option(
    '--server-caches',
    "serve the server's metrics and print, under the table, what its version and primary-key " +
      "caches answered in each SDK run's window (hits, misses; a miss costs a round trip more). " +
      'The metrics layer adds its work to every call, so runs with it and without it do not compare',
    false,
  )
  .option(
    '--previous <report>',
    "an earlier run's JSON report, whose Each follow p99 that target compares with (default " +
      `${relative(process.cwd(), REFERENCE_RUN)}, when present)`,
  )
  .option(
    '--scale [records]',
    'instead of the suite: the scaling curve (Put, GetCell, Where at each model size, comma-separated), ' +
      'then a stream of the 1M cells to a slow consumer',
    (value: string) => value.split(',').map(positiveInteger),
  )
  .option(
    '--memory',
    'instead of the suite: server RSS under 64 concurrent GetCells of 15 MiB answers and 50 Each streams never read (issue 12)',
  )
  .option(
    '--soak [minutes]',
    'instead of the suite: a mixed load for this long (default 5), sampling server memory',
    positiveInteger,
  )
  .addHelpText('after', HELP_AFTER);

program.parse();
const options = program.opts<{
  quick: boolean;
  workloads: string[];
  durationMs?: number;
  warmupMs?: number;
  serverWarmupMs?: number;
  mysqlUrl: string;
  database: string;
  shardsCount: number;
  poolSize: number;
  coalesce: boolean;
  pipeline: boolean;
  maxBatchesInFlight?: number;
  out: string;
  scale?: number[] | true;
  soak?: number | true;
  memory?: boolean;
  profile?: string | true;
  profileSdk: boolean;
  serverCaches: boolean;
  previous?: string;
}>();
if (options.profileSdk && (options.scale || options.soak || options.memory)) {
  program.error('error: --profile-sdk profiles the suite; leave out --scale, --soak and --memory');
}

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
const poolNote = bufferPoolNote(environment.bufferPoolBytes);
if (poolNote) progress.note(poolNote);
const profileDir =
  typeof options.profile === 'string' ? options.profile : join(options.out, 'profiles');
const bench = await openBenchStore({
  mysqlUrl: options.mysqlUrl,
  database: options.database,
  shardsCount: options.shardsCount,
  poolSize: options.poolSize,
  coalesce: options.coalesce,
  pipeline: options.pipeline,
  maxBatchesInFlight: options.maxBatchesInFlight,
  ...(options.profile ? { profileDir } : {}),
  // --memory reads its heap, --server-caches its caches' counters (serverCaches.ts).
  ...(options.memory || options.serverCaches ? { metrics: true } : {}),
});
const serverPid = bench.server.process.pid;
const { cpu, ticks, cpuNotes } = processCpu(serverPid, environment.mariadb);
progress.note(`CPU per operation: ${cpuNotes.clock} MariaDB: ${cpuNotes.mariadb}`);
const reportName = startedAt.toISOString().replace(/[:.]/g, '-');
// JSON has no Infinity: it would read back as null, the same as no setting.
const settings = {
  ...options,
  mysqlUrl: undefined,
  maxBatchesInFlight:
    options.maxBatchesInFlight === Infinity ? 'Infinity' : options.maxBatchesInFlight,
};
const sdkProfiler = options.profileSdk
  ? new SdkProfiler(profileDir, `${reportName}-sdk`)
  : undefined;
/** When the suite's first run began: the server profile's samples before it are the warm-up's. */
let runsFrom: number | undefined;
try {
  if (options.scale) await scaleMode(options.scale === true ? DEFAULT_SCALE : options.scale);
  else if (options.soak) await soakMode(options.soak === true ? 5 : options.soak);
  else if (options.memory) await memoryMode();
  else runsFrom = await suiteMode();
} finally {
  sdkProfiler?.close();
  await bench.close();
}
await printProfiles(runsFrom);

/** Runs the suite and prints its report; when its first run began (profileClockMicros). */
async function suiteMode(): Promise<number> {
  // The consumer groups' figures alone need no echo: their baselines are Each readers.
  const echo =
    plan.runs.length > 0
      ? await startListeningProcess([join(here, 'subjects/echoServerMain.js')], {
          name: 'echo baseline',
        })
      : undefined;
  const gemReads = [...plan.runs.map((run) => run.workload), ...plan.halfLoad].some(
    (workload) => workload.gemService,
  );
  // A baseline's server in a process of its own, over the store's partition and shards.
  const startSubject = (main: string, name: string, ...args: string[]) =>
    startListeningProcess(
      [
        join(here, 'subjects', main),
        bench.partitionUrl,
        String(bench.settings.shardsCount),
        String(bench.settings.poolSize),
        ...args,
      ],
      { name },
    );
  const gemService = gemReads
    ? await startSubject('gemServiceMain.js', 'gem-shaped service')
    : undefined;
  // The protocol floor, for the lone rounds of the workloads that have it.
  const floorReads =
    plan.roundsInTurn > 0 &&
    plan.runs.some((run) => run.workload.protocolFloor && run.concurrency.includes(1));
  const protocolFloor = floorReads
    ? await startSubject('protocolFloorMain.js', 'protocol floor', String(SDK_DEADLINE_MS))
    : undefined;
  const memory = sampleMemory(bench.server);
  const previousFollowP99 = plan.runs.length > 0 ? await previousFollow() : undefined;
  try {
    const result = await runSuite(
      bench,
      {
        echoAddress: echo?.address ?? '',
        cpu,
        ...(sdkProfiler ? { sdkProfiler } : {}),
        ...(gemService
          ? {
              gemService: {
                address: gemService.address,
                cpu: new ProcessCpu({ ...cpu.pids, server: gemService.process.pid }, cpu.ticks),
              },
            }
          : {}),
        ...(protocolFloor
          ? {
              protocolFloor: {
                address: protocolFloor.address,
                cpu: new ProcessCpu({ ...cpu.pids, server: protocolFloor.process.pid }, cpu.ticks),
              },
            }
          : {}),
      },
      plan,
      progress,
    );
    const series = memory.stop();
    const steady = memorySummary(series, 10);
    const { follow, replicas, idle, consumer, moves } = result;
    const oneAtATime = oneAtATimeChecks(result.rows);
    const targets = follow
      ? evaluateTargets({
          rows: result.rows,
          follow,
          ...(previousFollowP99 === undefined ? {} : { previousFollowP99 }),
        })
      : [];
    if (result.rows.length > 0) {
      console.log(formatTable(result.rows));
      console.log(`\n${tableLegend(cpuNotes)}`);
    }
    const caches = formatCacheSection(result.rows);
    if (caches !== '') console.log(`\n${caches}`);
    if (oneAtATime.length > 0) console.log(`\n${formatOneAtATime(oneAtATime)}`);
    if (follow) {
      console.log(
        `\nEach follow (${plan.follow.writers} writers, ${Math.round(follow.writesPerSecond)} writes/s): ` +
          `acknowledgement → delivery p50 ${follow.latency.p50.toFixed(1)} ms, p99 ${follow.latency.p99.toFixed(1)} ms, ` +
          `p99.9 ${follow.latency.p999.toFixed(1)} ms over ${follow.delivered} cells (${follow.undelivered} undelivered)`,
      );
    }
    if (steady) {
      console.log(
        `Server RSS: ${steady.firstMiB.toFixed(0)} MiB after start-up, ${steady.lastMiB.toFixed(0)} MiB at the end, ` +
          `${steady.maxMiB.toFixed(0)} MiB at most`,
      );
    }
    if (targets.length > 0) console.log(`\n${formatTargets(targets)}`);
    // Issue 55's, from the closed-loop and half-peak rows and the idle server's.
    const loneCallTargets =
      result.rows.length > 0 || idle
        ? evaluateLoneCallTargets({ rows: result.rows, ...(idle ? { idle } : {}) })
        : undefined;
    if (loneCallTargets) console.log(`\n${formatLoneCallTargets(loneCallTargets)}`);
    if (replicas) console.log(`\n${formatReplicaRows(replicas)}`);
    if (idle) console.log(`\n${formatIdleRows(idle)}`);
    if (moves) console.log(`\n${formatMovesRows(moves)}`);
    const consumerTargets = consumer ? evaluateConsumerTargets(consumer) : undefined;
    if (consumer && consumerTargets) {
      console.log(`\n${formatConsumerTargets(consumer, consumerTargets)}`);
    }
    if (poolNote) console.log(`\n${poolNote}`);
    await save(reportName, {
      plan: {
        ...plan,
        runs: plan.runs.map((run) => ({ ...run, workload: run.workload.id })),
        halfLoad: plan.halfLoad.map((workload) => workload.id),
      },
      cpu: {
        clockTicksPerSecond: ticks.perSecond,
        clockTicksAssumed: ticks.assumed,
        serverPid,
        mariadb: environment.mariadb,
      },
      rows: result.rows.map((row) => ({
        ...row,
        vsEcho: vsEcho(row),
        vsMysql: vsMysql(row),
        vsGem: vsGem(row),
      })),
      follow,
      oneAtATime,
      targets,
      ...(loneCallTargets ? { loneCallTargets } : {}),
      ...(replicas ? { replicas } : {}),
      ...(idle ? { idle } : {}),
      ...(moves ? { moves } : {}),
      ...(consumer ? { consumer: { ...consumer, targets: consumerTargets } } : {}),
      memory: { summary: steady, samples: series.samples },
    });
    return result.runsFrom;
  } finally {
    memory.stop();
    await echo?.kill();
    await gemService?.kill();
    await protocolFloor?.kill();
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

async function memoryMode() {
  const seeded = await seedRates(
    bench.rate,
    // 15 KB: a GetCells of all 1,000 (about 15 MiB) stays within the largest message the server
    // sends by default; at 16 KB every call was refused before any answer was built.
    { firstHotel: 1, hotels: 10, perHotel: 100, bodyBytes: 15 * 1024 },
    progress,
  );
  // Streams first, from the heap the seeding left: the reads' heap would hide their growth.
  progress.note('50 Each streams never read, held 10 s');
  const streams = await neverReadStreams(bench, { streams: 50, holdMs: 10_000 });
  console.log(
    `50 Each streams never read: server RSS ${streams.beforeMiB.toFixed(0)} MiB before, ${streams.peakMiB.toFixed(0)} MiB at most ` +
      `(+${(streams.peakMiB - streams.beforeMiB).toFixed(0)} MiB), ${streams.afterMiB.toFixed(0)} MiB after cancel; ` +
      `refused ${JSON.stringify(streams.statuses)}`,
  );
  // Cold first (GetCells has not answered since start), then warm: both must hold the bound.
  const reads: ConcurrentReadsResult[] = [];
  for (const warmUp of [false, true]) {
    progress.note(
      `64 concurrent GetCells of 1,000 cells of 15 KB, 5 rounds, ${coldOrWarm(warmUp)}`,
    );
    const run = await concurrentLargeReads(bench, seeded, { concurrency: 64, rounds: 5, warmUp });
    reads.push(run);
    console.log(
      `64 concurrent GetCells of ${run.answerMiB.toFixed(1)} MiB, 5 rounds, ${coldOrWarm(warmUp)}: ` +
        `server RSS ${run.beforeMiB.toFixed(0)} MiB before, ${run.peakMiB.toFixed(0)} MiB at most, ` +
        `${run.afterMiB.toFixed(0)} MiB after; statuses ${JSON.stringify(run.statuses)}`,
    );
  }
  for (const [name, run] of [
    ['streams', streams],
    ...reads.map((run) => [`reads ${coldOrWarm(run.warmUp)}`, run] as const),
  ] as const) {
    if (run.partsBefore && run.partsAfter) {
      console.log(`  ${name} before: ${formatMemoryParts(run.partsBefore)}`);
      console.log(`  ${name} after:  ${formatMemoryParts(run.partsAfter)}`);
    }
  }
  if (reads.some((run) => !run.statuses.OK)) {
    // Refusals alone build no answer: such a run says nothing of the memory answers take.
    console.log(
      "NOT measured: a GetCells burst had no call answered OK, only refusals; check that 1,000 cells fit the server's --max-message-bytes",
    );
    process.exitCode = 1;
  }
  const malloc = mallocEnvironment();
  const mallocLine = Object.entries(malloc).map(([name, value]) => `${name}=${value}`);
  console.log(
    `  server allocator: ${mallocLine.length > 0 ? mallocLine.join(' ') : 'glibc defaults'}`,
  );
  await save(`${reportName}-memory`, { reads, streams, mallocEnvironment: malloc });
}

function coldOrWarm(warmUp: boolean): string {
  return warmUp ? 'after one warm-up call' : 'cold (no call since start)';
}

/** glibc malloc tunables the server inherits, which decide whether freed memory leaves RSS. */
function mallocEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[0].startsWith('MALLOC_') && entry[1] !== undefined,
    ),
  );
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

/** The clocks of the server and MariaDB, and how the table's legend describes them. */
function processCpu(serverPid: number | undefined, mariadb: DatabasePid) {
  const ticks = clockTicks();
  const cpu = new ProcessCpu(
    { server: serverPid, ...('pid' in mariadb ? { mariadb: mariadb.pid } : {}) },
    ticks,
  );
  const cpuNotes = {
    clock: ticks.assumed
      ? '/proc clock: 100 ticks/s ASSUMED (getconf CLK_TCK failed).'
      : `/proc clock: ${ticks.perSecond} ticks/s (getconf CLK_TCK).`,
    mariadb:
      'pid' in mariadb
        ? `the MariaDB process (pid ${mariadb.pid})`
        : `not measured (${mariadb.unknown})`,
  };
  return { cpu, ticks, cpuNotes };
}

/**
 * The server's and the SDK's top frames, once the server has exited and written its profile;
 * the server's from `runsFrom` on, when the suite gives it.
 */
async function printProfiles(runsFrom: number | undefined) {
  const locator = new SourceLocator(REPO);
  if (options.profile) {
    // node --cpu-prof names the file CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile.
    const names = await readdir(profileDir).catch(() => [] as string[]);
    const mine = names.filter(
      (name) => name.includes(`.${serverPid}.`) && name.endsWith('.cpuprofile'),
    );
    if (mine.length === 0) {
      console.log(`\nNo server profile found in ${relative(process.cwd(), profileDir)}`);
    } else {
      const paths = mine.map((name) => join(profileDir, name));
      const summary = await summariseProfiles(paths, locator, { fromMicros: runsFrom });
      const title =
        runsFrom === undefined ? 'Server profile' : 'Server profile, from the first run';
      console.log(`\n${formatProfileSummary(title, summary)}`);
      console.log(
        `\nServer profile: ${paths.map((path) => relative(process.cwd(), path)).join(', ')}`,
      );
    }
  }
  if (sdkProfiler && sdkProfiler.paths.length > 0) {
    const summary = await summariseProfiles(sdkProfiler.paths, locator);
    console.log(`\n${formatProfileSummary('SDK process, during the SDK runs', summary)}`);
    console.log(
      `\nSDK profiles: ${relative(process.cwd(), sdkProfiler.directory)}/${sdkProfiler.prefix}-*.cpuprofile`,
    );
  }
}

/** The Each follow p99 of the run `--previous` names (or of the committed reference run). */
async function previousFollow(): Promise<number | undefined> {
  const path = options.previous ?? REFERENCE_RUN;
  if (options.previous === undefined && !existsSync(path)) return undefined;
  try {
    const report = JSON.parse(await readFile(path, 'utf8')) as {
      follow?: { latency?: { p99?: unknown } };
    };
    const p99 = report.follow?.latency?.p99;
    if (typeof p99 !== 'number') throw new Error('it has no follow.latency.p99');
    progress.note(
      `Each follow target: p99 against ${p99.toFixed(1)} ms (+${FOLLOW_TOLERANCE * 100}%) from ${relative(process.cwd(), path)}`,
    );
    return p99;
  } catch (error) {
    progress.note(`Each follow target: cannot use ${path}: ${(error as Error).message}`);
    return undefined;
  }
}

async function describeEnvironment(mysqlUrl: string) {
  const connection = await mysql.createConnection(serverConnection(mysqlUrl));
  try {
    const [rows] = await connection.query(
      `SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush,
              @@innodb_buffer_pool_size AS pool, @@sync_binlog AS sync_binlog,
              @@hostname AS hostname, @@pid_file AS pid_file, @@datadir AS datadir`,
    );
    const row = (rows as Record<string, unknown>[])[0]!;
    const mariadb: DatabasePid = await localDatabasePid({
      hostname: String(row.hostname),
      pidFile: String(row.pid_file),
      dataDir: String(row.datadir),
    });
    return {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown CPU',
      node: process.version,
      database: `MySQL ${String(row.version)} (innodb_flush_log_at_trx_commit=${String(row.flush)}, buffer pool ${Math.round(Number(row.pool) / 1024 / 1024)} MiB)`,
      bufferPoolBytes: Number(row.pool),
      mariadb,
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
      serverWarmupMs: options.serverWarmupMs,
    });
  } catch (error) {
    return program.error(`error: ${(error as Error).message}`);
  }
}
