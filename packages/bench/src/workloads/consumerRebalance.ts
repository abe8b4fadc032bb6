// Members joining and leaving while cells are written at a steady rate: two member processes
// (behind two servers) split the shards, a third joins, then each of the three is restarted in
// turn as a rolling deploy does it (SIGTERM: the member closes gracefully and exits; a new
// process takes its place behind the same server). Read off their lines: whether the shards
// that did not move kept being delivered while the third joined (their longest wait between
// two cells, beside the same shards' longest wait just before), how long each moved shard
// waited for its next owner, how many times each shard moved in each restart, and whether any
// cell was handled twice.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Progress } from '../load/progress.js';
import { waitUntil } from '../load/waitUntil.js';
import { MemberProcess, wallClockMs } from '../subjects/consumerMember.js';
import {
  type SteadyWriter,
  type TicketModel,
  type WritingResult,
  startWriting,
} from './consumerLoad.js';
import {
  type MemberLog,
  assignments,
  handOvers,
  handledBy,
  handledTwice,
  longestGap,
  movedShards,
  movesPerShard,
} from './consumerTimeline.js';

export interface RebalanceResult {
  /** From the third member's join to its last shard assigned. */
  readonly joinMs: number;
  readonly moved: readonly number[];
  /** Shards that did not move: their longest wait between two cells during the join... */
  readonly unmovedGapMs: number;
  /** ...and in as long a window just before it. */
  readonly unmovedGapBeforeMs: number;
  /** The window both gaps were read in, ms. */
  readonly windowMs: number;
  /** The longest a moved shard waited for its next owner (revoked → assigned). */
  readonly movedPauseMs: number;
}

export interface RestartStep {
  /** The member restarted (its first process's name). */
  readonly member: string;
  /** Its shards' longest wait for another owner after it began to close (closing → assigned). */
  readonly leaveHandOverMs: number;
  /** The longest wait of a shard given to its new process (revoked → assigned). */
  readonly joinHandOverMs: number;
  /** The most times one shard was assigned during the step, and how many shards moved. */
  readonly maxMoves: number;
  readonly moved: number;
  /** Whether the member's process closed and exited by itself (else it was killed). */
  readonly graceful: boolean;
  readonly stepMs: number;
}

export interface RollingRestartResult {
  readonly steps: readonly RestartStep[];
  /** Cells handled more than once over the whole run, the join included (no member crashed). */
  readonly twice: number;
  /** Written cells no member handled by the end (should be none). */
  readonly unhandled: number;
  readonly writing: WritingResult;
}

const BALANCE_TIMEOUT_MS = 20_000;
/** A graceful close that takes longer than this is cut short (and the step says so). */
const CLOSE_TIMEOUT_MS = 15_000;

