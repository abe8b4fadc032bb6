// A member that leaves while its coordinator's turn is reading the group: the turn read the
// member's shards as owned by it, and by the time it acts on that read the session has given
// them up to write their cursors. The turn used to take them back "from the member's earlier
// session" (a claim bumps the epoch), which fenced out the leave's own cursor writes: the
// member was told its cursors could not be written, or, through the SDK, whose close resolves
// either way, the cursors simply stayed behind every cell it handled. The same holds for a
// shard a member releases after a revocation while a turn reads the group and finds the shard
// due to that member again (the member it was revoked for left): the release's cursor write
// must land, or the shard comes back to the member below the cells it acknowledged.
import { expect } from 'chai';
import { type CallScope, UNBOUNDED } from '../../../src/engine/base/callScope.js';
import type { RowId } from '../../../src/engine/base/exactInteger.js';
import type { Engine } from '../../../src/engine/engine.js';
import type { GroupEvent } from '../../../src/engine/groups/groupEvents.js';
import type { MemberSession } from '../../../src/engine/groups/memberSession.js';
import type { ScopedPool, SqlSession } from '../../../src/engine/mysql/mysqlPool.js';
import { Partition } from '../../../src/engine/mysql/partitions.js';
import type { StatementReader } from '../../../src/engine/mysql/sql/statement.js';
import { sleep } from '../../consistency/support.js';
import { startObservedEngine } from '../../support/observedEngine.js';
import {
  RATE_MODEL,
  type StoreFixture,
  putRate,
  startStoreFixture,
} from '../../support/storeFixture.js';

/** A coordinator's read of every shard row of a group (groupTables.ts, readGroupShards). */
const SHARD_ROWS_READ =
  /FROM `[^`]*group_shards`\s+WHERE `model` = \? AND `group_name` = \? ORDER BY `shard`/;
/** A cursor write that hands the shard back (commitCursor with release). */
const RELEASING_COMMIT = /SET `cursor` = GREATEST\(`cursor`, \?\), `owner` = NULL/;
/** A claim of a shard (claimShard): it bumps the epoch. */
const CLAIM = /`epoch` = `epoch` \+ 1/;

/**
 * A partition that, once armed, holds the answer of the next read of the group's shard rows
 * until a releasing cursor write is sent, and holds that write until whatever the turn does
 * with its read has reached MySQL: the leave lands inside the turn, every time.
 */
class LeaveRacingPartition extends Partition {
  private armed = false;
  private heldRead: (() => void) | undefined;
  private readHeld: (() => void) | undefined;
  private readonly claims: Promise<unknown>[] = [];

  /** Holds the next turn's read; resolves once a turn's read is held. */
  holdNextTurn(): Promise<void> {
    this.armed = true;
    return new Promise((resolve) => (this.readHeld = resolve));
  }

  override read<T>(
    scope: CallScope,
    work: (reader: StatementReader) => Promise<T>,
    apart = false,
  ): Promise<T> {
    return super.read(
      scope,
      (reader) =>
        work({
          read: async (statements) => {
            const results = await reader.read(statements);
            if (this.armed && statements.some((s) => SHARD_ROWS_READ.test(s.sql))) {
              this.armed = false;
              await new Promise<void>((resolve) => {
                this.heldRead = resolve;
                this.readHeld?.();
              });
            }
            return results;
          },
        }),
      apart,
    );
  }

  override run<T>(scope: CallScope, work: (pool: ScopedPool) => Promise<T>): Promise<T> {
    return super.run(scope, (pool) => {
      const query: SqlSession['query'] = async (sql, values) => {
        const text = typeof sql === 'string' ? sql : '';
        if (this.heldRead && RELEASING_COMMIT.test(text)) {
          // The turn goes on from its read of the shards as they were before this write...
          const release = this.heldRead;
          this.heldRead = undefined;
          release();
          // ...up to its next round trip (its statements are sent without any I/O between).
          await new Promise((resolve) => setImmediate(resolve));
          await Promise.allSettled(this.claims);
        }
        const answer = pool.query(sql, values);
        if (CLAIM.test(text)) this.claims.push(answer);
        return answer as never;
      };
      return work(Object.assign(Object.create(pool) as ScopedPool, { query }));
    });
  }
}

const SHARDS = 4;
const RECORDS = 12;

/** Per shard of the rate model's log: its last id and how many cells it holds. */
async function lastIdPerShard(
  store: StoreFixture,
): Promise<Map<number, { last: number; count: number }>> {
  const shards = new Map<number, { last: number; count: number }>();
  for (const message of await store.api.each({ model: 'rate' })) {
    if (message.event?.$case !== 'batch') continue;
    for (const cell of message.event.batch.cells) {
      const seen = shards.get(cell.shard) ?? { last: 0, count: 0 };
      shards.set(cell.shard, { last: Math.max(seen.last, Number(cell.id)), count: seen.count + 1 });
    }
  }
  return shards;
}

describe('consumer groups: a member leaving, or releasing a shard, during its coordinator turn', function () {
  this.timeout(30_000);
  let store: StoreFixture;
  let engine: Engine;
  let partition: LeaveRacingPartition;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    ({ engine, partition } = await startObservedEngine(
      store,
      (location, pool) => new LeaveRacingPartition(0, location, pool),
      { followPollIntervalMs: 50 },
    ));
  });
  after(async () => {
    await engine?.close();
    await store?.close();
  });

  /** A member joined on the engine itself, from the group's start, with the server's defaults. */
  const join = (group: string, memberId: string) =>
    engine.groups.join(UNBOUNDED, {
      model: 'rate',
      group,
      memberId,
      from: 'earliest',
      cells: [],
      maxInFlight: 0,
      perShardInFlight: 0,
      maxDeliveries: 0,
      sessionTimeoutMs: 0,
      peer: 'test',
    });

  it('writes the cursors of every shard it handled, and ends with GroupLeft', async () => {
    for (let hotel = 0; hotel < RECORDS; hotel++) await putRate(store.api, hotel);
    const log = await lastIdPerShard(store);
    const cells = [...log.values()].reduce((sum, { count }) => sum + count, 0);
    const session = await join('leave-during-turn', 'leaver');
    const member = new AckingMember(session);
    await member.until(() => member.assigned === SHARDS && member.handled === cells);

    await partition.holdNextTurn();
    await session.leave();
    const end = await member.ended;

    const { members, shards } = await engine.groups.describe(
      UNBOUNDED,
      'rate',
      'leave-during-turn',
    );
    expect(end, 'how the stream ended').to.equal('left');
    expect(members).to.deep.equal([]);
    for (const shard of shards) {
      const last = log.get(shard.shard)?.last ?? 0;
      expect(Number(shard.cursor), `shard ${shard.shard}'s cursor`).to.equal(last);
      expect(shard.owner, `shard ${shard.shard}'s owner`).to.equal(undefined);
    }
  });

  it('a shard released after a revocation, due to the same member again: its cursor write lands', async () => {
    const a = new AckingMember(await join('release-during-turn', 'keeper'));
    await a.until(() => a.assigned === SHARDS);
    // a handles what is there, then holds a new cell of each shard unacknowledged.
    await sleep(300);
    a.holding = true;
    const heldShards = () => new Set(a.held.map((held) => held.shard)).size;
    for (let hotel = RECORDS; heldShards() < SHARDS; hotel++) {
      await putRate(store.api, hotel);
      await sleep(20);
    }
    // b joins: half of a's shards are revoked for it, and a keeps them (no release yet).
    const b = new AckingMember(await join('release-during-turn', 'visitor'));
    await a.until(() => a.revoked.length === SHARDS / 2);
    // b leaves: every shard is a's again by the group's assignment, the revoked ones included.
    await b.session.leave();
    await b.ended;
    await sleep(500);

    await partition.holdNextTurn();
    // Released inside the turn that read them as a's under their epochs.
    for (const { shard, epoch } of a.revoked) {
      a.acknowledgeHeld(shard);
      await a.session.released(shard, epoch);
    }
    await a.until(() => a.assigned === SHARDS + SHARDS / 2);
    for (const { shard } of a.revoked) {
      const again = a.assignments.filter((assignment) => assignment.shard === shard).at(-1)!;
      // The last cell a acknowledged of the shard before its release: a cell of it delivered
      // while the release was under way is held, not acknowledged, and comes again.
      const acknowledged = Math.max(
        ...[...a.acknowledged]
          .filter((key) => key.startsWith(`${shard}/`))
          .map((key) => Number(key.slice(key.indexOf('/') + 1))),
      );
      expect(again.cursor, `shard ${shard}'s cursor when a got it back`).to.equal(acknowledged);
    }
    expect(a.deliveredAgain, 'cells acknowledged and delivered again').to.deep.equal([]);
    await a.session.leave();
    expect(await a.ended).to.equal('left');
  });
});

