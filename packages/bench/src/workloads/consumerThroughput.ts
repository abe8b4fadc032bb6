// One member's throughput: a member process reads a backlog of 1 KB cells over every shard
// with a no-op handler, from the group's start, beside an `Each` of the same backlog in a
// process of the same kind, alternating, on the same server. A rate counts from the first cell
// handled to the last (the join before it is said apart); the CPU is the member's own from its
// first cell, and the server's over the process's whole life.
import type { Progress } from '../load/progress.js';
import { ProcessCpu, clockTicks } from '../measure/processCpu.js';
import {
  type MemberConfig,
  type MemberLine,
  MemberProcess,
  wallClockMs,
} from '../subjects/consumerMember.js';

/** One read of the whole backlog. */
export interface BacklogRead {
  /** `Each`, `consume (defaults)`, `consume maxInFlight 1024`, ... */
  readonly label: string;
  readonly cellsPerSecond: number;
  /** From the process's start to its first cell (connect, define, join, first delivery). */
  readonly startMs: number;
  /** CPU µs a cell: the reading process's (from its first cell), and the server's. */
  readonly readerCpuPerCell: number;
  readonly serverCpuPerCell?: number;
}

export interface ThroughputResult {
  readonly cells: number;
  /** The runs of `Each`, and of a member with the SDK's defaults, alternating. */
  readonly each: readonly BacklogRead[];
  readonly defaults: readonly BacklogRead[];
  /** A member with other settings, once each. */
  readonly alternatives: readonly BacklogRead[];
}

/** Settings a user might reach for, each read once after the defaults. */
export const THROUGHPUT_ALTERNATIVES: readonly {
  readonly label: string;
  readonly options: NonNullable<MemberConfig['options']>;
}[] = [
  { label: 'maxInFlight 1024', options: { maxInFlight: 1024 } },
  { label: 'maxInFlight 4096', options: { maxInFlight: 4096 } },
  { label: 'perShardInFlight 16', options: { perShardInFlight: 16 } },
];

const READ_TIMEOUT_MS = 120_000;

export async function measureThroughput(
  endpoint: string,
  serverPid: number | undefined,
  options: {
    cells: number;
    rounds: number;
    alternatives?: readonly { readonly label: string; readonly options: MemberConfig['options'] }[];
  },
  progress: Progress,
): Promise<ThroughputResult> {
  const cpu = new ProcessCpu({ ...(serverPid ? { server: serverPid } : {}) }, clockTicks());
  let groups = 0;
  const read = async (label: string, config: Omit<MemberConfig, 'endpoints' | 'report'>) => {
    const run = await readBacklog(cpu, label, {
      endpoints: [endpoint],
      report: 'count',
      until: options.cells,
      ...config,
      ...(config.mode === 'consume' ? { group: `throughput-${++groups}` } : {}),
    });
    progress.note(
      `  ${label}: ${Math.round(run.cellsPerSecond).toLocaleString('en-US')} cells/s ` +
        `(first cell ${Math.round(run.startMs)} ms after the process started; ` +
        `${run.readerCpuPerCell.toFixed(1)} µs a cell in the reader` +
        (run.serverCpuPerCell === undefined
          ? ')'
          : `, ${run.serverCpuPerCell.toFixed(1)} in the server)`),
    );
    return run;
  };
  // V8 optimises the server's group and log code over the first reads: one of each, unmeasured.
  progress.note(`  warming up: one Each and one member over the backlog, unmeasured`);
  await read('warm-up Each', { mode: 'each' });
  await read('warm-up member', { mode: 'consume' });
  const each: BacklogRead[] = [];
  const defaults: BacklogRead[] = [];
  for (let round = 0; round < options.rounds; round++) {
    each.push(await read('Each', { mode: 'each' }));
    defaults.push(await read('member, SDK defaults', { mode: 'consume' }));
  }
  const alternatives: BacklogRead[] = [];
  for (const { label, options: settings } of options.alternatives ?? THROUGHPUT_ALTERNATIVES) {
    alternatives.push(await read(`member, ${label}`, { mode: 'consume', options: settings }));
  }
  return { cells: options.cells, each, defaults, alternatives };
}

async function readBacklog(
  cpu: ProcessCpu,
  label: string,
  config: MemberConfig,
): Promise<BacklogRead> {
  const serverBefore = cpu.read('server');
  const startedAt = wallClockMs();
  const member = await MemberProcess.start(label, config);
  try {
    const done = await member.waitFor(
      (line): line is Extract<MemberLine, { t: 'done' }> => line.t === 'done',
      READ_TIMEOUT_MS,
      `${config.until} cells`,
      true,
    );
    const serverAfter = cpu.read('server');
    const seconds = (done.at - done.first) / 1000;
    return {
      label,
      cellsPerSecond: (done.n - 1) / seconds,
      startMs: done.first - startedAt,
      readerCpuPerCell: done.cpu / done.n,
      ...(serverBefore !== undefined && serverAfter !== undefined
        ? { serverCpuPerCell: (serverAfter - serverBefore) / done.n }
        : {}),
    };
  } finally {
    await member.kill();
  }
}
