// Helpers of the consumer group tests: a `shameless serve` process over fresh databases, cells
// written in bulk, the log as it stands, what each consumer handled, and waiting for a state.

import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import type { ConsumerEvent, ExactInteger, Model, ModelSchema } from '../../src/index.js';
import { rateValues } from './rateModel.js';
import { startServeProcess, type ServeProcess } from './serveProcess.js';

/** A serve process over its own fresh database, `shardsCount` shards. */
export interface GroupServer {
  readonly databases: TestDatabases;
  server: ServeProcess;
  /** The serve arguments, to start it again (the same port when `port` was given). */
  readonly args: readonly string[];
  close(): Promise<void>;
}

export async function startGroupServer(shardsCount: number, port?: number): Promise<GroupServer> {
  const databases = await createTestDatabases(1);
  const args = [
    ...['--partition', databases.urls[0]!, '--shards-count', String(shardsCount)],
    ...(port === undefined ? [] : ['--listen', `127.0.0.1:${port}`]),
  ];
  const fixture: GroupServer = {
    databases,
    server: await startServeProcess(args),
    args,
    async close() {
      await fixture.server.kill('SIGKILL');
      await databases.drop();
    },
  };
  return fixture;
}

/** A cell as a test records it. */
export interface Seen {
  readonly shard: number;
  readonly id: number;
  readonly attempt: number;
  readonly replay: boolean;
  /** Who handled it. */
  readonly by: string;
}

/** Every cell handled by the consumers of one test, in the order their handlers started. */
export class Handled {
  readonly all: Seen[] = [];

  add(seen: Seen): void {
    this.all.push(seen);
  }

  by(name: string): Seen[] {
    return this.all.filter((seen) => seen.by === name);
  }

  /** `shard/id` of each cell handled, with how many times. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { shard, id } of this.all) {
      const key = `${shard}/${id}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  }

  /** Whether every cell of `log` was handled at least once. */
  covers(log: ReadonlyMap<number, readonly number[]>): boolean {
    const counts = this.counts();
    for (const [shard, ids] of log) {
      for (const id of ids) if (!counts.has(`${shard}/${id}`)) return false;
    }
    return true;
  }
}

/** The ids of every cell of `model` now, per shard, ascending. */
export async function logOf<S extends ModelSchema>(
  model: Model<S>,
): Promise<Map<number, number[]>> {
  const log = new Map<number, number[]>(model.shards.map((shard) => [shard, []]));
  for await (const cell of model.each({ batchSize: 1000 })) {
    log.get(cell.shard!)!.push(Number(cell.id));
  }
  return log;
}

/**
 * Writes `count` new rates (each a new record: one base cell), `parallel` at a time. The server
 * puts the creates of one turn on a few shards of their partition (createShards.ts): writing
 * in small batches spreads them.
 */
export async function writeRates<S extends ModelSchema>(
  model: Model<S>,
  count: number,
  tag: string,
  content: (i: number) => Record<string, unknown> = () => ({}),
  parallel = 25,
): Promise<void> {
  const put = (values: Record<string, unknown>) => model.put(values as never);
  for (let start = 0; start < count; start += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, count - start) }, (_, k) => {
        const i = start + k;
        return put(rateValues(i % 97, `${tag}-${i}`, '2026-05-01', { n: i, ...content(i) }));
      }),
    );
  }
}

/** Polls `check` every 20 ms until it holds; rejects naming `what` after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string | (() => string),
): Promise<number> {
  const startedAt = performance.now();
  for (;;) {
    if (await check()) return performance.now() - startedAt;
    if (performance.now() - startedAt > timeoutMs) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Events of a consumer, kept for assertions and for a failing test's message. */
export class Events {
  readonly all: { at: number; event: ConsumerEvent }[] = [];
  readonly hook = (event: ConsumerEvent): void => {
    this.all.push({ at: performance.now(), event });
  };

  of<T extends ConsumerEvent['type']>(type: T): Extract<ConsumerEvent, { type: T }>[] {
    return this.all
      .map(({ event }) => event)
      .filter((event): event is Extract<ConsumerEvent, { type: T }> => event.type === type);
  }
}

/** An id as a number (the tests' ids are small). */
export function num(id: ExactInteger): number {
  return Number(id);
}
