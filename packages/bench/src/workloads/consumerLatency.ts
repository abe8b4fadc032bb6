// Commit → handler: writes at a steady rate through the SDK (this process) while one member
// process owns every shard, and, beside it in the same window, an `Each` follow in a process of
// the same kind reading the same writes. A cell's latency is from its `createdAt` (the server's
// clock, set as the write is planned, before its commit: an upper bound of commit → handler)
// to its handler's start; and, told apart, from the write's acknowledgement in this process to
// the handler's start (0 when the handler started first). Every process reads the same clock.
import { setTimeout as sleep } from 'node:timers/promises';
import { LatencyRecorder, type LatencySummary } from '../load/latency.js';
import { type Progress, secondsTask } from '../load/progress.js';
import { waitUntil } from '../load/waitUntil.js';
import { MemberProcess } from '../subjects/consumerMember.js';
import { type TicketModel, type WritingResult, startWriting } from './consumerLoad.js';

export interface DeliveryLatency {
  /** createdAt → handler start (or, for the Each, → the cell's arrival). */
  readonly fromCreatedAt: LatencySummary;
  /** acknowledgement → handler start, 0 when the handler came first. */
  readonly fromAcknowledgement: LatencySummary;
  /** Acknowledged writes of the window the reader had not had when it ended. */
  readonly missing: number;
}

export interface LatencyResult {
  readonly writing: WritingResult;
  readonly windowMs: number;
  readonly member: DeliveryLatency;
  /** The same writes through an Each follow, in the same window. */
  readonly each: DeliveryLatency;
}

/** How long the readers get to catch up with the last acknowledged writes. */
const DRAIN_MS = 5000;

export async function measureDeliveryLatency(
  ticket: TicketModel,
  uuids: readonly string[],
  endpoint: string,
  options: { ratePerSecond: number; warmupMs: number; durationMs: number; bodyBytes: number },
  progress: Progress,
): Promise<LatencyResult> {
  const member = await MemberProcess.start('latency member', {
    endpoints: [endpoint],
    mode: 'consume',
    group: 'latency',
    report: 'cells',
    options: { from: 'latest' },
  });
  const each = await MemberProcess.start('latency Each', {
    endpoints: [endpoint],
    mode: 'each',
    follow: true,
    report: 'cells',
  });
  try {
    await waitUntil(() => member.shards.length === ticket.shards.length, 15_000, 'every shard');
    const writer = startWriting(ticket, uuids, options);
    await sleep(options.warmupMs);
    const from = Date.now();
    const window = secondsTask(
      progress,
      `  ${options.ratePerSecond} writes/s, measured after ${options.warmupMs} ms`,
      options.durationMs / 1000,
    );
    await sleep(options.durationMs);
    const to = Date.now();
    window.done();
    const writing = await writer.stop();
    // The window's writes: created (the server's clock) between its edges.
    const inWindow = (createdAt: number) => createdAt >= from && createdAt < to;
    const expected = [...writer.acknowledged].filter(([, write]) => inWindow(write.createdAt));
    await waitUntil(
      () => [member, each].every((reader) => missing(reader, expected) === 0),
      DRAIN_MS,
      undefined,
    );
    const latencyOf = (reader: MemberProcess): DeliveryLatency => {
      const fromCreatedAt = new LatencyRecorder();
      const fromAcknowledgement = new LatencyRecorder();
      const seen = new Set<string>();
      for (const line of reader.lines) {
        if (line.t !== 'h' || !inWindow(line.c)) continue;
        const key = `${line.s}/${line.i}`;
        if (seen.has(key)) continue;
        seen.add(key);
        fromCreatedAt.record(line.at - line.c);
        const write = writer.acknowledged.get(key);
        if (write) fromAcknowledgement.record(Math.max(0, line.at - write.at));
      }
      return {
        fromCreatedAt: fromCreatedAt.summary(),
        fromAcknowledgement: fromAcknowledgement.summary(),
        missing: missing(reader, expected),
      };
    };
    return {
      writing,
      windowMs: to - from,
      member: latencyOf(member),
      each: latencyOf(each),
    };
  } finally {
    await Promise.all([member.kill(), each.kill()]);
  }
}

/** How many of `expected` (by `shard/id`) the reader has not had. */
function missing(reader: MemberProcess, expected: readonly (readonly [string, unknown])[]): number {
  const seen = new Set(
    reader.lines.flatMap((line) => (line.t === 'h' ? [`${line.s}/${line.i}`] : [])),
  );
  return expected.filter(([key]) => !seen.has(key)).length;
}
