// The default suite: every workload through the SDK at each concurrency, each followed by its
// mysql2 baseline and, where the gem has the operation, its gem-shaped baseline, against the
// echo baseline of the same payload and concurrency; CPU per operation for each. Then the Each
// follow latency, the read-replica row (a primary and a replica of its own), and last the
// consumer groups' figures (member processes that crash and are cut off, so nothing runs after
// them).
import { type BenchStore, type SeededSet, formatBytes, seedRates } from './subjects/benchStore.js';
import { runClosedLoop, type LoadOptions, type LoadResult } from './load/closedLoop.js';
import { type EchoClient, connectEcho, connectStreamEcho } from './subjects/echoService.js';
import { measureFollowLatency, type FollowResult } from './workloads/followLatency.js';
import { type MeasuredWindow, allWindows } from './load/measuredWindow.js';
import {
  type ConsumerPlan,
  type ConsumerResult,
  runConsumerWorkload,
} from './workloads/consumerWorkload.js';
import {
  type ReplicaPlan,
  type ReplicaResult,
  runReplicaWorkload,
} from './workloads/replicaReads.js';
import { type IdlePlan, type IdleResult, runIdleWorkload } from './workloads/idleServer.js';
import { type MovesPlan, type MovesResult, runMovesWorkload } from './workloads/shardMoveCopy.js';
import { openGemShapedClient } from './subjects/gemShapedClient.js';
import { connectGemService } from './subjects/gemService.js';
import { connectProtocolFloor } from './subjects/protocolFloor.js';
import { runOpenLoop } from './load/openLoop.js';
import { BaselineTables, openBaselinePools } from './subjects/mysqlBaseline.js';
import type { CpuPerOperation, ProcessCpu } from './measure/processCpu.js';
import { profileClockMicros } from './measure/profileFrames.js';
import type { Progress } from './load/progress.js';
import type { Baseline, RunRow } from './report/report.js';
import type { SdkProfiler } from './measure/sdkProfiler.js';
import { type CacheLookups, CacheMeter, formatCacheLookups } from './measure/serverCaches.js';
import { touchRecords } from './workloads/touchRecords.js';
import { warmUp } from './workloads/warmUp.js';
import type { Workload, WorkloadContext } from './workloads/workloads.js';
import {
  type AlternatingRounds,
  type RoundFigures,
  alternateRounds,
} from './workloads/alternatingRounds.js';

export interface PlannedRun {
  readonly workload: Workload;
  readonly bodyBytes: number;
  readonly concurrency: readonly number[];
  /** Operations each of its runs (and their baselines) completes before the timed warm-up. */
  readonly warmupOperations: number;
  /** Whether each of its runs, and each baseline's, starts with a pass over its records. */
  readonly touchesRecords: boolean;
}

export interface SuitePlan {
  /** The warm-up of the server and the baselines before the first run (warmUp.ts). */
  readonly serverWarmupMs: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** Seeded records per body size: hotels × rates per hotel (Where reads 100 of one hotel). */
  readonly seedHotels: number;
  readonly runs: readonly PlannedRun[];
  readonly follow: { writers: number; durationMs: number };
  /** Workloads also run open-loop at half the highest rate their closed-loop runs reached. */
  readonly halfLoad: readonly Workload[];
  /**
   * Rounds of a read taken in turn with the gem-shaped service's, one call at a time and 16 in
   * flight (alternatingRounds.ts); 0: none.
   */
  readonly roundsInTurn: number;
  /** Each side's window in those rounds: short, so that a round's sides share the machine's pace. */
  readonly roundWindow: { readonly warmupMs: number; readonly durationMs: number };
  /** The read-replica row (`--workloads replicas`), when chosen. */
  readonly replicas?: ReplicaPlan;
  /** The idle server's figures (`--workloads idle`), when chosen. */
  readonly idle?: IdlePlan;
  /** The shard move's copy beside mariadb-dump (`--workloads moves`), when named. */
  readonly moves?: MovesPlan;
  /** The consumer groups' figures (`--workloads consumer`), when chosen. */
  readonly consumer?: ConsumerPlan;
}

