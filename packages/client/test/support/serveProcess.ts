// `shameless serve` (the built CLI) as a child process on a free loopback port, for tests that
// kill a server the way a crash would (SIGKILL).

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startListeningProcess, type ListeningProcess } from '@shameless/testkit';

/** A `shameless serve` child process. */
export type ServeProcess = ListeningProcess;

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../../../server/bin/shameless.js');

/** Runs `shameless serve` with `args` on a free port and waits until it listens. */
export function startServeProcess(args: string[]): Promise<ServeProcess> {
  return startListeningProcess(
    [CLI, 'serve', '--listen', '127.0.0.1:0', '--log-level', 'warn', ...args],
    { name: 'shameless serve' },
  );
}
