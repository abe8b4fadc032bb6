// What the consumer-group figures read off the members' lines (consumerMember.ts): who owned
// each shard when, how long each hand-over left a shard without a member working on it, how
// often each shard moved, which cells were handled twice, and the longest wait between two
// cells of a shard. Pure functions of the lines, all on one clock, so each is tested on lines
// written by hand.
import type { MemberLine } from '../subjects/consumerMember.js';

/** One member's lines (one process: a restarted member is another log). */
export interface MemberLog {
  readonly name: string;
  readonly lines: readonly MemberLine[];
  /** When it ended without saying so (SIGKILLed, cut off): the clock when that was done. */
  readonly endedAt?: number;
}

/** A shard given to a member: its `assigned` line. */
export interface Assignment {
  readonly shard: number;
  readonly member: string;
  readonly at: number;
  readonly cursor: number;
}

/** A shard going from one member to another. */
export interface HandOver {
  readonly shard: number;
  readonly from: string;
  readonly to: string;
  /** When the member before stopped starting its cells: revoked, closing, lost, or killed. */
  readonly letGoAt: number;
  readonly assignedAt: number;
  /** assignedAt − letGoAt: how long no member was starting the shard's cells. */
  readonly pauseMs: number;
}

/** Every `assigned` line of the logs, in clock order. */
export function assignments(logs: readonly MemberLog[]): Assignment[] {
  return logs
    .flatMap((log) =>
      log.lines.flatMap((line) =>
        line.t === 'assigned'
          ? [{ shard: line.shard, member: log.name, at: line.at, cursor: line.cursor }]
          : [],
      ),
    )
    .sort((a, b) => a.at - b.at);
}

/**
 * Each assignment in `[from, to]` of a shard another member held before, with when that member
 * let the shard go: the first of its `revoked` line for the shard, its `closing` line, its
 * `lost` line for the shard, `reconnecting`, or its `endedAt`, after it was given the shard.
 */
export function handOvers(logs: readonly MemberLog[], from: number, to: number): HandOver[] {
  const byName = new Map(logs.map((log) => [log.name, log]));
  const all = assignments(logs);
  const result: HandOver[] = [];
  for (const [i, assignment] of all.entries()) {
    if (assignment.at < from || assignment.at > to) continue;
    const before = all
      .slice(0, i)
      .reverse()
      .find((earlier) => earlier.shard === assignment.shard);
    if (!before || before.member === assignment.member) continue;
    const previous = byName.get(before.member)!;
    const letGoAt = letGoOf(previous, assignment.shard, before.at);
    if (letGoAt === undefined) continue;
    result.push({
      shard: assignment.shard,
      from: before.member,
      to: assignment.member,
      letGoAt,
      assignedAt: assignment.at,
      pauseMs: assignment.at - letGoAt,
    });
  }
  return result;
}

function letGoOf(log: MemberLog, shard: number, since: number): number | undefined {
  const line = log.lines.find(
    (line) =>
      line.at >= since &&
      (((line.t === 'revoked' || line.t === 'lost') && line.shard === shard) ||
        line.t === 'closing' ||
        line.t === 'reconnecting'),
  );
  const candidates = [line?.at, log.endedAt].filter(
    (at): at is number => at !== undefined && at >= since,
  );
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

/** Per shard, how many times it was assigned in `[from, to]` (each a move to a member). */
export function movesPerShard(
  logs: readonly MemberLog[],
  from: number,
  to: number,
): Map<number, number> {
  const moves = new Map<number, number>();
  for (const assignment of assignments(logs)) {
    if (assignment.at < from || assignment.at > to) continue;
    moves.set(assignment.shard, (moves.get(assignment.shard) ?? 0) + 1);
  }
  return moves;
}

/** The shards assigned to anyone in `[from, to]`. */
export function movedShards(logs: readonly MemberLog[], from: number, to: number): Set<number> {
  return new Set(movesPerShard(logs, from, to).keys());
}

/** Cells (`shard/id`) whose handler started more than once, over every log, with how often. */
export function handledTwice(logs: readonly MemberLog[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const log of logs) {
    for (const line of log.lines) {
      if (line.t !== 'h') continue;
      const key = `${line.s}/${line.i}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return new Map([...counts].filter(([, count]) => count > 1));
}

/** The cells (`shard/id`) a log's handler started. */
export function handledBy(log: MemberLog): Set<string> {
  return new Set(log.lines.flatMap((line) => (line.t === 'h' ? [`${line.s}/${line.i}`] : [])));
}

/** A member's last confirmed (committed) cursor per shard, as of its last line. */
export function lastCommitted(log: MemberLog): Map<number, number> {
  const cursors = new Map<number, number>();
  for (const line of log.lines) if (line.t === 'committed') cursors.set(line.shard, line.cursor);
  return cursors;
}

/**
 * The longest wait between two handler starts of one shard of `shards`, within `[from, to]`:
 * each gap that ends inside the window (the first from the shard's last start before it), and
 * the one still open at its end.
 */
export function longestGap(
  logs: readonly MemberLog[],
  shards: ReadonlySet<number>,
  from: number,
  to: number,
): { shard: number; gapMs: number } | undefined {
  const starts = new Map<number, number[]>();
  for (const log of logs) {
    for (const line of log.lines) {
      if (line.t !== 'h' || !shards.has(line.s) || line.at > to) continue;
      const list = starts.get(line.s);
      if (list) list.push(line.at);
      else starts.set(line.s, [line.at]);
    }
  }
  let longest: { shard: number; gapMs: number } | undefined;
  for (const shard of shards) {
    const times = (starts.get(shard) ?? []).sort((a, b) => a - b);
    const lastBefore = times.filter((at) => at < from).pop();
    const inside = times.filter((at) => at >= from);
    const edges = [lastBefore ?? from, ...inside, to];
    for (let i = 1; i < edges.length; i++) {
      const gapMs = edges[i]! - edges[i - 1]!;
      if (!longest || gapMs > longest.gapMs) longest = { shard, gapMs };
    }
  }
  return longest;
}
