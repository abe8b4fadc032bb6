// One member of a consumer group on this server, for as long as its stream is open: the shards
// it owns, each fed from the shard's log in id order (the log's own follow, log/shardLog.ts),
// what it has been delivered and answered, and what its answers write. Its coordinator
// (groupCoordinator.ts) decides which shards it claims, gives up or has lost, and when its
// cursors are written; the session carries those decisions out and tells its member.
import { randomUUID } from 'node:crypto';
import { type RowId, exactInteger } from '../base/exactInteger.js';
import { ConflictError, InvalidArgumentError, UnavailableError } from '../base/errors.js';
import type { CallScope } from '../base/callScope.js';
import type { Logger } from '../base/logger.js';
import type { CompiledModel } from '../model/model.js';
import type { GroupCellRow, GroupKey, GroupShardRow } from '../mysql/sql/groupTables.js';
import type { ShardLog } from '../log/shardLog.js';
import { type Delivery, type GroupEvent, GroupOutbox } from './groupEvents.js';
import type { CursorCommit, GroupStore } from './groupStore.js';
import { ShardProgress } from './shardProgress.js';

/** A member's settings, checked and with their defaults. */
export interface MemberSettings {
  readonly memberId: string;
  /** Cell names the member takes; every cell when undefined. */
  readonly cells: ReadonlySet<string> | undefined;
  readonly maxInFlight: number;
  readonly perShardInFlight: number;
  readonly maxDeliveries: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly peer: string;
}

/** What a group's members on this server have done, for its metrics. */
export interface GroupTally {
  /** Cells delivered (redeliveries and replays included). */
  delivered: number;
  /** Deliveries whose handling failed. */
  failed: number;
  /** Cells parked. */
  parked: number;
}

/** Why a session ended without its member leaving: its stream ends ABORTED (join again). */
export class SessionEndedError extends ConflictError {}

/** Bytes of cells a session holds for its member before its feeds wait. */
const OUTBOX_BYTES = 256 * 1024;
/**
 * Bytes of cells the feeds of a session hold, all its shards together: read ahead of the
 * outbox, and handed over by commits through this server. Each shard's feed gets its share of
 * both (and holds at least one cell).
 */
const FEEDS_READ_AHEAD_BYTES = 256 * 1024;
const FEEDS_HANDED_OVER_BYTES = 64 * 1024;
/** What one member's session holds at most besides its stream's own buffer. */
export const SESSION_CELLS_HELD_BYTES =
  OUTBOX_BYTES + FEEDS_READ_AHEAD_BYTES + FEEDS_HANDED_OVER_BYTES;
/** Cursors of busy shards are written at most this often (and on every hand-over). */
export const COMMIT_EVERY_MS = 1000;
/** Redelivery after a failure: this much, doubled per attempt, at most REDELIVERY_MAX_MS. */
const REDELIVERY_BASE_MS = 100;
const REDELIVERY_MAX_MS = 10_000;
/** A feed whose reads failed (a partition down) reads again after this long. */
const FEED_RETRY_MS = 1000;

/** A shard the member owns, under one epoch. */
interface OwnedShard {
  readonly shard: number;
  readonly epoch: RowId;
  readonly progress: ShardProgress;
  /** The cursor as last written. */
  committed: RowId;
  lastCommitAt: number;
  /** Stops the shard's feed. */
  readonly feed: AbortController;
  /** The last id the feed read: where it starts again after a failed read. */
  readUpTo: RowId;
  /** Since when the member has been asked to give the shard up. */
  revokedAt: number | undefined;
  /** Failed deliveries so far of cells past the cursor, by id. */
  readonly attempts: Map<string, number>;
  /** Cells past the cursor already parked: passed over when read. */
  readonly parked: Set<string>;
  /** Parked cells being delivered again, by id. */
  readonly replaying: Set<string>;
  /** Rows of failed deliveries exist at or below what the cursor will reach. */
  failuresRecorded: boolean;
  readonly timers: Set<NodeJS.Timeout>;
  /** Wakes the feed when the member answered some of this shard's cells. */
  wake: (() => void) | undefined;
}