/** The echo is a unary call: it warms up like the single-call workloads. */
const ECHO_WARMUP_OPERATIONS = 1000;

/** The two echoes of one payload and concurrency. */
interface Echoes {
  readonly echo: Baseline;
  readonly streamEcho: Baseline;
}

/** The half-load runs use the default body. */
const HALF_LOAD_BODY = 1024;

export interface SuiteResult {
  readonly rows: RunRow[];
  /** Undefined when the plan has no run (only the consumer groups' figures). */
  readonly follow?: FollowResult;
  readonly replicas?: ReplicaResult;
  readonly idle?: IdleResult;
  readonly moves?: MovesResult;
  readonly consumer?: ConsumerResult;
  /** When the warm-up ended and the first run began (profileClockMicros). */
  readonly runsFrom: number;
}

/** What the suite measures with besides the store. */
export interface SuiteInstruments {
  /** The echo baseline's server. */
  readonly echoAddress: string;
  readonly cpu: ProcessCpu;
  /** Profiles this process during the SDK runs (`--profile-sdk`). */
  readonly sdkProfiler?: SdkProfiler;
  /**
   * The gem-shaped service's server (gemService.ts), run beside the read workloads that have it
   * and at their half-peak rates, and the CPU of the processes involved (its own as `server`).
   */
  readonly gemService?: ChildSubject;
  /**
   * The store's protocol over a bare handler (protocolFloor.ts), a third side of a lone read's
   * rounds where the workload has it, and the CPU of the processes involved (its own as `server`).
   */
  readonly protocolFloor?: ChildSubject;
}

