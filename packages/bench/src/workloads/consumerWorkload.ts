// The consumer-group workload (`--workloads consumer`): the figures of issue 52, each measured
// with real parts (member processes running the SDK, `shameless serve` processes, the fault
// proxy) and with the defaults users get: one member's throughput over a backlog beside an
// Each of it, commit → handler at a steady write rate beside an Each follow, a join's effect on
// the shards that do not move, a rolling restart of three members, a member SIGKILLed, a member
// cut off silently, and a poison cell. Each figure that fails is reported as not measured, with
// why, and the others go on.
import { GROUP_DEFAULTS, SETTINGS } from '@shameless/server';
import type { Progress } from '../load/progress.js';
import { type BenchStore, startServe } from '../subjects/benchStore.js';
import { TICKET_SCHEMA } from '../subjects/consumerMember.js';
import {
  type CrashResult,
  type CutResult,
  measureCrash,
  measureSilentCut,
} from './consumerFailover.js';
import { type LatencyResult, measureDeliveryLatency } from './consumerLatency.js';
import { seedTickets, writeBacklog } from './consumerLoad.js';
import { type PoisonResult, measurePoison } from './consumerPoison.js';
import {
  type RebalanceResult,
  type RollingRestartResult,
  measureRebalanceAndRestarts,
} from './consumerRebalance.js';
import { type ThroughputResult, measureThroughput } from './consumerThroughput.js';

/** Its id for `--workloads`. */
export const CONSUMER_WORKLOAD = 'consumer';

export interface ConsumerPlan {
  /** Tickets created (each one 1 KB base cell); the event cells go on them. */
  readonly tickets: number;
  /** Event cells of the backlog one member reads. */
  readonly backlogCells: number;
  /** Reads of the backlog by Each and by a member with the defaults, alternating. */
  readonly throughputRounds: number;
  /** Writes a second while members work (latency, join, restarts, crash, cut). */
  readonly writesPerSecond: number;
  readonly latencyWarmupMs: number;
  readonly latencyMs: number;
  /** Before a loss or a join: long enough for cursors to be confirmed under load (~1 s). */
  readonly settleMs: number;
  readonly bodyBytes: number;
}

export function consumerPlan(quick: boolean): ConsumerPlan {
  return {
    tickets: 2000,
    backlogCells: quick ? 30_000 : 60_000,
    throughputRounds: quick ? 1 : 2,
    writesPerSecond: 1000,
    latencyWarmupMs: 2000,
    latencyMs: quick ? 5000 : 10_000,
    settleMs: 2000,
    bodyBytes: 1024,
  };
}

/** A figure's result, or why it could not be measured. */
export type Measured<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** What the members and servers ran with: the defaults users get. */
export interface ConsumerSettings {
  readonly shards: number;
  readonly sessionTimeoutMs: number;
  readonly maxInFlight: number;
  readonly perShardInFlight: number;
  readonly maxDeliveries: number;
  readonly groupPollMs: number;
}

export interface ConsumerResult {
  readonly plan: ConsumerPlan;
  readonly settings: ConsumerSettings;
  readonly throughput: Measured<ThroughputResult>;
  readonly latency: Measured<LatencyResult>;
  readonly rebalance: Measured<{ rebalance: RebalanceResult; restarts: RollingRestartResult }>;
  readonly crash: Measured<CrashResult>;
  readonly cut: Measured<CutResult>;
  readonly poison: Measured<PoisonResult>;
}

export async function runConsumerWorkload(
  bench: BenchStore,
  plan: ConsumerPlan,
  progress: Progress,
): Promise<ConsumerResult> {
  const shards = bench.settings.shardsCount;
  progress.note(
    `Consumer groups: member processes with the SDK's defaults, ${shards} shards, servers with --group-poll-ms ${SETTINGS.groupPollMs.defaultValue}`,
  );
  const ticket = await bench.store.defineModel(TICKET_SCHEMA);
  const uuids = await seedTickets(ticket, plan.tickets, plan.bodyBytes, progress);
  await writeBacklog(ticket, uuids, plan.backlogCells, plan.bodyBytes, progress);
  const endpoint = bench.server.address;
  const writes = { ratePerSecond: plan.writesPerSecond, bodyBytes: plan.bodyBytes };

  const figure = async <T>(title: string, measure: () => Promise<T>): Promise<Measured<T>> => {
    progress.note(`Consumer groups: ${title}`);
    try {
      return { ok: true, value: await measure() };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      progress.note(`  not measured: ${message}`);
      return { ok: false, error: message };
    }
  };

  const throughput = await figure(
    `one member's throughput over a backlog of ${(plan.tickets + plan.backlogCells).toLocaleString('en-US')} cells of 1 KB, beside Each`,
    () =>
      measureThroughput(
        endpoint,
        bench.server.process.pid,
        { cells: plan.tickets + plan.backlogCells, rounds: plan.throughputRounds },
        progress,
      ),
  );
  const latency = await figure(`commit → handler at ${plan.writesPerSecond} writes/s`, () =>
    measureDeliveryLatency(
      ticket,
      uuids,
      endpoint,
      {
        ...writes,
        warmupMs: plan.latencyWarmupMs,
        durationMs: plan.latencyMs,
      },
      progress,
    ),
  );

  // Members behind two servers, as a group's members sit in production.
  progress.note('Consumer groups: a second shameless serve over the same store');
  const second = await startServe(bench.settings, bench.partitionUrl, {
    name: 'second shameless serve',
  });
  try {
    const both = [endpoint, second.address] as const;
    const rebalance = await figure('a third member joins, then a rolling restart of three', () =>
      measureRebalanceAndRestarts(
        ticket,
        uuids,
        both,
        { ...writes, windowMs: plan.settleMs, settleMs: 500 },
        progress,
      ),
    );
    const crash = await figure('a member SIGKILLed', () =>
      measureCrash(
        ticket,
        uuids,
        { lost: second.address, survivor: endpoint },
        { ...writes, settleMs: plan.settleMs },
        progress,
      ),
    );
    const cut = await figure('a member cut off silently (fault proxy)', () =>
      measureSilentCut(
        ticket,
        uuids,
        { lost: second.address, survivor: endpoint },
        { ...writes, settleMs: plan.settleMs },
        progress,
      ),
    );
    const poison = await figure('a poison cell that kills its member', () =>
      measurePoison(bench.store, ticket, uuids, endpoint, progress),
    );
    return {
      plan,
      settings: {
        shards,
        sessionTimeoutMs: GROUP_DEFAULTS.sessionTimeoutMs,
        maxInFlight: GROUP_DEFAULTS.maxInFlight,
        perShardInFlight: GROUP_DEFAULTS.perShardInFlight,
        maxDeliveries: GROUP_DEFAULTS.maxDeliveries,
        groupPollMs: SETTINGS.groupPollMs.defaultValue,
      },
      throughput,
      latency,
      rebalance,
      crash,
      cut,
      poison,
    };
  } finally {
    await second.kill();
  }
}