export class MemberSession {
  readonly session = randomUUID();
  private readonly owned = new Map<number, OwnedShard>();
  /** Shards released and not yet written back: their rows still name this member. */
  private readonly handingBack = new Set<number>();
  private readonly outbox = new GroupOutbox(OUTBOX_BYTES);
  /** Aborted when the session ends, whatever ended it: stops every feed. */
  private readonly ended = new AbortController();
  /**
   * What the session's statements serve: the session, not the call that joined it or the turn
   * that assigned it a shard. Bounded by its end only (reads are not sent once it has ended).
   */
  private readonly scope: CallScope = { deadline: Infinity, cancellation: this.ended.signal };
  private readonly store: GroupStore;
  private inFlight = 0;
  /** How many shards the coordinator means the member to own: their shares are sized by it. */
  private expectedShards = 1;
  private lastHeardAt = Date.now();
  private lastRenewedAt = Date.now();
  private closing: Promise<void> | undefined;
  private settle!: () => void;
  /** Settles once the session is over and its rows written: its close, or its replacement. */
  readonly done = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    readonly group: GroupKey,
    private readonly model: CompiledModel,
    readonly settings: MemberSettings,
    store: GroupStore,
    private readonly log: ShardLog,
    private readonly logger: Logger,
    /** Asks the coordinator for a turn soon (a shard was handed back, the member left). */
    private readonly poke: () => void,
    /** The group's counts on this server, which the session adds to. */
    private readonly tally: GroupTally = { delivered: 0, failed: 0, parked: 0 },
  ) {
    this.store = store.for(this.scope);
    this.outbox.push({
      kind: 'joined',
      memberId: settings.memberId,
      sessionTimeoutMs: settings.sessionTimeoutMs,
      heartbeatIntervalMs: settings.heartbeatIntervalMs,
    });
  }

  get memberId(): string {
    return this.settings.memberId;
  }

  /** What to tell the member, in order, until the session ends. */
  events(signal: AbortSignal): AsyncGenerator<GroupEvent> {
    return this.outbox.events(signal);
  }

  get isOver(): boolean {
    return this.ended.signal.aborted;
  }

  owns(shard: number): boolean {
    return this.owned.has(shard);
  }

  /**
   * Whether the shard's cursor is being written as the member hands it back: a turn that read
   * its row before that write sees it as this member's, and a claim would fence the write out.
   */
  isHandingBack(shard: number): boolean {
    return this.handingBack.has(shard);
  }

  ownedShards(): { shard: number; epoch: RowId; committed: RowId; revoking: boolean }[] {
    return [...this.owned.values()].map((owned) => ({
      shard: owned.shard,
      epoch: owned.epoch,
      committed: owned.committed,
      revoking: owned.revokedAt !== undefined,
    }));
  }

  // ---- what the member says ----

  /** Any message of the member: it is alive. */
  heard(): void {
    this.lastHeardAt = Date.now();
  }

  silentForMs(now: number): number {
    return now - this.lastHeardAt;
  }

  /** How long the session lasts without news, from now. */
  sessionLeftMs(now: number): number {
    return this.settings.sessionTimeoutMs - this.silentForMs(now);
  }

  renewalDue(now: number): boolean {
    return now - this.lastRenewedAt >= this.settings.heartbeatIntervalMs;
  }

  renewed(at: number): void {
    this.lastRenewedAt = at;
  }

  acknowledge(shard: number, epoch: RowId, ids: readonly RowId[]): void {
    const owned = this.ownedUnder(shard, epoch);
    if (!owned) return;
    let answered = 0;
    for (const id of ids) {
      const key = String(id);
      if (owned.replaying.delete(key)) {
        void this.replayed(owned, id);
        continue;
      }
      if (owned.progress.handle(id)) answered += 1;
    }
    this.answered(owned, answered);
  }

  /** A delivery failed: counted where it survives the member, then redelivered or parked. */
  async failed(shard: number, epoch: RowId, id: RowId, error: string): Promise<void> {
    const owned = this.ownedUnder(shard, epoch);
    const key = String(id);
    if (!owned || (!owned.progress.awaits(id) && !owned.replaying.has(key))) return;
    this.tally.failed += 1;
    let attempts: number;
    try {
      attempts = await this.store.countFailure(this.group, shard, id, error);
    } catch (failure) {
      // Not counted (its partition did not answer): delivered again all the same.
      this.logger.warn('a failed delivery could not be counted', {
        group: this.group.group,
        shard,
        error: (failure as Error).message,
      });
      attempts = (owned.attempts.get(key) ?? 0) + 1;
    }
    if (this.owned.get(shard) !== owned) return;
    owned.attempts.set(key, attempts);
    owned.failuresRecorded = true;
    if (attempts >= this.settings.maxDeliveries) {
      await this.parkAt(owned, id, attempts, error);
      return;
    }
    const delay = Math.min(REDELIVERY_MAX_MS, REDELIVERY_BASE_MS * 2 ** (attempts - 1));
    const timer = setTimeout(() => {
      owned.timers.delete(timer);
      void this.redeliver(owned, id, attempts + 1);
    }, delay);
    owned.timers.add(timer);
  }

  /** The member parks a delivered cell itself. */
  async park(shard: number, epoch: RowId, id: RowId, reason: string): Promise<void> {
    const owned = this.ownedUnder(shard, epoch);
    const key = String(id);
    if (!owned || (!owned.progress.awaits(id) && !owned.replaying.has(key))) return;
    await this.parkAt(owned, id, (owned.attempts.get(key) ?? 0) + 1, reason);
  }

  /** The member gave back a shard it was asked for: its cursor is written and it is free. */
  released(shard: number, epoch: RowId): Promise<void> {
    const owned = this.ownedUnder(shard, epoch);
    if (!owned) return Promise.resolve();
    if (owned.revokedAt === undefined) {
      throw new InvalidArgumentError(
        'released.shard',
        `shard ${shard} was not revoked: release a shard only when asked (ShardRevoked)`,
      );
    }
    return this.handBack(owned);
  }

  /**
   * The member leaves: it answered everything it started. Cursors written, shards handed
   * back, the member's row gone; then GroupLeft, and the session is over.
   */
  async leave(): Promise<void> {
    await this.close({ countLost: false, reason: 'left' });
  }

  // ---- what the coordinator decides ----

  /**
   * How many shards the member is to own once the claims under way are made: the shards it
   * owns already share the cells in flight with those still to come, so that the first shard
   * claimed does not take every one of them before the others arrive.
   */
  expectShards(count: number): void {
    const before = this.expectedShards;
    this.expectedShards = Math.max(1, count);
    if (this.expectedShards < before) for (const owned of this.owned.values()) owned.wake?.();
  }

  /** Takes a shard just claimed, with its failed and parked cells past the cursor. */
  assign(row: GroupShardRow, cells: readonly GroupCellRow[]): boolean {
    if (this.isOver || this.owned.has(row.shard)) return false;
    const owned: OwnedShard = {
      shard: row.shard,
      epoch: row.epoch,
      progress: new ShardProgress(row.cursor),
      committed: row.cursor,
      lastCommitAt: Date.now(),
      feed: new AbortController(),
      readUpTo: row.cursor,
      revokedAt: undefined,
      attempts: new Map(),
      parked: new Set(),
      replaying: new Set(),
      failuresRecorded: false,
      timers: new Set(),
      wake: undefined,
    };
    for (const cell of cells) {
      const key = String(cell.id);
      if (cell.parkedAt) owned.parked.add(key);
      else {
        owned.attempts.set(key, cell.attempts);
        owned.failuresRecorded = true;
      }
    }
    this.owned.set(row.shard, owned);
    this.outbox.push({ kind: 'assigned', shard: row.shard, epoch: row.epoch, cursor: row.cursor });
    for (const other of this.owned.values()) other.wake?.();
    void this.feed(owned);
    return true;
  }

  /** Asks the member to give a shard up: it stops being fed and answers ShardReleased. */
  revoke(shard: number): void {
    const owned = this.owned.get(shard);
    if (!owned || owned.revokedAt !== undefined) return;
    owned.revokedAt = Date.now();
    this.stopFeeding(owned);
    this.outbox.push({ kind: 'revoked', shard, epoch: owned.epoch });
  }

  /** A revocation unanswered for the session timeout: the shard is handed back without the member. */
  async revocationOverdue(now: number): Promise<void> {
    for (const owned of [...this.owned.values()]) {
      if (owned.revokedAt === undefined) continue;
      if (now - owned.revokedAt < this.settings.sessionTimeoutMs) continue;
      this.drop(owned, 'the member did not release the shard within its session timeout');
      await this.commitSafely([this.commitOf(owned, true)]);
      this.poke();
    }
  }

  /** The shard is another's now (its row names another owner or epoch): stop at once. */
  lose(shard: number, reason: string): void {
    const owned = this.owned.get(shard);
    if (owned) this.drop(owned, reason);
  }

  /** Delivers parked cells again, as asked (those not already on their way). */
  async replay(shard: number, ids: readonly RowId[]): Promise<void> {
    const owned = this.owned.get(shard);
    if (!owned || owned.revokedAt !== undefined) return;
    const fresh = ids.filter((id) => !owned.replaying.has(String(id)));
    if (fresh.length === 0) return;
    for (const id of fresh) owned.replaying.add(String(id));
    const cells = await this.store.readCells(this.model, shard, fresh);
    if (this.owned.get(shard) !== owned) return;
    const found = new Set(cells.map((cell) => String(cell.id)));
    for (const cell of cells) {
      this.tally.delivered += 1;
      this.outbox.deliver({ cell, epoch: owned.epoch, attempt: 1, replay: true });
    }
    // A parked cell whose row is gone from its table cannot be delivered: it stays parked.
    for (const id of fresh) if (!found.has(String(id))) owned.replaying.delete(String(id));
  }

  /** The cursor writes due: busy shards about once a second. */
  commitsDue(now: number): CursorCommit[] {
    const due: CursorCommit[] = [];
    for (const owned of this.owned.values()) {
      if (owned.progress.handledUpTo <= owned.committed) continue;
      if (now - owned.lastCommitAt < COMMIT_EVERY_MS) continue;
      due.push(this.commitOf(owned, false));
    }
    return due;
  }

  /** What the coordinator's cursor writes came to: confirmed to the member, or the shard lost. */
  committed(commits: readonly CursorCommit[], kept: ReadonlySet<number>): void {
    for (const commit of commits) {
      const owned = this.owned.get(commit.shard);
      if (!owned || owned.epoch !== commit.epoch) continue;
      if (!kept.has(commit.shard)) {
        this.drop(owned, 'another member owns the shard now');
        continue;
      }
      this.confirm(owned, commit);
    }
  }

  heartbeatIfQuiet(now: number): void {
    if (now - this.outbox.lastQueuedAt >= this.settings.heartbeatIntervalMs) {
      this.outbox.push({ kind: 'heartbeat', at: new Date(now) });
    }
  }

  /**
   * Ends the session without its member leaving (its stream closed, it fell silent, the server
   * stops): what it answered is written and its shards are handed back at once. With
   * `countLost`, the cells it was holding count as delivered (a cell that kills its members is
   * parked in the end).
   */
  close(how: {
    countLost: boolean;
    reason: 'left' | 'closed' | 'silent' | 'shutdown';
  }): Promise<void> {
    this.closing ??= this.closeOnce(how);
    return this.closing;
  }

  /**
   * Another stream of the member joined, or the session expired before its server renewed
   * it: stop at once, writing nothing (its shards are the new session's or the group's now).
   */
  endReplaced(reason: string): void {
    if (this.isOver) return;
    for (const owned of this.owned.values()) this.stopFeeding(owned);
    this.owned.clear();
    this.ended.abort();
    this.outbox.fail(new SessionEndedError(reason));
    this.settle();
  }

  // ---- inside ----

  private async closeOnce(how: {
    countLost: boolean;
    reason: 'left' | 'closed' | 'silent' | 'shutdown';
  }): Promise<void> {
    if (this.isOver) return;
    const owned = [...this.owned.values()];
    for (const shard of owned) this.stopFeeding(shard);
    this.owned.clear();
    this.ended.abort();
    const commits = owned.map((shard) => this.commitOf(shard, true));
    let kept = new Set<number>();
    try {
      if (how.countLost) {
        const held = owned.flatMap((shard) =>
          shard.progress
            .firstOutstanding(this.settings.perShardInFlight)
            .map((id) => ({ shard: shard.shard, id })),
        );
        if (held.length > 0) {
          await this.store.countLost(
            this.group,
            held,
            `member ${this.memberId} went away while handling it`,
          );
        }
      }
      kept = await this.commitSafely(commits);
      await this.store.leave(this.group, this.memberId, this.session);
    } catch (error) {
      // Its rows expire by themselves: the shards go to others after the session timeout.
      this.logger.warn(
        'a consumer group member could not hand its shards back; they go after its session timeout',
        {
          group: this.group.group,
          member: this.memberId,
          error: (error as Error).message,
        },
      );
    } finally {
      this.poke();
    }
    // What a leaving member handled is confirmed as every other commit is; what could not be
    // written it hears of, rather than a GroupLeft that would let it believe nothing comes again.
    owned.forEach((shard, i) => kept.has(shard.shard) && this.confirm(shard, commits[i]!));
    const unwritten = owned.filter((shard) => !kept.has(shard.shard)).map((shard) => shard.shard);
    if (how.reason === 'left' && unwritten.length > 0) {
      this.outbox.fail(
        new UnavailableError(
          -1,
          `the cursors of shards ${unwritten.join(', ')} could not be written as the member left: their next owners may deliver again what it handled since they were last confirmed`,
        ),
      );
    } else if (how.reason === 'left') {
      this.outbox.push({ kind: 'left' });
      this.outbox.end();
    } else if (how.reason === 'silent') {
      this.outbox.fail(
        new SessionEndedError(
          `nothing heard from member ${this.memberId} for ${this.settings.sessionTimeoutMs} ms: its shards went to others; join again`,
        ),
      );
    } else this.outbox.end();
  }

  private async handBack(owned: OwnedShard): Promise<void> {
    this.owned.delete(owned.shard);
    this.stopFeeding(owned);
    this.inFlight -= owned.progress.outstanding;
    for (const other of this.owned.values()) other.wake?.();
    const commit = this.commitOf(owned, true);
    this.handingBack.add(owned.shard);
    try {
      const kept = await this.commitSafely([commit]);
      if (kept.has(owned.shard)) this.confirm(owned, commit);
    } finally {
      this.handingBack.delete(owned.shard);
    }
    this.poke();
  }

  /** Writes cursors; a partition that does not answer leaves them for the session timeout. */
  private async commitSafely(commits: readonly CursorCommit[]): Promise<Set<number>> {
    if (commits.length === 0) return new Set();
    try {
      return await this.store.commit(this.group, commits);
    } catch (error) {
      this.logger.warn('consumer group cursors could not be written', {
        group: this.group.group,
        member: this.memberId,
        error: (error as Error).message,
      });
      return new Set();
    }
  }

  private commitOf(owned: OwnedShard, release: boolean): CursorCommit {
    const cursor = owned.progress.handledUpTo;
    return {
      shard: owned.shard,
      memberId: this.memberId,
      epoch: owned.epoch,
      cursor,
      release,
      forgetFailures: owned.failuresRecorded,
    };
  }

  private confirm(owned: OwnedShard, commit: CursorCommit): void {
    if (commit.cursor > owned.committed) owned.committed = commit.cursor;
    owned.lastCommitAt = Date.now();
    if (commit.forgetFailures) {
      owned.failuresRecorded = [...owned.attempts.keys()].some(
        (id) => exactInteger(id) > commit.cursor,
      );
      for (const id of [...owned.attempts.keys()]) {
        if (exactInteger(id) <= commit.cursor) owned.attempts.delete(id);
      }
    }
    for (const id of [...owned.parked])
      if (exactInteger(id) <= commit.cursor) owned.parked.delete(id);
    this.outbox.push({
      kind: 'committed',
      shard: owned.shard,
      epoch: owned.epoch,
      cursor: commit.cursor,
      replays: [],
    });
  }

  private drop(owned: OwnedShard, reason: string): void {
    if (this.owned.get(owned.shard) !== owned) return;
    this.owned.delete(owned.shard);
    this.stopFeeding(owned);
    this.inFlight -= owned.progress.outstanding;
    this.outbox.push({ kind: 'lost', shard: owned.shard, epoch: owned.epoch, reason });
    for (const other of this.owned.values()) other.wake?.();
  }

  private stopFeeding(owned: OwnedShard): void {
    owned.feed.abort();
    owned.wake?.();
    for (const timer of owned.timers) clearTimeout(timer);
    owned.timers.clear();
  }

  private ownedUnder(shard: number, epoch: RowId): OwnedShard | undefined {
    const owned = this.owned.get(shard);
    // An answer under an older epoch is for cells the shard has since moved on from.
    return owned && owned.epoch === exactInteger(epoch) ? owned : undefined;
  }

  private answered(owned: OwnedShard, count: number): void {
    if (count === 0) return;
    this.inFlight -= count;
    owned.wake?.();
    // Room freed across the member may let other shards' feeds go on.
    for (const other of this.owned.values()) if (other !== owned) other.wake?.();
  }

  private async parkAt(
    owned: OwnedShard,
    id: RowId,
    attempts: number,
    error: string,
  ): Promise<void> {
    const key = String(id);
    try {
      await this.store.park(this.group, owned.shard, id, attempts, error);
    } catch (failure) {
      // Not parked (its partition did not answer): delivered again later, to be parked then.
      this.logger.warn('a cell could not be parked; it will be delivered again', {
        group: this.group.group,
        shard: owned.shard,
        error: (failure as Error).message,
      });
      const timer = setTimeout(() => {
        owned.timers.delete(timer);
        void this.redeliver(owned, id, attempts);
      }, REDELIVERY_MAX_MS);
      owned.timers.add(timer);
      return;
    }
    this.tally.parked += 1;
    if (this.owned.get(owned.shard) !== owned) return;
    owned.attempts.delete(key);
    owned.parked.add(key);
    const wasReplay = owned.replaying.delete(key);
    this.outbox.push({
      kind: 'parked',
      shard: owned.shard,
      epoch: owned.epoch,
      id,
      attempts,
      error,
    });
    if (!wasReplay && owned.progress.handle(id)) this.answered(owned, 1);
  }

  private async redeliver(owned: OwnedShard, id: RowId, attempt: number): Promise<void> {
    if (this.owned.get(owned.shard) !== owned || owned.revokedAt !== undefined) return;
    const [cell] = await this.store.readCells(this.model, owned.shard, [id]).catch(() => []);
    if (!cell) {
      // Unreadable now (a partition down): try again later.
      const timer = setTimeout(() => {
        owned.timers.delete(timer);
        void this.redeliver(owned, id, attempt);
      }, FEED_RETRY_MS);
      owned.timers.add(timer);
      return;
    }
    if (this.owned.get(owned.shard) !== owned) return;
    this.tally.delivered += 1;
    this.outbox.deliver({
      cell,
      epoch: owned.epoch,
      attempt,
      replay: owned.replaying.has(String(id)),
    });
  }

  private async replayed(owned: OwnedShard, id: RowId): Promise<void> {
    try {
      await this.store.replayHandled(this.group, owned.shard, id);
    } catch {
      return; // Still parked with its replay asked for: delivered again by the shard's next owner.
    }
    if (this.owned.get(owned.shard) !== owned) return;
    this.outbox.push({
      kind: 'committed',
      shard: owned.shard,
      epoch: owned.epoch,
      cursor: owned.committed,
      replays: [id],
    });
  }

  /**
   * The member's share of its cells in flight a shard may hold: all of them while it owns one
   * shard, else an even share (at least what the member handles of a shard at once), so that
   * one blocked shard never holds every cell the member may have in flight.
   */
  private shardShare(): number {
    return Math.max(
      this.settings.perShardInFlight,
      Math.floor(this.settings.maxInFlight / Math.max(1, this.owned.size, this.expectedShards)),
    );
  }

  /** Among how many feeds the session's bytes are shared: its shards, or those it is to own. */
  private sharesOfFeeds(): number {
    return Math.max(1, this.owned.size, this.expectedShards);
  }

  private roomFor(owned: OwnedShard): boolean {
    return (
      this.inFlight < this.settings.maxInFlight && owned.progress.outstanding < this.shardShare()
    );
  }

  private waitForRoom(owned: OwnedShard): Promise<void> {
    const signal = owned.feed.signal;
    if (this.roomFor(owned) || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (!this.roomFor(owned) && !signal.aborted) return;
        owned.wake = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      owned.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Feeds one owned shard from its log, in id order, for as long as the member owns it. */
  private async feed(owned: OwnedShard): Promise<void> {
    const signal = owned.feed.signal;
    while (!signal.aborted) {
      try {
        await this.feedFrom(owned, signal);
        return;
      } catch (error) {
        if (signal.aborted) return;
        this.logger.warn('a consumer group feed failed; it reads again shortly', {
          group: this.group.group,
          shard: owned.shard,
          error: (error as Error).message,
        });
        await sleep(FEED_RETRY_MS, signal);
      }
    }
  }

  private async feedFrom(owned: OwnedShard, signal: AbortSignal): Promise<void> {
    const events = this.log.each(
      this.scope,
      this.model,
      {
        shards: [owned.shard],
        cursors: new Map([[owned.shard, owned.readUpTo]]),
        follow: true,
        batchSize: Math.min(500, this.settings.maxInFlight),
        heartbeatIntervalMs: 60_000,
        heldBytes: {
          readAhead: Math.max(1, Math.floor(FEEDS_READ_AHEAD_BYTES / this.sharesOfFeeds())),
          handedOver: Math.floor(FEEDS_HANDED_OVER_BYTES / this.sharesOfFeeds()),
        },
      },
      signal,
    );
    const takes = this.settings.cells;
    for await (const event of events) {
      if (event.kind !== 'batch') continue;
      for (const cell of event.cells) {
        if (signal.aborted) return;
        const key = String(cell.id);
        owned.readUpTo = cell.id;
        if ((takes && !takes.has(cell.name)) || owned.parked.has(key)) {
          owned.progress.read(cell.id, true);
          continue;
        }
        const attempt = (owned.attempts.get(key) ?? 0) + 1;
        if (attempt > this.settings.maxDeliveries) {
          // Counted out already (its members died holding it): parked without a delivery more.
          owned.progress.read(cell.id, false);
          this.inFlight += 1;
          await this.parkAt(owned, cell.id, attempt - 1, 'delivered to members that went away');
          continue;
        }
        await this.waitForRoom(owned);
        if (signal.aborted) return;
        owned.progress.read(cell.id, false);
        this.inFlight += 1;
        const delivery: Delivery = { cell, epoch: owned.epoch, attempt, replay: false };
        this.tally.delivered += 1;
        this.outbox.deliver(delivery);
        await this.outbox.room(signal);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