export async function runSuite(
  bench: BenchStore,
  { echoAddress, cpu, sdkProfiler, gemService, protocolFloor }: SuiteInstruments,
  plan: SuitePlan,
  progress: Progress,
): Promise<SuiteResult> {
  if (plan.runs.length === 0) {
    const runsFrom = profileClockMicros();
    const replicas =
      plan.replicas && (await runReplicaWorkload(bench.settings, plan.replicas, progress));
    const idle = plan.idle && (await runIdleWorkload(bench.settings, plan.idle, progress));
    const consumer = plan.consumer && (await runConsumerWorkload(bench, plan.consumer, progress));
    const moves = plan.moves && (await runMovesWorkload(bench.settings, plan.moves, progress));
    return {
      rows: [],
      runsFrom,
      ...(replicas ? { replicas } : {}),
      ...(idle ? { idle } : {}),
      ...(moves ? { moves } : {}),
      ...(consumer ? { consumer } : {}),
    };
  }
  const sizes = [...new Set(plan.runs.map((run) => run.bodyBytes))];
  // The baselines get records of their own, as many and as large: the server remembers the
  // versions it writes (versionCache.ts), and writes from outside would make its memory stale,
  // which measures their interference rather than the store; nor do the runs grow each
  // other's cells.
  const seeded = new Map<number, SeededSet>();
  const baselineSeeded = new Map<number, SeededSet>();
  for (const [i, bodyBytes] of sizes.entries()) {
    for (const [set, firstHotel] of [
      [seeded, 1 + i * 10_000],
      [baselineSeeded, 5_001 + i * 10_000],
    ] as const) {
      set.set(
        bodyBytes,
        await seedRates(
          bench.rate,
          { firstHotel, hotels: plan.seedHotels, perHotel: 100, bodyBytes },
          progress,
        ),
      );
    }
  }

  const tables = new BaselineTables('rate', bench.settings.shardsCount);
  await warmUp(
    bench,
    { tables, seeded, baselineSeeded },
    { workloads: plan.runs, durationMs: plan.serverWarmupMs },
    progress,
  );
  const runsFrom = profileClockMicros();

  const load: LoadOptions = {
    concurrency: 1,
    warmupMs: plan.warmupMs,
    durationMs: plan.durationMs,
  };
  const echoes = new Map<string, Echoes>();
  const echoAt = async (bodyBytes: number, concurrency: number): Promise<Echoes> => {
    const key = `${bodyBytes}/${concurrency}`;
    const known = echoes.get(key);
    if (known) return known;
    const measured = await bothEchoes(echoAddress, bodyBytes, (operation) =>
      runClosedLoop(operation, { ...load, concurrency, warmupOperations: ECHO_WARMUP_OPERATIONS }),
    );
    echoes.set(key, measured);
    return measured;
  };

  // The SDK's runs are charged with the server's CPU too; the baselines run in this process.
  const sdkRun = async (
    label: string,
    measure: (window: LoadOptions['window']) => Promise<LoadResult>,
  ) => {
    const meter = cpu.meter(['server', 'client', 'mariadb']);
    const caches = bench.metricsUrl ? new CacheMeter(bench.metricsUrl) : undefined;
    const run = () => measure(caches ? allWindows(meter, caches) : meter);
    const result = sdkProfiler ? await sdkProfiler.profile(label, run) : await run();
    const lookups = await caches?.lookups();
    return {
      result,
      cpu: meter.perOperation(result.operations),
      ...(lookups ? { serverCaches: lookups } : {}),
    };
  };
  const baselineRun = async (
    operation: (worker: number) => Promise<number | void>,
    concurrency: number,
    warmupOperations: number,
  ) => {
    const meter = cpu.meter(['client', 'mariadb']);
    const result = await runClosedLoop(operation, {
      ...load,
      concurrency,
      window: meter,
      warmupOperations,
    });
    return baseline(result, meter.perOperation(result.operations));
  };

  const total = plan.runs.reduce((sum, run) => sum + run.concurrency.length, 0);
  let done = 0;
  const rows: RunRow[] = [];
  for (const run of plan.runs) {
    const given: WorkloadContext = {
      rate: bench.rate,
      tables,
      seeded: seeded.get(run.bodyBytes)!,
      bodyBytes: run.bodyBytes,
      shardsCount: bench.settings.shardsCount,
    };
    const context = (await run.workload.prepare?.(given)) ?? given;
    const baselineContext = { ...context, seeded: baselineSeeded.get(run.bodyBytes)! };
    for (const concurrency of run.concurrency) {
      done += 1;
      const label = `[${done}/${total}] ${run.workload.name}, ${formatBytes(run.bodyBytes)}, ${concurrency} in flight`;
      const { echo, streamEcho } = await echoAt(run.bodyBytes, concurrency);
      const touch = async (set: SeededSet) => {
        if (run.touchesRecords) await touchRecords(bench.partitionUrl, tables, set);
      };
      await touch(context.seeded);
      const {
        result: sdk,
        cpu: sdkCpu,
        serverCaches,
      } = await sdkRun(
        `${run.workload.id}-${formatBytes(run.bodyBytes).replace(' ', '')}-${concurrency}`,
        (window) =>
          runClosedLoop(run.workload.sdk(context), {
            ...load,
            concurrency,
            window,
            warmupOperations: run.warmupOperations,
          }),
      );
      let mysql: Baseline | undefined;
      if (run.workload.mysql) {
        await touch(baselineContext.seeded);
        const pools = await openBaselinePools(bench.partitionUrl, concurrency, tables);
        try {
          mysql = await baselineRun(
            run.workload.mysql(baselineContext, pools),
            concurrency,
            run.warmupOperations,
          );
        } finally {
          await pools.end();
        }
      }
      let gem: Baseline | undefined;
      if (run.workload.gem) {
        await touch(baselineContext.seeded);
        const client = openGemShapedClient(bench.partitionUrl, concurrency);
        try {
          gem = await baselineRun(
            run.workload.gem(baselineContext, client),
            concurrency,
            run.warmupOperations,
          );
        } finally {
          await client.end();
        }
      }
      let gemServiceRun: Baseline | undefined;
      if (gemService && run.workload.gemService) {
        await touch(baselineContext.seeded);
        gemServiceRun = await childLoad(
          gemService,
          connectGemService,
          (service) => run.workload.gemService!(baselineContext, service),
          (operation, window) =>
            runClosedLoop(operation, {
              ...load,
              concurrency,
              window,
              warmupOperations: run.warmupOperations,
            }),
        );
      }
      let roundsInTurn: AlternatingRounds | undefined;
      if (
        ROUNDS_IN_FLIGHT.includes(concurrency) &&
        gemService &&
        run.workload.gemService &&
        plan.roundsInTurn > 0
      ) {
        const round = { ...load, ...plan.roundWindow, concurrency };
        const lone = concurrency === 1;
        // The workload's read sent by a bare Pipeline client (no SDK) to a subject's server: for a
        // lone read only. It sends each read as a message of its own, which the SDK does alone
        // and not 16 in flight, where it sends the tick's reads as one batch call.
        const bareRead = lone ? run.workload.protocolFloor : undefined;
        const bareLoad =
          bareRead &&
          ((subject: ChildSubject, records: WorkloadContext) => (options: LoadOptions) =>
            childLoad(
              subject,
              connectProtocolFloor,
              (client) => bareRead(records, client),
              (operation, window) => runClosedLoop(operation, { ...options, window }),
            ));
        const floorLoad = protocolFloor && bareLoad?.(protocolFloor, baselineContext);
        // Warmed as the service was by its run above: a process cold to these calls takes
        // seconds of them to reach its pace, longer than its rounds' windows add up to.
        if (floorLoad) await floorLoad({ ...load, warmupOperations: run.warmupOperations });
        // The store's own server through the same client: the store with no SDK, reading the
        // records the SDK's rounds read.
        const bareClientLoad = bareLoad?.({ address: bench.server.address, cpu }, context);
        roundsInTurn = await alternateRounds(plan.roundsInTurn, {
          store: async () => {
            const meter = cpu.meter(['server', 'client', 'mariadb']);
            const result = await runClosedLoop(run.workload.sdk(context), {
              ...round,
              window: meter,
            });
            const cpuPerRead = meter.perOperation(result.operations);
            return roundFigures(`${label}, the SDK`, baseline(result, cpuPerRead));
          },
          service: async () => {
            const service = await childLoad(
              gemService,
              connectGemService,
              (client) => run.workload.gemService!(baselineContext, client),
              (operation, window) => runClosedLoop(operation, { ...round, window }),
            );
            return roundFigures(`${label}, the gem-shaped service`, service);
          },
          ...(floorLoad
            ? {
                floor: async () =>
                  roundFigures(`${label}, the protocol's floor`, await floorLoad(round)),
              }
            : {}),
          ...(bareClientLoad
            ? {
                bareClient: async () =>
                  roundFigures(`${label}, without the SDK`, await bareClientLoad(round)),
              }
            : {}),
        });
        progress.note(`${label}: ${roundsNote(roundsInTurn, lone)}`);
      }
      const row: RunRow = {
        workloadId: run.workload.id,
        workload: run.workload.name,
        bodyBytes: run.bodyBytes,
        concurrency,
        unit: run.workload.unit,
        opsPerSecond: sdk.opsPerSecond,
        unitsPerSecond: sdk.unitsPerSecond,
        latency: sdk.latency,
        errors: sdk.errors,
        ...(sdk.firstError === undefined ? {} : { firstError: sdk.firstError }),
        cpu: sdkCpu,
        ...(serverCaches ? { serverCaches } : {}),
        echo,
        streamEcho,
        ...(mysql ? { mysql } : {}),
        ...(gem ? { gem } : {}),
        ...(gemServiceRun ? { gemService: gemServiceRun } : {}),
        ...(roundsInTurn ? { roundsInTurn } : {}),
      };
      rows.push(row);
      progress.note(
        `${label}: ${Math.round(sdk.opsPerSecond)} ops/s, p99 ${sdk.latency.p99.toFixed(2)} ms` +
          ` (echo ${Math.round(echo.opsPerSecond)}, stream echo ${Math.round(streamEcho.opsPerSecond)}${mysql ? `, mysql2 ${Math.round(mysql.opsPerSecond)}` : ''}` +
          `${gem ? `, gem-shaped ${Math.round(gem.opsPerSecond)}` : ''}` +
          `${gemServiceRun ? `, gem-shaped service ${Math.round(gemServiceRun.opsPerSecond)}` : ''})` +
          (sdk.errors > 0 ? `, ${sdk.errors} errors: ${sdk.firstError}` : '') +
          (sdk.windowMs > 1.5 * load.durationMs
            ? `, measured over ${(sdk.windowMs / 1000).toFixed(1)} s (slow calls)`
            : '') +
          (gem && gem.errors > 0 ? `; gem-shaped: ${gem.errors} errors: ${gem.firstError}` : '') +
          cachesNote(serverCaches),
      );
    }
  }

  for (const workload of plan.halfLoad) {
    const peak = rows
      .filter((row) => row.workload === workload.name && row.bodyBytes === HALF_LOAD_BODY)
      .reduce((best, row) => Math.max(best, row.opsPerSecond), 0);
    if (peak === 0) continue;
    const ratePerSecond = Math.round(peak / 2);
    const context: WorkloadContext = {
      rate: bench.rate,
      tables,
      seeded: seeded.get(HALF_LOAD_BODY)!,
      bodyBytes: HALF_LOAD_BODY,
      shardsCount: bench.settings.shardsCount,
    };
    const {
      result,
      cpu: sdkCpu,
      serverCaches,
    } = await sdkRun(`${workload.id}-half-peak`, (window) =>
      runOpenLoop(workload.sdk(context), { ...load, ratePerSecond, window }),
    );
    // The echoes at the same rate: the latency this machine's scheduling alone adds.
    const { echo, streamEcho } = await bothEchoes(echoAddress, HALF_LOAD_BODY, (operation) =>
      runOpenLoop(operation, { ...load, ratePerSecond }),
    );
    // The gem's read behind the same hop, at the same rate, on the baselines' records.
    const gemServiceRun =
      gemService && workload.gemService
        ? await childLoad(
            gemService,
            connectGemService,
            (service) =>
              workload.gemService!(
                { ...context, seeded: baselineSeeded.get(HALF_LOAD_BODY)! },
                service,
              ),
            (operation, window) => runOpenLoop(operation, { ...load, ratePerSecond, window }),
          )
        : undefined;
    const row: RunRow = {
      workloadId: workload.id,
      workload: `${workload.name} at half peak`,
      bodyBytes: HALF_LOAD_BODY,
      concurrency: 0,
      openLoopRate: ratePerSecond,
      unit: workload.unit,
      opsPerSecond: result.opsPerSecond,
      unitsPerSecond: result.unitsPerSecond,
      latency: result.latency,
      errors: result.errors,
      ...(result.firstError === undefined ? {} : { firstError: result.firstError }),
      cpu: sdkCpu,
      ...(serverCaches ? { serverCaches } : {}),
      echo,
      streamEcho,
      ...(gemServiceRun ? { gemService: gemServiceRun } : {}),
    };
    rows.push(row);
    progress.note(
      `${workload.name} at ${ratePerSecond}/s (half its peak): p50 ${result.latency.p50.toFixed(2)} ms, ` +
        `p99 ${result.latency.p99.toFixed(2)} ms (echo at that rate: p99 ${echo.p99.toFixed(2)} ms, ` +
        `stream echo ${streamEcho.p99.toFixed(2)} ms` +
        (gemServiceRun ? `, gem-shaped service ${gemServiceRun.p99.toFixed(2)} ms` : '') +
        ')' +
        cachesNote(serverCaches),
    );
  }

  progress.note(
    `Each follow: ${plan.follow.writers} writers for ${plan.follow.durationMs} ms, one consumer on every shard`,
  );
  const first = seeded.values().next().value!;
  const follow = await measureFollowLatency(bench.rate, first.uuids, {
    writers: plan.follow.writers,
    warmupMs: plan.warmupMs,
    durationMs: plan.follow.durationMs,
    bodyBytes: first.bodyBytes,
  });
  const replicas =
    plan.replicas && (await runReplicaWorkload(bench.settings, plan.replicas, progress));
  const idle = plan.idle && (await runIdleWorkload(bench.settings, plan.idle, progress));
  const consumer = plan.consumer && (await runConsumerWorkload(bench, plan.consumer, progress));
  const moves = plan.moves && (await runMovesWorkload(bench.settings, plan.moves, progress));
  return {
    rows,
    follow,
    runsFrom,
    ...(replicas ? { replicas } : {}),
    ...(idle ? { idle } : {}),
    ...(moves ? { moves } : {}),
    ...(consumer ? { consumer } : {}),
  };
}

