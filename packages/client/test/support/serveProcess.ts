// `shameless serve` (the built CLI) as a child process on a free loopback port, for tests that
// kill a server the way a crash would (SIGKILL).

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createTestDatabases,
  startListeningProcess,
  type ListeningProcess,
} from '@shameless/testkit';

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

/** Two `shameless serve` processes over the same two fresh databases (a 4-shard store). */
export interface TwoServers {
  readonly servers: readonly [ServeProcess, ServeProcess];
  /** Kills both servers (SIGKILL) and drops the databases. */
  close(): Promise<void>;
}

export async function startTwoServers(): Promise<TwoServers> {
  const databases = await createTestDatabases(2);
  const args = [
    ...databases.urls.flatMap((url) => ['--partition', url]),
    ...['--shards-count', '4', '--pool-size', '8'],
  ];
  // One after the other: the first one lays out the fresh databases.
  const first = await startServeProcess(args);
  const second = await startServeProcess(args);
  return {
    servers: [first, second],
    async close() {
      await Promise.all([first, second].map((server) => server.kill('SIGKILL')));
      await databases.drop();
    },
  };
}
