// The read-replica row (`--workloads replicas`, issue 53): the same read workload (GetCell of
// seeded 1 KB records through the SDK, 16 in flight, connect()'s default `session` consistency and
// no recent write) against two `shameless serve` processes over the same primary, one without a
// replica and one with `--replica`, in the same run, side by side: both warmed up, then each side
// twice (primary, replica, replica, primary). It starts its own primary and replica (the test
// kit's GTID replication on loopback ports): the bench's MySQL has no replica.
// Each side's share of read statements run on the replica comes from both servers' `Com_select`
// (less the MASTER_GTID_WAITs and the replica monitor's own probes, at their most).
//
// On one machine the replica shares its cores with the primary, the servers and the load, so the
// figures say what a read through a replica costs against the primary, not what a second machine
// would add.
import { type StatementDeltas, startReplicatedMariaDb, watchStatements } from '@shameless/testkit';
import { connect, type Store } from '@shameless/client';
import { Replica_State } from '@shameless/proto';
import { SETTINGS } from '@shameless/server';
import { type LoadResult, runClosedLoop } from '../load/closedLoop.js';
import type { Progress } from '../load/progress.js';
import {
  RATE_SCHEMA,
  type RateModel,
  type StoreSettings,
  seedRates,
  startServe,
} from '../subjects/benchStore.js';
import { getCell } from './workloads.js';
import { BaselineTables } from '../subjects/mysqlBaseline.js';

/** Its id for `--workloads`. */
export const REPLICA_WORKLOAD = 'replicas';

export interface ReplicaPlan {
  readonly hotels: number;
  readonly perHotel: number;
  readonly bodyBytes: number;
  readonly concurrency: number;
  readonly warmupOperations: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /**
   * Unmeasured reads against each server before the first run, so that the runs measure code
   * V8 has optimised in both (a fresh server's first seconds ran at about half the pace).
   */
  readonly serverWarmupMs: number;
}

export function replicaPlan(quick: boolean): ReplicaPlan {
  return {
    hotels: 10,
    perHotel: 100,
    bodyBytes: 1024,
    concurrency: 16,
    warmupOperations: 1000,
    warmupMs: quick ? 200 : 400,
    durationMs: quick ? 1000 : 3000,
    serverWarmupMs: quick ? 2000 : 5000,
  };
}

/** One side: the server's reads, and where they ran. */
export interface ReplicaSide {
  /** `primary only` or `one replica`. */
  readonly subject: string;
  readonly load: LoadResult;
  /** SELECTs each server ran over the side's whole run (priming and warm-up included). */
  readonly primarySelects: number;
  readonly replicaSelects: number;
  readonly replicaGtidWaits: number;
  /** The most SELECTs of the replica monitor in that time (the replica's server only). */
  readonly probes: number;
  /** The share of read statements the replica ran: a lower bound (see readsOnReplica). */
  readonly replicaShare: number;
}

export interface ReplicaResult {
  readonly plan: ReplicaPlan;
  /** The serve settings of the replica side: the server's defaults. */
  readonly settings: {
    readonly checkMs: number;
    readonly maxLagMs: number;
    readonly waitMs: number;
  };
  readonly sides: readonly ReplicaSide[];
}