/**
 * A member on the session itself: acknowledges every delivery at once (or, while `holding`,
 * keeps it unacknowledged), never answers a revocation by itself, and records its end.
 */
class AckingMember {
  assigned = 0;
  handled = 0;
  holding = false;
  readonly assignments: { shard: number; cursor: number }[] = [];
  readonly revoked: { shard: number; epoch: RowId }[] = [];
  /** Deliveries kept unacknowledged while `holding`. */
  readonly held: { shard: number; epoch: RowId; id: RowId }[] = [];
  /** Ids of the cells acknowledged, and of those delivered again after that. */
  readonly acknowledged = new Set<string>();
  readonly deliveredAgain: string[] = [];
  readonly ended: Promise<string>;
  private waiter: (() => void) | undefined;

  constructor(readonly session: MemberSession) {
    this.ended = this.run();
  }

  /** Acknowledges what was held on `shard`. */
  acknowledgeHeld(shard: number): void {
    for (const cell of this.held.filter((held) => held.shard === shard)) {
      this.session.acknowledge(shard, cell.epoch, [cell.id]);
      this.acknowledged.add(`${shard}/${cell.id}`);
    }
  }

  until(done: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        this.waiter = undefined;
        resolve();
      };
      this.waiter = check;
      check();
    });
  }

  private async run(): Promise<string> {
    try {
      for await (const event of this.session.events(new AbortController().signal)) {
        this.apply(event);
        this.waiter?.();
        if (event.kind === 'left') return 'left';
      }
      return 'ended without GroupLeft';
    } catch (error) {
      return `failed: ${(error as Error).message}`;
    }
  }

  private apply(event: GroupEvent): void {
    if (event.kind === 'assigned') {
      this.assigned += 1;
      this.assignments.push({ shard: event.shard, cursor: Number(event.cursor) });
    }
    if (event.kind === 'revoked') this.revoked.push({ shard: event.shard, epoch: event.epoch });
    if (event.kind !== 'deliveries') return;
    for (const { cell, epoch } of event.deliveries) {
      const key = `${cell.shard}/${cell.id}`;
      if (this.acknowledged.has(key)) this.deliveredAgain.push(key);
      this.handled += 1;
      if (this.holding) {
        this.held.push({ shard: cell.shard, epoch, id: cell.id });
        continue;
      }
      this.session.acknowledge(cell.shard, epoch, [cell.id]);
      this.acknowledged.add(key);
    }
  }
}
