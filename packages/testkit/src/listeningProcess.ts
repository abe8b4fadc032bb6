// A Node program run as a child process that prints `listening on <host:port>` when ready: the
// `shameless serve` CLI in process tests and fault tests, the benchmark's servers. It never
// outlives the process that started it.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cleanUpOnExit } from './cleanupOnExit.js';

export interface ListeningProcess {
  /** The address from its `listening on` line. */
  readonly address: string;
  readonly process: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once it has exited. */
  readonly exited: Promise<number | string>;
  /** Sends the signal (SIGTERM by default) unless it has exited; resolves once it has. */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
  /** Its resident memory in bytes (Linux /proc). */
  rssBytes(): Promise<number>;
}

const LISTENING = /listening on (\S+)/;

/** Runs `node <args>` and waits for its `listening on` line. */
export async function startListeningProcess(
  args: readonly string[],
  options: {
    name: string;
    timeoutMs?: number;
    nodeOptions?: readonly string[];
    /** Added to this process's environment for the child. */
    env?: Readonly<Record<string, string>>;
  },
): Promise<ListeningProcess> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  const release = cleanUpOnExit({ child });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      release();
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${options.name} did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = () => {
      const match = LISTENING.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    address,
    process: child,
    output: () => output,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    rssBytes: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kilobytes = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
      return kilobytes === undefined ? Number.NaN : Number(kilobytes) * 1024;
    },
  };
}
