// A member lost without a goodbye, while cells are written at a steady rate: SIGKILLed (a
// crash), or cut off silently by the fault proxy (a host or network gone, the connection left
// open). Two member processes behind two servers split the shards; one is lost, and the figure
// is the time from the kill or the cut to the other owning every one of its shards (its
// `assigned` lines, on the same clock). After the crash, the cells both handled are counted
// against what the killed member had in flight, and against the cursors the server had
// confirmed to it.
import { setTimeout as sleep } from 'node:timers/promises';
import { GROUP_DEFAULTS } from '@shameless/server';
import { startTcpProxy } from '@shameless/testkit';
import { type Progress, secondsTask } from '../load/progress.js';
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
  handledBy,
  handledTwice,
  lastCommitted,
} from './consumerTimeline.js';

export interface TakeoverResult {
  /** From the kill (or the cut) to the last of the lost member's shards assigned to the other. */
  readonly takeoverMs: number;
  /** Shards the lost member owned. */
  readonly shards: number;
  readonly sessionTimeoutMs: number;
  readonly writing: WritingResult;
}

export interface CrashResult extends TakeoverResult {
  /** Cells handled by both members. */
  readonly twice: number;
  /**
   * The killed member's cells in flight at its death: handled (started) and not acknowledged
   * to the server, i.e. above the cursor the server handed the survivor for their shard.
   */
  readonly inFlight: number;
  /** The cells the killed member handled since the cursor last confirmed to it, shard by shard. */
  readonly sinceConfirmed: number;
  /** Cells handled twice at or below a cursor the server had confirmed to the killed member. */
  readonly belowConfirmed: number;
  /** Written cells no member handled by the end (should be none). */
  readonly unhandled: number;
}

export interface CutResult extends TakeoverResult {
  /** From the network's return to the cut member owning shards again; undefined if it did not. */
  readonly backMs: number | undefined;
}

/** The default session timeout (the SDK's and the server's), which the figures use. */
const SESSION_TIMEOUT_MS = GROUP_DEFAULTS.sessionTimeoutMs;
const SPLIT_TIMEOUT_MS = 20_000;

interface Pair {
  readonly lost: MemberProcess;
  readonly survivor: MemberProcess;
}

/**
 * Member `a` alone until it owns every shard, then `writing()` starts the writes (the group
 * reads from its start: writes before it are not its cells), then `b` until they split evenly.
 */
async function startPair(
  group: string,
  endpoints: { lost: string; survivor: string },
  shards: number,
  writing: () => void,
): Promise<Pair> {
  const start = (name: string, endpoint: string) =>
    MemberProcess.start(name, {
      endpoints: [endpoint],
      mode: 'consume',
      group,
      memberId: `${group}-${name}`,
      report: 'cells',
      options: { from: 'latest' },
    });
  const lost = await start('a', endpoints.lost);
  try {
    await waitUntil(() => lost.shards.length === shards, SPLIT_TIMEOUT_MS, 'a to own every shard');
    writing();
    const survivor = await start('b', endpoints.survivor);
    try {
      await waitUntil(
        () =>
          lost.shards.length + survivor.shards.length === shards &&
          Math.abs(lost.shards.length - survivor.shards.length) <= 1,
        SPLIT_TIMEOUT_MS,
        'an even split of the shards',
      );
    } catch (error) {
      await survivor.kill();
      throw error;
    }
    return { lost, survivor };
  } catch (error) {
    await lost.kill();
    throw error;
  }
}

/** When the survivor was last given each of `shards` after `since`; undefined while one is missing. */
function takenAt(survivor: MemberProcess, shards: readonly number[], since: number) {
  const given = new Map<number, number>();
  for (const assignment of assignments([{ name: survivor.name, lines: survivor.lines }])) {
    if (assignment.at >= since) given.set(assignment.shard, assignment.at);
  }
  return shards.every((shard) => given.has(shard))
    ? Math.max(...shards.map((shard) => given.get(shard)!))
    : undefined;
}

/**
 * A member SIGKILLed: member `a` behind `endpoints.lost`, `b` behind `endpoints.survivor`.
 * Measured: kill → `b` owns `a`'s shards; then the cells both handled.
 */