/** The calls in flight whose runs take rounds in turn with the gem-shaped service. */
const ROUNDS_IN_FLIGHT: readonly number[] = [1, 16];

/**
 * The progress line of a run's rounds: a lone read's p50s (with the store's server without the
 * SDK and the protocol's floor, where taken), or the reads a second of 16 in flight.
 */
function roundsNote(rounds: AlternatingRounds, lone: boolean): string {
  const taken = `${rounds.rounds} rounds in turn with the gem-shaped service`;
  if (!lone) {
    return (
      `${taken}, ${Math.round(rounds.store.opsPerSecond ?? 0)} vs ` +
      `${Math.round(rounds.service.opsPerSecond ?? 0)} ops/s (medians), ` +
      `${(rounds.overService.store.opsPerSecond ?? 0).toFixed(2)}× by the rounds' own ratios`
    );
  }
  const beside = [
    rounds.bareClient && `without the SDK ${rounds.bareClient.p50.toFixed(2)}`,
    rounds.floor && `the protocol's floor ${rounds.floor.p50.toFixed(2)}`,
  ].filter(Boolean);
  return (
    `${taken}, p50 ${rounds.store.p50.toFixed(2)} vs ${rounds.service.p50.toFixed(2)} ms` +
    `${beside.length > 0 ? ` (${beside.join(', ')})` : ''} (medians), ` +
    `${rounds.overService.store.p50.toFixed(2)}× by the rounds' own ratios`
  );
}