export async function runReplicaWorkload(
  settings: StoreSettings,
  plan: ReplicaPlan,
  progress: Progress,
): Promise<ReplicaResult> {
  progress.note('Read replicas: a primary and a replica (GTID replication) on loopback ports');
  const set = await startReplicatedMariaDb({ replicas: 1 });
  const replica = set.replicas[0]!;
  const database = `${settings.database}_replicas`;
  const primaryUrl = `${set.primary.url}/${database}`;
  const replicaUrl = `${replica.url}/${database}`;
  const stores: Store[] = [];
  const servers = [];
  try {
    // One after the other: the first lays out the fresh database.
    servers.push(
      await startServe(settings, primaryUrl, { name: 'shameless serve (primary only)' }),
    );
    servers.push(
      await startServe(settings, primaryUrl, {
        name: 'shameless serve --replica',
        args: ['--replica', `0=${replicaUrl}`],
      }),
    );
    const [primaryOnly, withReplica] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const seeding = await openStore(primaryOnly.address, stores);
    const seeded = await seedRates(
      seeding.rate,
      { firstHotel: 1, hotels: plan.hotels, perHotel: plan.perHotel, bodyBytes: plan.bodyBytes },
      progress,
    );
    await set.waitForReplicaToCatchUp(replica);
    await replicaServing(await openStore(withReplica.address, stores));

    const loadOptions = {
      concurrency: plan.concurrency,
      warmupOperations: plan.warmupOperations,
      warmupMs: plan.warmupMs,
      durationMs: plan.durationMs,
    };
    const tables = new BaselineTables('rate', settings.shardsCount);
    const reads = (rate: RateModel) =>
      getCell.sdk({
        rate,
        seeded,
        bodyBytes: plan.bodyBytes,
        shardsCount: settings.shardsCount,
        tables,
      });
    const subjects = [
      ['primary only', primaryOnly],
      ['one replica', withReplica],
    ] as const;
    for (const [subject, server] of subjects) {
      progress.note(`Read replicas: warming up the ${subject} server (${plan.serverWarmupMs} ms)`);
      const { rate } = await openStore(server.address, stores);
      await runClosedLoop(reads(rate), {
        ...loadOptions,
        warmupMs: 0,
        durationMs: plan.serverWarmupMs,
      });
    }

    const sides: ReplicaSide[] = [];
    // Each side twice, in the order primary, replica, replica, primary: a drift in the load
    // this machine carries from other work weighs on both sides alike, and shows.
    for (const [subject, server] of [...subjects, ...[...subjects].reverse()]) {
      // A connection of its own, which has written nothing: its reads carry no token to wait for.
      const { rate } = await openStore(server.address, stores);
      progress.note(
        `Read replicas: GetCell, ${plan.concurrency} in flight, session consistency, ${subject}`,
      );
      const watch = await watchStatements([set.primary.url, replica.url]);
      const load = await runClosedLoop(reads(rate), loadOptions);
      sides.push(side(subject, load, await watch.delta()));
      progress.note(
        `  ${Math.round(load.opsPerSecond)} reads/s, p99 ${load.latency.p99.toFixed(2)} ms, ` +
          `${(sides.at(-1)!.replicaShare * 100).toFixed(1)}% of read statements on the replica`,
      );
    }
    return {
      plan,
      settings: {
        checkMs: SETTINGS.replicaCheckMs.defaultValue,
        maxLagMs: SETTINGS.replicaMaxLagMs.defaultValue,
        waitMs: SETTINGS.replicaWaitMs.defaultValue,
      },
      sides,
    };
  } finally {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(servers.map((server) => server.kill()));
    await set.destroy();
  }
}

async function openStore(address: string, stores: Store[]) {
  const store = await connect({ endpoints: [address], deadlineMs: 30_000 });
  stores.push(store);
  return { store, rate: await store.defineModel(RATE_SCHEMA) };
}

/** Waits until the server measures its replica serving. */
async function replicaServing({ store }: { store: Store }): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const replica = (await store.describe()).partitions[0]?.replicas[0];
    if (replica?.state === Replica_State.STATE_SERVING) return;
    if (Date.now() > deadline) {
      throw new Error(
        `the replica is not serving after 30 s: ${replica ? Replica_State[replica.state] : 'not listed'}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Where one side's reads ran. On the replica, its SELECTs less the MASTER_GTID_WAITs and at most
 * the probes of the one server that monitors it (one every --replica-check-ms, plus one at each
 * edge); on the primary, every SELECT counts as a read (its health and lag probes too), so the
 * share is a lower bound.
 */
function side(subject: string, load: LoadResult, deltas: StatementDeltas): ReplicaSide {
  const [primary, replica] = deltas.servers as [
    StatementDeltas['servers'][0],
    StatementDeltas['servers'][0],
  ];
  const probes = Math.ceil(deltas.elapsedMs / SETTINGS.replicaCheckMs.defaultValue) + 2;
  const replicaReads = Math.max(0, replica!.selects - replica!.gtidWaits - probes);
  const total = replicaReads + primary!.selects;
  return {
    subject,
    load,
    primarySelects: primary!.selects,
    replicaSelects: replica!.selects,
    replicaGtidWaits: replica!.gtidWaits,
    probes,
    replicaShare: total === 0 ? 0 : replicaReads / total,
  };
}
