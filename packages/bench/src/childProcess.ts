// The servers under test run in their own processes, as in production: the load generator's
// event loop must not share a thread with the server it measures.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';

export interface ServerChild {
  readonly address: string;
  readonly pid: number;
  /** The process's resident memory in bytes, from /proc (Linux). */
  rssBytes(): Promise<number>;
  /** What it printed, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `node <args>` and waits for a line matching `listening on (host:port)`. */
export async function startServerChild(
  name: string,
  args: readonly string[],
  timeoutMs = 30_000,
): Promise<ServerChild> {
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = () => {
      const match = /listening on (\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before listening:\n${output}`));
    });
  });
  return {
    address,
    pid: child.pid!,
    rssBytes: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kilobytes = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
      return kilobytes === undefined ? Number.NaN : Number(kilobytes) * 1024;
    },
    output: () => output,
    stop: async () => {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}