/**
 * A side's window as a round's figures. A window in which a call failed stops the run: its p50
 * and CPU would be those of the failures, not of the reads being compared.
 */
export function roundFigures(side: string, window: Baseline): RoundFigures {
  if (window.errors > 0) {
    throw new Error(
      `${side}: ${window.errors} call(s) failed in a round, the first: ${window.firstError ?? '?'}`,
    );
  }
  return { p50: window.p50, cpu: window.cpu ?? {}, opsPerSecond: window.opsPerSecond };
}

/** A baseline's server in a process of its own, and the CPU of the processes its loads involve. */
interface ChildSubject {
  readonly address: string;
  readonly cpu: ProcessCpu;
}

/**
 * A load on a client of its own of a baseline's server (the gem-shaped service, the protocol
 * floor), with the CPU of its process (as `server`), this one and MariaDB.
 */
async function childLoad<Client extends { close(): void }>(
  subject: ChildSubject,
  connect: (address: string) => Client,
  operationOf: (client: Client) => (worker: number) => Promise<number | void>,
  load: (
    operation: (worker: number) => Promise<number | void>,
    window: MeasuredWindow,
  ) => Promise<LoadResult>,
): Promise<Baseline> {
  const client = connect(subject.address);
  const meter = subject.cpu.meter(['server', 'client', 'mariadb']);
  try {
    const result = await load(operationOf(client), meter);
    return baseline(result, meter.perOperation(result.operations));
  } finally {
    client.close();
  }
}

/** The unary echo, then the stream echo, of `bodyBytes` under `load`, each on a client of its own. */
async function bothEchoes(
  address: string,
  bodyBytes: number,
  load: (operation: () => Promise<void>) => Promise<LoadResult>,
): Promise<Echoes> {
  const payload = Buffer.alloc(bodyBytes, 0x78);
  const measure = async (client: EchoClient) => {
    try {
      return baseline(await load(async () => void (await client.echo(payload))));
    } finally {
      client.close();
    }
  };
  return {
    echo: await measure(connectEcho(address)),
    streamEcho: await measure(connectStreamEcho(address)),
  };
}

function baseline(result: LoadResult, cpu?: CpuPerOperation): Baseline {
  return {
    opsPerSecond: result.opsPerSecond,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p999: result.latency.p999,
    errors: result.errors,
    ...(result.firstError === undefined ? {} : { firstError: result.firstError }),
    ...(cpu ? { cpu } : {}),
  };
}

/** The progress line's note of what the server's caches answered in the window, if anything. */
function cachesNote(lookups: CacheLookups | undefined): string {
  const said = lookups ? formatCacheLookups(lookups) : '';
  return said === '' ? '' : `; ${said}`;
}
