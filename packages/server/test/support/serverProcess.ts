// The real `shameless serve` command as a child process, for restart, shutdown and crash tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../../bin/shameless.js');

export interface ServerProcess {
  address: string;
  process: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Runs `shameless serve` with the given flags and waits for its "listening" line. */
export async function startServerProcess(
  args: string[],
  timeoutMs = 30_000,
): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--listen', '127.0.0.1:0', '--log-level', 'warn', ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not start in ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const onData = () => {
      const match = /shameless listening on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    address,
    process: child,
    output: () => output,
    exited,
    kill: (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs `shameless serve` expecting it to refuse to start; returns exit code and output. */
export async function runServerExpectingFailure(
  args: string[],
): Promise<{ code: number | string; output: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | string>((resolve) =>
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? signal ?? 'unknown')),
  );
  clearTimeout(timer);
  return { code, output };
}
