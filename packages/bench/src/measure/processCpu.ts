// CPU time per operation, by process: what each operation costs the server, the client driving
// it and MariaDB, which throughput alone hides on a machine whose cores they share. Clocks are
// read at the edges of a run's measured window: this process's from process.cpuUsage(), other
// processes' from the utime + stime of /proc/<pid>/stat (every thread, in clock ticks).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { MeasuredWindow } from '../load/measuredWindow.js';

/** The processes whose CPU a run can be charged with. */
export type CpuProcess = 'server' | 'client' | 'mariadb';

/**
 * CPU microseconds per operation completed in the measured window, by process; absent for a
 * process not involved in the run or whose clock could not be read.
 */
export interface CpuPerOperation {
  /** The `shameless serve` child process. */
  readonly server?: number;
  /** This process: the SDK (or a baseline's mysql2 client) and the load loop driving it. */
  readonly client?: number;
  /** The whole MariaDB server process: any other client's load on it counts too. */
  readonly mariadb?: number;
}

/** The kernel's clock ticks per second, in which /proc reports CPU time. */
export interface ClockTicks {
  readonly perSecond: number;
  /** True when `getconf CLK_TCK` failed and Linux's usual 100 was assumed. */
  readonly assumed: boolean;
}

export function clockTicks(): ClockTicks {
  try {
    const perSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (Number.isInteger(perSecond) && perSecond > 0) return { perSecond, assumed: false };
  } catch {
    // No getconf: fall through to the usual value.
  }
  return { perSecond: 100, assumed: true };
}

/** Reads the cumulative CPU time of the server, this process and MariaDB. */
export class ProcessCpu {
  constructor(
    readonly pids: { readonly server?: number; readonly mariadb?: number },
    readonly ticks: ClockTicks,
  ) {}

  /** Cumulative CPU microseconds of `which`; undefined when it cannot be read. */
  read(which: CpuProcess): number | undefined {
    if (which === 'client') return selfMicros();
    const pid = this.pids[which];
    return pid === undefined ? undefined : procStatMicros(pid, this.ticks);
  }

  /** A meter of `processes` for one run: pass it as the run's measured window. */
  meter(processes: readonly CpuProcess[]): CpuMeter {
    return new CpuMeter(this, processes);
  }
}

/** The CPU each process spent between the window's edges. */
export class CpuMeter implements MeasuredWindow {
  #opened = new Map<CpuProcess, number | undefined>();
  #spent = new Map<CpuProcess, number>();

  constructor(
    private readonly cpu: ProcessCpu,
    private readonly processes: readonly CpuProcess[],
  ) {}

  open(): void {
    for (const which of this.processes) this.#opened.set(which, this.cpu.read(which));
  }

  close(): void {
    for (const which of this.processes) {
      const before = this.#opened.get(which);
      const after = this.cpu.read(which);
      if (before !== undefined && after !== undefined) this.#spent.set(which, after - before);
    }
  }

  /** The CPU spent in the window divided by the `operations` completed in it. */
  perOperation(operations: number): CpuPerOperation {
    const result: { -readonly [P in CpuProcess]?: number } = {};
    if (operations === 0) return result;
    for (const [which, micros] of this.#spent) result[which] = micros / operations;
    return result;
  }
}

function selfMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** utime + stime of a process, all threads; undefined once it has gone (or is not ours to read). */
function procStatMicros(pid: number, ticks: ClockTicks): number | undefined {
  let stat: string;
  try {
    // Synchronous on purpose: the reading belongs to this instant, the window's edge.
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name, which is in parentheses and may itself hold spaces or ')':
  // the first of them is field 3 (state), so utime (14) and stime (15) are at 11 and 12.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) / ticks.perSecond) * 1_000_000;
}