export async function measureRebalanceAndRestarts(
  ticket: TicketModel,
  uuids: readonly string[],
  endpoints: readonly [string, string],
  options: { ratePerSecond: number; bodyBytes: number; windowMs: number; settleMs: number },
  progress: Progress,
): Promise<{ rebalance: RebalanceResult; restarts: RollingRestartResult }> {
  const shardsCount = ticket.shards.length;
  const all: MemberProcess[] = [];
  const logs = (): MemberLog[] => all.map((member) => ({ name: member.name, lines: member.lines }));
  let current: MemberProcess[] = [];
  const start = async (name: string, endpoint: string) => {
    const member = await MemberProcess.start(name, {
      endpoints: [endpoint],
      mode: 'consume',
      group: 'rolling',
      memberId: `rolling-${name}`,
      report: 'cells',
      options: { from: 'latest' },
    });
    all.push(member);
    current.push(member);
    return member;
  };
  const endpointOf = new Map<string, string>();
  const balanced = () => {
    const owned = current.map((member) => member.shards);
    const total = owned.reduce((sum, shards) => sum + shards.length, 0);
    const low = Math.floor(shardsCount / current.length);
    return (
      total === shardsCount &&
      new Set(owned.flat()).size === shardsCount &&
      owned.every((shards) => shards.length >= low && shards.length <= low + 1)
    );
  };
  let writer: SteadyWriter | undefined;
  try {
    for (const [name, endpoint] of [
      ['a', endpoints[0]],
      ['b', endpoints[1]],
    ] as const) {
      endpointOf.set(name, endpoint);
      await start(name, endpoint);
      await waitUntil(balanced, BALANCE_TIMEOUT_MS, `member ${name} in a balanced split`);
      // The group reads from its start: the writes begin once it exists, with every shard owned.
      writer ??= startWriting(ticket, uuids, options);
    }
    await sleep(options.windowMs);

    // A third member joins.
    progress.note(`  member c joins members a and b (${options.ratePerSecond} writes/s)`);
    endpointOf.set('c', endpoints[0]);
    const c = await start('c', endpoints[0]);
    await waitUntil(balanced, BALANCE_TIMEOUT_MS, 'a balanced split of three');
    const joinedAt = c.lines.find((line) => line.t === 'joined')!.at;
    const lastAssigned = Math.max(
      ...assignments(logs())
        .filter((assignment) => assignment.at >= joinedAt)
        .map((assignment) => assignment.at),
    );
    await sleep(Math.max(0, joinedAt + options.windowMs - wallClockMs()) + 100);
    const windowMs = Math.max(options.windowMs, lastAssigned - joinedAt + 200);
    const windowEnd = joinedAt + windowMs;
    const moved = movedShards(logs(), joinedAt, windowEnd);
    const unmoved = new Set(
      Array.from({ length: shardsCount }, (_, shard) => shard).filter((shard) => !moved.has(shard)),
    );
    const rebalance: RebalanceResult = {
      joinMs: lastAssigned - joinedAt,
      moved: [...moved].sort((x, y) => x - y),
      unmovedGapMs: longestGap(logs(), unmoved, joinedAt, windowEnd)?.gapMs ?? Number.NaN,
      unmovedGapBeforeMs:
        longestGap(logs(), unmoved, joinedAt - windowMs, joinedAt)?.gapMs ?? Number.NaN,
      windowMs,
      movedPauseMs: largest(
        handOvers(logs(), joinedAt, windowEnd).map((handOver) => handOver.pauseMs),
      ),
    };

    // The rolling restart: each member in turn closes, exits and comes back as a new process.
    const steps: RestartStep[] = [];
    for (const name of ['a', 'b', 'c']) {
      const leaving = current.find((member) => member.name === name)!;
      const startedAt = wallClockMs();
      progress.note(
        `  rolling restart: member ${name} closes (SIGTERM), a new process replaces it`,
      );
      const graceful = await leaving.stop(CLOSE_TIMEOUT_MS);
      current = current.filter((member) => member !== leaving);
      await waitUntil(balanced, BALANCE_TIMEOUT_MS, `the others to own ${name}'s shards`);
      const next = await start(`${name}2`, endpointOf.get(name)!);
      await waitUntil(balanced, BALANCE_TIMEOUT_MS, `${next.name} in a balanced split`);
      await sleep(options.settleMs);
      const endedAt = wallClockMs();
      const moves = handOvers(logs(), startedAt, endedAt);
      const perShard = movesPerShard(logs(), startedAt, endedAt);
      steps.push({
        member: name,
        leaveHandOverMs: largest(
          moves.filter((move) => move.from === name).map((move) => move.pauseMs),
        ),
        joinHandOverMs: largest(
          moves.filter((move) => move.to === next.name).map((move) => move.pauseMs),
        ),
        maxMoves: Math.max(0, ...perShard.values()),
        moved: perShard.size,
        graceful,
        stepMs: endedAt - startedAt,
      });
    }
    const writing = await writer!.stop();
    const written = [...writer!.acknowledged.keys()];
    const handledAll = () => new Set(logs().flatMap((log) => [...handledBy(log)]));
    await waitUntil(
      () => {
        const seen = handledAll();
        return written.every((key) => seen.has(key));
      },
      10_000,
      undefined,
    );
    const seen = handledAll();
    return {
      rebalance,
      restarts: {
        steps,
        twice: handledTwice(logs()).size,
        unhandled: written.filter((key) => !seen.has(key)).length,
        writing,
      },
    };
  } finally {
    await writer?.stop();
    await Promise.all(all.map((member) => member.kill()));
  }
}

/** The largest of `values`; NaN when there are none. */
function largest(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.max(...values);
}
