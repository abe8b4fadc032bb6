import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Socket } from 'node:net';

/** Something a test run leaves behind that must not outlive it. */
export interface Leftover {
  /** A child process to SIGKILL. */
  child?: ChildProcess;
  /** A directory to remove recursively. */
  dir?: string;
}

interface Guard extends Leftover {
  watchdog: ChildProcess | undefined;
}

const guards = new Set<Guard>();
let exitHookInstalled = false;

/**
 * Makes sure `leftover` is cleaned up when this Node process ends, however it ends. Call the
 * returned function once the leftover has been dealt with normally.
 *
 * A process 'exit' hook covers normal exits, `process.exit()` (mocha --exit) and uncaught
 * exceptions. It does not run when Node is killed by a signal (Ctrl-C reaching mocha's worker, a CI
 * timeout, the OOM killer), so each leftover also gets a tiny detached shell watchdog that blocks
 * reading a pipe from us: the kernel closes that pipe when we die, which wakes the watchdog.
 */
export function cleanUpOnExit(leftover: Leftover): () => void {
  installExitHook();
  const guard: Guard = { ...leftover, watchdog: spawnWatchdog(leftover) };
  guards.add(guard);
  return () => {
    if (guards.delete(guard)) {
      guard.watchdog?.kill('SIGKILL');
      guard.watchdog?.stdin?.destroy();
    }
  };
}

function installExitHook(): void {
  if (exitHookInstalled) {
    return;
  }
  exitHookInstalled = true;
  process.once('exit', () => {
    // Only synchronous work is possible here. Kill everything before removing anything so that no
    // process is still writing into a directory being removed.
    for (const guard of guards) {
      guard.child?.kill('SIGKILL');
    }
    for (const guard of guards) {
      if (guard.dir !== undefined) {
        try {
          rmSync(guard.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
        } catch {
          // Best effort: the watchdog retries once we are gone.
        }
      }
    }
  });
}

// `read` returns when the pipe from us reaches end-of-file, i.e. when we exit or are killed.
// Removal is retried because a process killed by a sibling watchdog may still be writing.
const WATCHDOG_SCRIPT = `
read _ignored
if [ -n "$1" ]; then kill -KILL "$1" 2>/dev/null; fi
if [ -n "$2" ]; then
  for _attempt in 1 2 3 4 5; do
    rm -rf "$2" 2>/dev/null
    [ -e "$2" ] || break
    sleep 0.2
  done
fi
`;

function spawnWatchdog(leftover: Leftover): ChildProcess | undefined {
  const pid = leftover.child?.pid;
  if (pid === undefined && leftover.dir === undefined) {
    return undefined;
  }
  const watchdog = spawn(
    '/bin/sh',
    [
      '-c',
      WATCHDOG_SCRIPT,
      'shameless-testkit-watchdog',
      pid?.toString() ?? '',
      leftover.dir ?? '',
    ],
    // Detached into its own process group so a Ctrl-C aimed at the test run cannot kill the
    // watchdog before it has done its job.
    { stdio: ['pipe', 'ignore', 'ignore'], detached: true },
  );
  watchdog.on('error', () => {
    // No /bin/sh: the exit hook alone will have to do.
  });
  // Neither the watchdog nor its pipe may keep the test run alive.
  watchdog.unref();
  if (watchdog.stdin instanceof Socket) {
    watchdog.stdin.on('error', () => {});
    watchdog.stdin.unref();
  }
  return watchdog;
}
