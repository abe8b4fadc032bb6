// The real `shameless` command as a child process: `serve` for restart, shutdown and crash
// tests, any other command run to its end.
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ListeningProcess, startListeningProcess } from '@shameless/testkit';

/** The `shameless` bin script. */
export const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../../bin/shameless.js');

export type ServerProcess = ListeningProcess;

/** Runs `shameless serve` with the given flags and waits for its "listening" line. */
export function startServerProcess(args: string[], timeoutMs = 30_000): Promise<ServerProcess> {
  return startListeningProcess(
    [CLI, 'serve', '--listen', '127.0.0.1:0', '--log-level', 'warn', ...args],
    { name: 'shameless serve', timeoutMs },
  );
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

export interface CommandResult {
  code: number | string;
  stdout: string;
  stderr: string;
}

/**
 * Runs a `shameless` command (e.g. `plan`) to its end; returns its exit code and output.
 * `env` is added to this process's environment (undefined removes a variable); `input` is
 * written to its stdin.
 */
export async function runCommand(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string } = {},
): Promise<CommandResult> {
  const child = startCommand(args, options.env);
  // A command that exits before reading its input (a refused flag) closes the pipe: EPIPE
  // then is no failure of the command, whose exit code and output say how it went.
  child.stdin!.on('error', () => {});
  child.stdin!.end(options.input ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | string>((resolve) =>
    child.on('close', (exitCode, signal) => resolve(exitCode ?? signal ?? 'unknown')),
  );
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Starts a `shameless` command and leaves it running (e.g. `tail --follow`). */
export function startCommand(
  args: string[],
  env: Record<string, string | undefined> = {},
): ChildProcess {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete merged[name];
    else merged[name] = value;
  }
  return spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: merged });
}
