// One consumer group as this server sees it, for as long as one of its members has a stream
// here. Every turn (every --group-poll-ms, and at once after a join, a hand-back or a leave) it
// reads the group's rows, computes who should own what (assignment.ts) and acts for its own
// members only: it renews their sessions, claims the free shards they should have, asks them
// to give up the shards they should not, stops them on shards another took, and writes their
// cursors. Other servers do the same for their members from the same rows, so no server is
// the group's leader and any of them may stop at any time.
import { type RowId, exactInteger } from '../base/exactInteger.js';
import { type CallScope, deadlineScope } from '../base/callScope.js';
import type { Logger } from '../base/logger.js';
import type { StoreLayout } from '../model/layout.js';
import type { GroupKey, GroupShardRow } from '../mysql/sql/groupTables.js';
import { assignShards } from './assignment.js';
import type { CursorCommit, GroupStore } from './groupStore.js';
import type { MemberSession } from './memberSession.js';

/** A turn's statements must end within this long, or the turn fails (and the next one reads afresh). */
const TURN_DEADLINE_MS = 10_000;
/** How often the lag of this server's members' shards is read (for metrics). */
const LAG_EVERY_MS = 5000;

/** A shard's lag as last read for metrics: cells past its written cursor. */
export interface ShardLag {
  readonly shard: number;
  readonly lag: number;
}

export class GroupCoordinator {
  /** This server's members of the group, by member id. */
  private readonly sessions = new Map<string, MemberSession>();
  private timer: NodeJS.Timeout | undefined;
  private turn: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private lagReadAt = 0;
  private lags: ShardLag[] = [];

  constructor(
    readonly group: GroupKey,
    private readonly layout: StoreLayout,
    private readonly store: GroupStore,
    private readonly pollMs: number,
    private readonly logger: Logger,
    /** Lag of the shards this server's members own, read every few seconds. */
    private readonly readLag: (
      scope: CallScope,
      shards: readonly { shard: number; cursor: RowId }[],
    ) => Promise<ShardLag[]>,
    /** Told when the last member here is gone: the coordinator is no longer needed. */
    private readonly idle: () => void,
  ) {}

  get members(): number {
    return this.sessions.size;
  }

  shardLags(): readonly ShardLag[] {
    return this.lags;
  }

  /**
   * A member's session joins this server's members; one of the same id already here (its
   * earlier stream) is ended, as a join on another server would end it.
   */
  add(session: MemberSession): void {
    this.sessions.get(session.memberId)?.endReplaced('another stream of this member joined');
    this.sessions.set(session.memberId, session);
    this.poke();
  }

  remove(session: MemberSession): void {
    if (this.sessions.get(session.memberId) === session) this.sessions.delete(session.memberId);
    if (this.sessions.size === 0) this.stop();
  }