export async function measureCrash(
  ticket: TicketModel,
  uuids: readonly string[],
  endpoints: { lost: string; survivor: string },
  options: { ratePerSecond: number; bodyBytes: number; settleMs: number },
  progress: Progress,
): Promise<CrashResult> {
  let writer: SteadyWriter | undefined;
  let pair: Pair | undefined;
  try {
    pair = await startPair(
      'crash',
      endpoints,
      ticket.shards.length,
      () => (writer = startWriting(ticket, uuids, options)),
    );
    const { lost, survivor } = pair;
    // Long enough for the server to have confirmed cursors under load (about once a second).
    await sleep(options.settleMs);
    const shards = lost.shards;
    progress.note(`  SIGKILL of member a (shards ${shards.join(',')})`);
    const killedAt = wallClockMs();
    await lost.kill();
    await waitUntil(
      () => takenAt(survivor, shards, killedAt) !== undefined,
      SESSION_TIMEOUT_MS + SPLIT_TIMEOUT_MS,
      "b to own a's shards",
    );
    const takeoverMs = takenAt(survivor, shards, killedAt)! - killedAt;
    await sleep(1000);
    const writing = await writer!.stop();
    const written = [...writer!.acknowledged.keys()];
    const logs: MemberLog[] = [
      { name: 'a', lines: lost.lines, endedAt: killedAt },
      { name: 'b', lines: survivor.lines },
    ];
    await waitUntil(
      () => {
        const seen = new Set([...handledBy(logs[0]!), ...handledBy(logs[1]!)]);
        return written.every((key) => seen.has(key));
      },
      10_000,
      undefined,
    );
    const byA = handledBy(logs[0]!);
    const byB = handledBy(logs[1]!);
    const confirmed = lastCommitted(logs[0]!);
    // The cursor the server handed b for each of a's shards: what it held handled when a died.
    const handed = new Map(
      assignments([logs[1]!])
        .filter((assignment) => assignment.at >= killedAt)
        .map((assignment) => [assignment.shard, assignment.cursor]),
    );
    const twice = [...handledTwice(logs).keys()].map(parseKey);
    const mine = [...byA].map(parseKey);
    const unhandled = written.filter((key) => !byA.has(key) && !byB.has(key)).length;
    return {
      takeoverMs,
      shards: shards.length,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      writing,
      twice: twice.length,
      inFlight: mine.filter(({ shard, id }) => id > (handed.get(shard) ?? Infinity)).length,
      sinceConfirmed: mine.filter(
        ({ shard, id }) => shards.includes(shard) && id > (confirmed.get(shard) ?? 0),
      ).length,
      belowConfirmed: twice.filter(({ shard, id }) => id <= (confirmed.get(shard) ?? 0)).length,
      unhandled,
    };
  } finally {
    await writer?.stop();
    await Promise.all([pair?.lost.kill(), pair?.survivor.kill()]);
  }
}

/**
 * A member cut off silently: `a` reaches its server through the fault proxy, which starts
 * dropping every byte both ways (the connection stays open); `b` is behind `endpoints.survivor`.
 * Measured: cut → `b` owns `a`'s shards; then, the network back, how soon `a` owns shards again.
 */
export async function measureSilentCut(
  ticket: TicketModel,
  uuids: readonly string[],
  endpoints: { lost: string; survivor: string },
  options: { ratePerSecond: number; bodyBytes: number; settleMs: number },
  progress: Progress,
): Promise<CutResult> {
  const [host, port] = endpoints.lost.split(':') as [string, string];
  const proxy = await startTcpProxy({ target: { host, port: Number(port) } });
  let writer: SteadyWriter | undefined;
  let pair: Pair | undefined;
  try {
    pair = await startPair(
      'cut',
      { lost: proxy.address, survivor: endpoints.survivor },
      ticket.shards.length,
      () => (writer = startWriting(ticket, uuids, options)),
    );
    const { lost, survivor } = pair;
    await sleep(options.settleMs);
    const shards = lost.shards;
    const waiting = secondsTask(
      progress,
      `  member a cut off silently (shards ${shards.join(',')}), its session timeout running out`,
      SESSION_TIMEOUT_MS / 1000,
    );
    const cutAt = wallClockMs();
    proxy.setFaults({ blackhole: true });
    await waitUntil(
      () => takenAt(survivor, shards, cutAt) !== undefined,
      SESSION_TIMEOUT_MS + SPLIT_TIMEOUT_MS,
      "b to own a's shards",
    ).finally(() => waiting.done());
    const takeoverMs = takenAt(survivor, shards, cutAt)! - cutAt;
    // a, hearing nothing for its session timeout, takes its stream for dead; then the network
    // comes back (the dropped bytes left its connections corrupt: they are reset).
    await waitUntil(
      () => lost.shards.length === 0,
      SESSION_TIMEOUT_MS + SPLIT_TIMEOUT_MS,
      'a to drop its shards',
    );
    proxy.setFaults({});
    proxy.resetAll();
    const backAt = wallClockMs();
    await waitUntil(() => lost.shards.length > 0, 20_000, undefined);
    const again = assignments([{ name: 'a', lines: lost.lines }]).find(
      (assignment) => assignment.at >= backAt,
    );
    const writing = await writer!.stop();
    return {
      takeoverMs,
      shards: shards.length,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      writing,
      backMs: again ? again.at - backAt : undefined,
    };
  } finally {
    await writer?.stop();
    await Promise.all([pair?.lost.kill(), pair?.survivor.kill()]);
    await proxy.close();
  }
}

function parseKey(key: string): { shard: number; id: number } {
  const [shard, id] = key.split('/');
  return { shard: Number(shard), id: Number(id) };
}
