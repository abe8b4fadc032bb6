// The idle server (`--workloads idle`, issue 55): what a `shameless serve` that no client calls
// costs, at 16 and at 1,024 shards. An idle server should cost next to nothing, and what it
// sends MariaDB in the background should not grow with the shard count.
//
// Each side is a server of its own over a fresh database of a MariaDB of its own (the test kit's
// throwaway server), so that `Questions` counts this server's statements and nothing else's
// (less the one SHOW STATUS that reads it). Its CPU is the utime + stime of every thread of the
// process (/proc), in clock ticks: over a window of 10 s a tick is 0.1% of a core. The window
// opens 40 s after the server listens, in a quick run too: in the first half minute of an idle
// server V8 spends a one-off 100-200 ms of its background threads (seen from 5 to 35 s, once per
// process), which is start-up, not what idling costs (a quick run that settled 5 s caught it in
// one side of two, and called the target missed). Each shard count is measured with the
// server's defaults; a full run measures 16 shards also with the probe that never rests
// (--idle-health-check-ms 0, the default until issue 55) and with the partition health probe put
// off for an hour (--health-check-ms), which say what the probe costs (one statement per
// partition, whatever the shard count). The server's periodic tasks:
//   - the partition health probe: one statement per partition (the partition map's highest
//     version) every --health-check-ms (1 s), every --idle-health-check-ms (10 s) once the
//     server has had no call for that long and no stream open;
//   - the memory check (serving/memoryRelease.ts): every 5 s, no statement;
//   - the replica monitor (with --replica only), the followers' max-id poll (while an Each
//     follows) and the consumer groups' coordinator (while a member is joined), none of them
//     running here.
import { setTimeout as sleep } from 'node:timers/promises';
import { startMariaDbServer } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import type { Progress } from '../load/progress.js';
import { ProcessCpu, clockTicks } from '../measure/processCpu.js';
import { type StoreSettings, startServe } from '../subjects/benchStore.js';

/** Its id for `--workloads`. */
export const IDLE_WORKLOAD = 'idle';

export interface IdlePlan {
  readonly sides: readonly {
    readonly shards: number;
    readonly healthProbe: boolean;
    /** The probe rests while the server is idle (the default); false: --idle-health-check-ms 0. */
    readonly probeRests: boolean;
  }[];
  /** Time after the server listens and before the window: its start-up settles. */
  readonly settleMs: number;
  readonly windowMs: number;
}

export function idlePlan(quick: boolean): IdlePlan {
  const defaults = (shards: number) => ({ shards, healthProbe: true, probeRests: true });
  return {
    // The targets' sides, and in a full run what the probe costs beside them.
    sides: quick
      ? [defaults(16), defaults(1024)]
      : [
          defaults(16),
          { shards: 16, healthProbe: true, probeRests: false },
          { shards: 16, healthProbe: false, probeRests: true },
          defaults(1024),
        ],
    settleMs: 40_000,
    windowMs: quick ? 10_000 : 20_000,
  };
}

/** The put-off health probe: longer than any window. */
const PROBE_OFF_MS = 3_600_000;

export interface IdleSide {
  readonly shards: number;
  /** Whether the partition health probe ran (the server's default) or was put off. */
  readonly healthProbe: boolean;
  /** Whether the probe rested while the server was idle (the default). */
  readonly probeRests: boolean;
  /** The server's CPU over the window, as a share of one core. */
  readonly cpuShare: number;
  /** Statements the server sent its one partition, per second of the window. */
  readonly statementsPerSecond: number;
  readonly windowMs: number;
}

export interface IdleResult {
  readonly plan: IdlePlan;
  readonly sides: readonly IdleSide[];
}

export async function runIdleWorkload(
  settings: StoreSettings,
  plan: IdlePlan,
  progress: Progress,
): Promise<IdleResult> {
  progress.note('Idle server: a MariaDB of its own on a loopback port');
  const mariadb = await startMariaDbServer();
  const admin = await mysql.createConnection(mariadb.url);
  const ticks = clockTicks();
  const questions = async () => {
    const [rows] = await admin.query<mysql.RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Questions'");
    return Number(rows[0]?.Value);
  };
  const sides: IdleSide[] = [];
  try {
    for (const { shards, healthProbe, probeRests } of plan.sides) {
      const probe = !healthProbe ? 'quiet' : probeRests ? 'probe' : 'steady';
      const database = `${settings.database}_idle_${shards}_${probe}`;
      await admin.query(`CREATE DATABASE \`${database}\``);
      const server = await startServe(
        { ...settings, shardsCount: shards },
        `${mariadb.url}/${database}`,
        {
          name: `shameless serve (${shards} shards, idle)`,
          args: [
            ...(healthProbe ? [] : ['--health-check-ms', String(PROBE_OFF_MS)]),
            ...(probeRests ? [] : ['--idle-health-check-ms', '0']),
          ],
        },
      );
      try {
        progress.note(
          `Idle server: ${shards} shards, health probe ${probeLabel(healthProbe, probeRests)}, ` +
            `${plan.settleMs / 1000} s to settle, then ${plan.windowMs / 1000} s measured`,
        );
        await sleep(plan.settleMs);
        const cpu = new ProcessCpu({ server: server.process.pid! }, ticks);
        const cpuBefore = cpu.read('server');
        const questionsBefore = await questions();
        const startedAt = performance.now();
        await sleep(plan.windowMs);
        const elapsedMs = performance.now() - startedAt;
        // The SHOW STATUS that read the first count is counted in the second.
        const statements = (await questions()) - questionsBefore - 1;
        const cpuAfter = cpu.read('server');
        if (cpuBefore === undefined || cpuAfter === undefined) {
          throw new Error(`the CPU time of the server (pid ${server.process.pid}) is unreadable`);
        }
        const side: IdleSide = {
          shards,
          healthProbe,
          probeRests,
          cpuShare: (cpuAfter - cpuBefore) / (elapsedMs * 1000),
          statementsPerSecond: statements / (elapsedMs / 1000),
          windowMs: elapsedMs,
        };
        sides.push(side);
        progress.note(
          `  ${(side.cpuShare * 100).toFixed(2)}% of a core, ` +
            `${side.statementsPerSecond.toFixed(2)} statements/s`,
        );
      } finally {
        await server.kill();
      }
    }
    return { plan, sides };
  } finally {
    await admin.end();
    await mariadb.destroy();
  }
}

/** Whether a side ran with the server's defaults (the probe on, resting while idle): a target's side. */
export function withServerDefaults(side: Pick<IdleSide, 'healthProbe' | 'probeRests'>): boolean {
  return side.healthProbe && side.probeRests;
}

/** How a side's probe ran, as the report names it. */
export function probeLabel(healthProbe: boolean, probeRests: boolean): string {
  if (!healthProbe) return 'off';
  return probeRests ? 'on, rests when idle' : 'on, never rests';
}