  /** A turn as soon as the one running (if any) is over. */
  poke(): void {
    if (this.stopped) return;
    if (this.turn) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.turn = this.runTurn().finally(() => {
      this.turn = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.poke();
      } else this.schedule();
    });
  }

  /** Ends every member's session here (the server stops): cursors written, shards handed back. */
  async close(): Promise<void> {
    const sessions = [...this.sessions.values()];
    await Promise.all(
      sessions.map((session) => session.close({ countLost: false, reason: 'shutdown' })),
    );
    this.stop();
  }

  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.idle();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.poke(), this.pollMs);
  }

  private async runTurn(): Promise<void> {
    try {
      // The turn's statements serve the group, not the call that poked it.
      await this.takeTurn(this.store.for(deadlineScope(Date.now() + TURN_DEADLINE_MS)));
    } catch (error) {
      this.logger.warn('a consumer group turn failed; the next one reads afresh', {
        model: this.group.model,
        group: this.group.group,
        error: (error as Error).message,
      });
    }
  }

  private async takeTurn(store: GroupStore): Promise<void> {
    const now = Date.now();
    for (const session of [...this.sessions.values()]) {
      if (session.isOver) this.remove(session);
      else if (session.silentForMs(now) > session.settings.sessionTimeoutMs) {
        // Silent past its timeout (its host gone, its network cut): its shards go to others now.
        await session.close({ countLost: true, reason: 'silent' });
        this.remove(session);
      }
    }
    if (this.stopped) return;
    await this.renewSessions(store, now);

    const state = await store.readState(this.group);
    const live = new Set(state.members.filter((member) => member.alive).map((m) => m.memberId));
    const rows = new Map(state.shards.map((row) => [row.shard, row]));
    const owners = new Map(
      state.shards.map((row) => [
        row.shard,
        row.owner !== undefined && live.has(row.owner) ? row.owner : undefined,
      ]),
    );
    const shards = Array.from({ length: this.layout.shardsCount }, (_, shard) => shard);
    const target = assignShards(shards, owners, [...live]);

    for (const session of this.sessions.values()) {
      let share = 0;
      for (const member of target.values()) if (member === session.memberId) share += 1;
      session.expectShards(share);
      // A member whose row is gone (expired, removed) has no say in the assignment: it waits.
      if (!live.has(session.memberId)) continue;
      for (const { shard, epoch, revoking } of session.ownedShards()) {
        const row = rows.get(shard);
        if (!row || row.owner !== session.memberId || row.epoch !== epoch) {
          session.lose(shard, 'another member owns the shard now');
        } else if (target.get(shard) !== session.memberId && !revoking) {
          session.revoke(shard);
        }
      }
      await session.revocationOverdue(now);
    }
    await this.claim(store, target, rows, live);

    for (const replay of groupReplays(state.replays)) {
      const session = this.ownerHere(replay.shard);
      if (session) await session.replay(replay.shard, replay.ids);
    }
    await this.commitDue(store, Date.now());
    await this.readLagIfDue(store.scope, Date.now());
    for (const session of this.sessions.values()) session.heartbeatIfQuiet(Date.now());
  }

  private async renewSessions(store: GroupStore, now: number): Promise<void> {
    const due = [...this.sessions.values()].filter((session) => session.renewalDue(now));
    await Promise.all(
      due.map(async (session) => {
        const alive = await store.renew(
          this.group,
          session.memberId,
          session.session,
          session.sessionLeftMs(now),
        );
        if (alive) session.renewed(now);
        else {
          session.endReplaced(
            'the session ended without this stream: it expired, or the member joined on another stream; join again',
          );
          this.remove(session);
        }
      }),
    );
  }

  /** Claims for this server's members the shards they should have that are free. */
  private async claim(
    store: GroupStore,
    target: ReadonlyMap<number, string>,
    rows: ReadonlyMap<number, GroupShardRow>,
    live: ReadonlySet<string>,
  ): Promise<void> {
    const claims: { session: MemberSession; row: GroupShardRow }[] = [];
    for (const [shard, member] of target) {
      const session = this.sessions.get(member);
      const row = rows.get(shard);
      // A session over since the turn read the rows (its member left, its stream closed), or
      // handing the shard back (released after a revocation), is writing cursors under the
      // epochs the turn read: a claim would fence those writes out, taking the shard "from its
      // earlier session" that is this one. The next turn reads the row as written.
      if (!session || session.isOver || !row || session.owns(shard)) continue;
      if (session.isHandingBack(shard)) continue;
      // Free: no owner, an owner whose session is over, or this member's own earlier session.
      const free = row.owner === undefined || !live.has(row.owner) || row.owner === member;
      if (free) claims.push({ session, row });
    }
    await Promise.all(
      claims.map(async ({ session, row }) => {
        const claimed = await store.claim(this.group, row.shard, session.memberId, row.epoch);
        if (!claimed) return; // Another claim came first: the next turn reads who.
        const cells = await store.shardCells(this.group, row.shard, claimed.cursor);
        if (!session.assign(claimed, cells)) {
          // The session ended meanwhile: the shard goes back at once.
          await store.commit(this.group, [
            {
              shard: row.shard,
              memberId: session.memberId,
              epoch: claimed.epoch,
              cursor: claimed.cursor,
              release: true,
              forgetFailures: false,
            },
          ]);
        }
      }),
    );
  }

  private async commitDue(store: GroupStore, now: number): Promise<void> {
    const bySession = [...this.sessions.values()].map(
      (session) => [session, session.commitsDue(now)] as const,
    );
    const commits: CursorCommit[] = bySession.flatMap(([, due]) => due);
    if (commits.length === 0) return;
    const kept = await store.commit(this.group, commits);
    for (const [session, due] of bySession) session.committed(due, kept);
  }

  private async readLagIfDue(scope: CallScope, now: number): Promise<void> {
    if (now - this.lagReadAt < LAG_EVERY_MS) return;
    this.lagReadAt = now;
    const shards = [...this.sessions.values()].flatMap((session) =>
      session.ownedShards().map(({ shard, committed }) => ({ shard, cursor: committed })),
    );
    this.lags = await this.readLag(scope, shards);
  }

  private ownerHere(shard: number): MemberSession | undefined {
    for (const session of this.sessions.values()) if (session.owns(shard)) return session;
    return undefined;
  }
}

function groupReplays(
  rows: readonly { shard: number; id: RowId }[],
): { shard: number; ids: RowId[] }[] {
  const byShard = new Map<number, RowId[]>();
  for (const { shard, id } of rows) {
    const ids = byShard.get(shard);
    if (ids) ids.push(exactInteger(id));
    else byShard.set(shard, [exactInteger(id)]);
  }
  return [...byShard].map(([shard, ids]) => ({ shard, ids }));
}
