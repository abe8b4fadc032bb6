// The writes of the consumer-group workload, through the SDK: tickets (records of 1 KB), a
// backlog of 1 KB event cells on them, and a steady stream of event writes at a fixed rate while
// members consume, each acknowledgement noted on the same clock as the members' lines.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Model } from '@shameless/client';
import { forEachConcurrently } from '../load/concurrently.js';
import { LatencyRecorder, type LatencySummary } from '../load/latency.js';
import type { Progress } from '../load/progress.js';
import { payloadOf } from '../subjects/benchStore.js';
import { TICKET_SCHEMA, wallClockMs } from '../subjects/consumerMember.js';

export type TicketModel = Model<typeof TICKET_SCHEMA>;

/** Event cells a WriteCells call of the backlog carries. */
const BACKLOG_BATCH = 500;

/** Creates `count` tickets (1 KB each, one base cell), 32 in flight; their uuids. */
export async function seedTickets(
  ticket: TicketModel,
  count: number,
  bodyBytes: number,
  progress: Progress,
): Promise<string[]> {
  const body = payloadOf(bodyBytes);
  const uuids: string[] = new Array<string>(count);
  const task = progress.task(`creating ${count} tickets (Put, 32 in flight)`, count);
  await forEachConcurrently(count, 32, async (i) => {
    uuids[i] = (await ticket.put({ ticket_id: i, ...body })).uuid;
    task.advance(1);
  });
  task.done();
  return uuids;
}

/** Writes `cells` event cells of `bodyBytes` over the tickets, 500 a WriteCells call, 4 in flight. */
export async function writeBacklog(
  ticket: TicketModel,
  uuids: readonly string[],
  cells: number,
  bodyBytes: number,
  progress: Progress,
): Promise<void> {
  const body = payloadOf(bodyBytes);
  const calls = Math.ceil(cells / BACKLOG_BATCH);
  const task = progress.task(`writing a backlog of ${cells} event cells (WriteCells)`, cells);
  await forEachConcurrently(calls, 4, async (call) => {
    const size = Math.min(BACKLOG_BATCH, cells - call * BACKLOG_BATCH);
    const results = await ticket.writeCells(
      Array.from({ length: size }, () => ({
        uuid: uuids[Math.floor(Math.random() * uuids.length)]!,
        cell: 'event' as const,
        body,
      })),
    );
    const failed = results.find((result) => !result.ok);
    if (failed && !failed.ok) throw failed.error;
    task.advance(size);
  });
  task.done();
}

/** What a steady writer did. */
export interface WritingResult {
  readonly written: number;
  readonly errors: number;
  readonly firstError?: string;
  /** The writes' own latency, from when each was due (open loop). */
  readonly latency: LatencySummary;
  readonly writesPerSecond: number;
}

/** An acknowledged write: when its acknowledgement came here, and its cell's createdAt. */
export interface Acknowledged {
  readonly at: number;
  /** The server's clock, ms. */
  readonly createdAt: number;
}

export interface SteadyWriter {
  /** Each acknowledged write by `shard/id`. */
  readonly acknowledged: ReadonlyMap<string, Acknowledged>;
  stop(): Promise<WritingResult>;
}

/**
 * Writes a ticket's event cell `ratePerSecond` times a second (open loop: on time whether or
 * not earlier writes came back), a random ticket each, until stopped.
 */
export function startWriting(
  ticket: TicketModel,
  uuids: readonly string[],
  options: { ratePerSecond: number; bodyBytes: number },
): SteadyWriter {
  const body = payloadOf(options.bodyBytes);
  const acknowledged = new Map<string, Acknowledged>();
  const latencies = new LatencyRecorder();
  const intervalMs = 1000 / options.ratePerSecond;
  let stopped = false;
  let errors = 0;
  let firstError: string | undefined;
  const pending = new Set<Promise<void>>();
  const start = performance.now();
  let ended = start;
  const loop = (async () => {
    for (let sent = 0; !stopped; sent++) {
      const due = start + sent * intervalMs;
      const now = performance.now();
      if (due - now >= 1) await sleep(due - now);
      if (stopped) break;
      const uuid = uuids[Math.floor(Math.random() * uuids.length)]!;
      const write = ticket
        .record(uuid)
        .cell('event')
        .update(body)
        .then(
          (cell) => {
            acknowledged.set(`${cell.shard!}/${Number(cell.id)}`, {
              at: wallClockMs(),
              createdAt: cell.createdAt!.getTime(),
            });
            latencies.record(performance.now() - due);
          },
          (error: unknown) => {
            errors += 1;
            firstError ??= error instanceof Error ? error.message : String(error);
          },
        );
      const tracked = write.finally(() => pending.delete(tracked));
      pending.add(tracked);
    }
    ended = performance.now();
    await Promise.all(pending);
  })();
  return {
    acknowledged,
    async stop() {
      stopped = true;
      await loop;
      return {
        written: acknowledged.size,
        errors,
        ...(firstError === undefined ? {} : { firstError }),
        latency: latencies.summary(),
        writesPerSecond: acknowledged.size / ((ended - start) / 1000),
      };
    },
  };
}
