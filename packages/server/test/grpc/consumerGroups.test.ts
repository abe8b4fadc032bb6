// Consumer groups over the raw contract (groups.proto), against real servers sharing a real
// MariaDB: members on two server processes' worth of engines, each spoken to as a generated
// client would, answering only what each test tells it to.
import { type ServiceError, status } from '@grpc/grpc-js';
import { type Delivery, StartFrom, WriteMode } from '@shameless/proto';
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { rejection } from '../support/grpcCalls.js';
import { GroupMember, timeUntil } from '../support/groupMember.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';

const SHARDS = 16;

/**
 * Creates `count` rate records (one base cell each) from hotel `from` on. A PutMany puts its
 * creates' content in as few shards as the server writes at once (createShards.ts), so the
 * records go a few at a time, spreading over every shard.
 */
async function writeRates(store: StoreFixture, count: number, from = 0): Promise<void> {
  for (let start = 0; start < count; start += 4) {
    const size = Math.min(4, count - start);
    await store.api.putMany({
      puts: Array.from({ length: size }, (_, i) => ({
        model: 'rate',
        values: pack({
          hotel_id: from + start + i,
          room_type: 'suite',
          check_in_date: '2026-01-01',
          gateway: 'gw',
          discount_type: 'none',
        }),
        requestId: requestId(),
      })),
    });
  }
}

const keyOf = (delivery: Delivery) => `${delivery.cell!.shard}/${delivery.cell!.id}`;

/** Every cell of the model, per shard: `shard/id` keys, in id order. */
async function allCells(store: StoreFixture): Promise<string[]> {
  const batches = await store.api.each({ model: 'rate' });
  return batches.flatMap((message) =>
    message.event?.$case === 'batch'
      ? message.event.batch.cells.map((cell) => `${cell.shard}/${cell.id}`)
      : [],
  );
}

async function describe_(store: StoreFixture, group = 'g') {
  return store.api.describeConsumerGroup({ model: 'rate', group });
}

describe('consumer groups (Consume over the raw contract)', function () {
  this.timeout(60_000);
  let a: StoreFixture;
  let b: StoreFixture;
  const members: GroupMember[] = [];
  const join = async (
    store: StoreFixture,
    options: Parameters<typeof GroupMember.join>[1] = {},
    behaviour: Parameters<typeof GroupMember.join>[2] = {},
  ) => {
    const member = await GroupMember.join(store.api, options, behaviour);
    members.push(member);
    return member;
  };
  let groupCounter = 0;
  /** A group name no earlier test used: tests share the store. */
  const freshGroup = () => `g${++groupCounter}-${Date.now().toString(36)}`;

  before(async () => {
    a = await startStoreFixture({ shardsCount: SHARDS });
    await a.api.defineModel({ model: RATE_MODEL });
    // A second server on the same databases, as another process would be.
    b = await startStoreFixture({ shardsCount: SHARDS, partitionUrls: a.partitionUrls });
    await writeRates(a, 400);
  });
  afterEach(() => {
    for (const member of members.splice(0)) if (!member.ended) member.cancel();
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it('delivers every cell of every shard to one member, in id order per shard, and confirms its cursors', async () => {
    const group = freshGroup();
    const member = await join(a, { group }, { autoAck: true });
    const cells = await allCells(a);
    await member.until(() => new Set(member.deliveries.map(keyOf)).size >= cells.length);
    expect(member.owned.size).to.equal(SHARDS);
    expect(new Set(member.deliveries.map(keyOf))).to.deep.equal(new Set(cells));
    const byShard = new Map<number, bigint[]>();
    for (const { cell } of member.deliveries) {
      byShard.set(cell!.shard, [...(byShard.get(cell!.shard) ?? []), cell!.id]);
    }
    for (const [shard, ids] of byShard) {
      expect(ids, `shard ${shard}`).to.deep.equal([...ids].sort((x, y) => (x < y ? -1 : 1)));
    }
    expect(member.deliveries.every((delivery) => delivery.attempt === 1)).to.equal(true);
    // Cursors are written about once a second: every shard's reaches its last cell, and says so.
    await timeUntil(
      async () => (await describe_(a, group)).shards.every((shard) => shard.lag === 0n),
      10_000,
      'every shard caught up',
    );
    const described = await describe_(a, group);
    for (const shard of described.shards) {
      expect(shard.cursor, `shard ${shard.shard}`).to.equal(shard.maxId);
      expect(shard.owner).to.equal(member.memberId);
      if (shard.maxId > 0n) expect(member.committed.get(shard.shard)).to.equal(shard.maxId);
    }
    expect(described.members.map((m) => m.memberId)).to.deep.equal([member.memberId]);
    expect(described.members[0]!.shards).to.have.length(SHARDS);
  });

  it('splits the shards between members on two servers, and a third takes only its share', async () => {
    const group = freshGroup();
    const one = await join(a, { group, memberId: 'one' }, { autoAck: true });
    await one.until(() => one.owned.size === SHARDS);
    const two = await join(b, { group, memberId: 'two' }, { autoAck: true });
    await two.until(() => two.owned.size === 8, 10_000, 'two owning 8 shards');
    await one.until(() => one.owned.size === 8);
    const before = { one: new Set(one.owned.keys()), two: new Set(two.owned.keys()) };
    const three = await join(a, { group, memberId: 'three' }, { autoAck: true });
    await three.until(() => three.owned.size === 5, 10_000, 'three owning 5 shards');
    await one.until(
      () => one.owned.size + two.owned.size === 11,
      10_000,
      'one and two giving 5 up',
    );
    expect([one.owned.size, two.owned.size].sort()).to.deep.equal([5, 6]);
    // Sticky: one and two only gave shards up; the newcomer took only theirs.
    for (const shard of one.owned.keys()) expect(before.one.has(shard)).to.equal(true);
    for (const shard of two.owned.keys()) expect(before.two.has(shard)).to.equal(true);
    const described = await describe_(a, group);
    expect(described.members.map((m) => m.memberId)).to.deep.equal(['one', 'three', 'two']);
    const owners = new Map(described.shards.map((shard) => [shard.shard, shard.owner]));
    for (const shard of three.owned.keys()) expect(owners.get(shard)).to.equal('three');
  });

  it('hands a shard over without delivering any cell twice when a member joins and another leaves', async () => {
    const group = freshGroup();
    const one = await join(a, { group, memberId: 'one' }, { autoAck: true });
    await one.until(() => one.owned.size === SHARDS);
    const writing = writeRates(a, 300, 10_000);
    const two = await join(b, { group, memberId: 'two' }, { autoAck: true });
    await writing;
    await one.leave();
    const cells = await allCells(a);
    // Cells on their way to one when it left it dropped unhandled: those are two's to take, so
    // the wait counts what one handled (not what it was delivered) and what two was delivered.
    await two.until(
      () => new Set([...one.handled, ...two.deliveries.map(keyOf)]).size >= cells.length,
      20_000,
      'every cell handled by one or delivered to two',
    );
    // What one handled, two is never handed: the hand-overs (a revocation, the leave) wrote
    // one's cursors past it first.
    const handledTwice = two.deliveries.map(keyOf).filter((key) => one.handled.has(key));
    expect(handledTwice, 'cells handled by one and delivered to two').to.deep.equal([]);
    expect(new Set([...one.handled, ...two.deliveries.map(keyOf)]).size).to.equal(cells.length);
    await two.until(() => two.owned.size === SHARDS, 5000, 'two owning every shard');
  });

  it('writes and confirms the cursors of a member that leaves, before GroupLeft', async () => {
    const group = freshGroup();
    const member = await join(a, { group }, { autoAck: true });
    const cells = await allCells(a);
    await member.until(() => new Set(member.deliveries.map(keyOf)).size >= cells.length);
    // Well within the second a busy shard's cursor waits to be written.
    await member.leave();
    const described = await describe_(a, group);
    for (const shard of described.shards) {
      expect(shard.lag, `shard ${shard.shard}`).to.equal(0n);
      if (shard.maxId > 0n) expect(member.committed.get(shard.shard)).to.equal(shard.maxId);
    }
    const left = member.received.findIndex((message) => message.$case === 'left');
    const lastCommitted = member.received.findLastIndex((message) => message.$case === 'committed');
    expect(lastCommitted).to.be.lessThan(left);
  });

  it('gives the shards of a member whose stream closes to another within 2 s, counting what it held', async () => {
    const group = freshGroup();
    const doomed = await join(a, { group, memberId: 'doomed' });
    await doomed.until(() => doomed.owned.size === SHARDS);
    const survivor = await join(b, { group, memberId: 'survivor' }, { autoAck: true });
    await survivor.until(() => survivor.owned.size === 8, 10_000, 'survivor owning 8');
    const survivorShards = new Set(survivor.owned.keys());
    // The doomed member holds cells of each of its shards that has any, unanswered, when it goes.
    const withCells = new Set((await allCells(a)).map((key) => Number(key.split('/')[0])));
    await doomed.until(
      () =>
        [...doomed.owned.keys()].every(
          (shard) =>
            !withCells.has(shard) ||
            doomed.deliveries.some((delivery) => delivery.cell!.shard === shard),
        ),
      10_000,
      'cells of every shard the doomed member owns',
    );
    const held = new Map(doomed.deliveries.map((delivery) => [keyOf(delivery), delivery]));
    doomed.cancel();
    const tookMs = await timeUntil(
      () => survivor.owned.size === SHARDS,
      5000,
      'the survivor owning every shard',
    );
    expect(tookMs, 'takeover after the stream closed').to.be.at.most(2000);
    // Of each shard the doomed member held, its first unanswered cell counts as delivered once.
    const heldThere = [...held.values()].filter(
      (delivery) => !survivorShards.has(delivery.cell!.shard),
    );
    expect(heldThere.length, 'cells the doomed member held').to.be.greaterThan(0);
    const deliveredAgain = () => new Set(survivor.deliveries.map(keyOf));
    await survivor.until(
      () => heldThere.every((delivery) => deliveredAgain().has(keyOf(delivery))),
      10_000,
      'the cells the doomed member held, delivered to the survivor',
    );
    const again = survivor.deliveries.filter(
      (delivery) => held.has(keyOf(delivery)) && !survivorShards.has(delivery.cell!.shard),
    );
    const firstOfShard = new Map<number, Delivery>();
    for (const delivery of again) {
      const first = firstOfShard.get(delivery.cell!.shard);
      if (!first || delivery.cell!.id < first.cell!.id)
        firstOfShard.set(delivery.cell!.shard, delivery);
    }
    for (const delivery of firstOfShard.values())
      expect(delivery.attempt, keyOf(delivery)).to.equal(2);
  });

  it("gives a silent member's shards to another after its session timeout, and ends its stream ABORTED", async () => {
    const group = freshGroup();
    const silent = await join(
      a,
      { group, memberId: 'silent', sessionTimeoutMs: 2000 },
      { autoAck: true },
    );
    await silent.until(() => silent.owned.size === SHARDS);
    const talker = await join(
      b,
      { group, memberId: 'talker', sessionTimeoutMs: 2000 },
      { autoAck: true },
    );
    const beat = setInterval(() => talker.heartbeat(), 300);
    try {
      await talker.until(() => talker.owned.size === 8, 10_000, 'talker owning 8');
      // The silent member neither answers nor beats from here on.
      const since = Date.now();
      await timeUntil(() => talker.owned.size === SHARDS, 10_000, 'talker owning every shard');
      expect(Date.now() - since, 'takeover after silence').to.be.at.most(2000 + 2000);
      await silent.until(() => silent.ended !== undefined, 5000, 'the silent stream ending');
      expect(silent.ended!.error?.code).to.equal(status.ABORTED);
      expect(silent.ended!.error?.details).to.match(/join again/);
    } finally {
      clearInterval(beat);
    }
  });

  it('redelivers a failing cell after a backoff, parks it after max_deliveries, and its shard goes on', async () => {
    const group = freshGroup();
    const member = await join(a, { group, maxDeliveries: 3 });
    await member.until(() => member.deliveries.length > 0);
    const poison = member.deliveries[0]!;
    const poisonKey = keyOf(poison);
    // Everything else is handled as it comes.
    const answer = () => {
      const fresh = member.deliveries.filter((delivery) => keyOf(delivery) !== poisonKey);
      if (fresh.length > 0) member.ack(fresh);
    };
    member.fail(poison, 'boom 1');
    const second = await timeUntilDelivery(member, poisonKey, 2);
    expect(second.attempt).to.equal(2);
    member.fail(second, 'boom 2');
    const third = await timeUntilDelivery(member, poisonKey, 3);
    member.fail(third, 'boom 3: the last');
    const parked = await member.next('parked');
    expect(parked.id).to.equal(poison.cell!.id);
    expect(parked.attempts).to.equal(3);
    answer();
    await timeUntil(
      async () => {
        answer();
        const shard = (await describe_(a, group)).shards[poison.cell!.shard]!;
        return shard.cursor >= poison.cell!.id && shard.parked === 1;
      },
      10_000,
      'the poison cell parked and its shard past it',
    );
    const listed = await a.api.listParkedCells({
      model: 'rate',
      group,
      shard: undefined,
      limit: 0,
      pageToken: '',
    });
    expect(listed.cells.map((cell) => `${cell.cell!.shard}/${cell.cell!.id}`)).to.deep.equal([
      poisonKey,
    ]);
    expect(listed.cells[0]!.attempts).to.equal(3);
    expect(listed.cells[0]!.error).to.equal('boom 3: the last');
    expect(listed.cells[0]!.cell!.body).to.deep.equal(poison.cell!.body);

    // Replayed on request: delivered again as a replay, and no longer parked once handled.
    await a.api.replayParkedCell({
      model: 'rate',
      group,
      shard: poison.cell!.shard,
      id: poison.cell!.id,
    });
    await member.until(
      () => member.deliveries.some((delivery) => delivery.replay),
      10_000,
      'the replay',
    );
    const replayed = member.deliveries.find((delivery) => delivery.replay)!;
    expect(keyOf(replayed)).to.equal(poisonKey);
    member.ack([replayed]);
    await member.until(
      () => member.all('committed').some((commit) => commit.replays.includes(poison.cell!.id)),
      10_000,
      'the replay confirmed',
    );
    const after = await a.api.listParkedCells({ model: 'rate', group, limit: 0, pageToken: '' });
    expect(after.cells).to.deep.equal([]);
    const missing = await rejection(
      a.api.replayParkedCell({ model: 'rate', group, shard: 0, id: 999_999_999n }),
    );
    expect(missing.code).to.equal(status.NOT_FOUND);
  });

  it('gives a replayed cell max_deliveries deliveries again, and parks it again after them', async () => {
    const group = freshGroup();
    const member = await join(a, { group, maxDeliveries: 2 });
    await member.until(() => member.deliveries.length > 0);
    const poison = member.deliveries[0]!;
    member.fail(poison, 'first');
    member.fail(await timeUntilDelivery(member, keyOf(poison), 2), 'second');
    expect((await member.next('parked')).attempts).to.equal(2);
    await a.api.replayParkedCell({
      model: 'rate',
      group,
      shard: poison.cell!.shard,
      id: poison.cell!.id,
    });
    const replays = () => member.deliveries.filter((delivery) => delivery.replay);
    await member.until(() => replays().length === 1, 10_000, 'the replay');
    expect(replays()[0]!.attempt).to.equal(1);
    member.fail(replays()[0]!, 'replay 1');
    await member.until(() => replays().length === 2, 10_000, 'the replay delivered again');
    expect(replays()[1]!.attempt).to.equal(2);
    member.fail(replays()[1]!, 'replay 2');
    const again = await member.next('parked');
    expect([again.attempts, again.error]).to.deep.equal([2, 'replay 2']);
    const listed = await a.api.listParkedCells({ model: 'rate', group, limit: 0, pageToken: '' });
    expect(listed.cells.map((cell) => [cell.attempts, cell.replayPending])).to.deep.equal([
      [2, false],
    ]);
  });

  it('counts failed deliveries across a member that dies, and parks what it parks itself', async () => {
    const group = freshGroup();
    const first = await join(a, { group, memberId: 'first', maxDeliveries: 5 });
    await first.until(() => first.deliveries.length > 0);
    const cell = first.deliveries[0]!;
    first.fail(cell, 'failure 1');
    const again = await timeUntilDelivery(first, keyOf(cell), 2);
    first.fail(again, 'failure 2');
    await timeUntilDelivery(first, keyOf(cell), 3);
    // Dies holding its third delivery.
    first.cancel();
    // It acknowledges nothing, so it gets room for every cell of the store (400). With the default
    // of 256, the other shards' cells could fill it first: a run that failed had 258
    // deliveries, none of this cell.
    const second = await join(b, {
      group,
      memberId: 'second',
      maxDeliveries: 5,
      maxInFlight: 1000,
    });
    const fourth = await timeUntilDelivery(second, keyOf(cell), 4, 10_000);
    expect(fourth.attempt).to.equal(4);
    second.park(fourth, 'not for us');
    const parked = await second.next('parked');
    expect(parked.error).to.equal('not for us');
    const listed = await b.api.listParkedCells({ model: 'rate', group, limit: 0, pageToken: '' });
    expect(listed.cells.map((c) => c.error)).to.deep.equal(['not for us']);
  });

  it('fences a member that lost its shard: its acknowledgements move nothing', async () => {
    const group = freshGroup();
    const member = await join(a, { group, memberId: 'fenced' });
    await member.until(() => member.owned.size === SHARDS && member.deliveries.length >= SHARDS);
    const shard = member.deliveries[0]!.cell!.shard;
    // Another claim of the shard, as another server would make it.
    const sql = await mysql.createConnection(a.partitionUrls[0]!);
    try {
      await sql.query(
        "UPDATE `test_shameless_group_shards` SET `owner` = 'thief', `epoch` = `epoch` + 1 WHERE `group_name` = ? AND `shard` = ?",
        [group, shard],
      );
      member.ack(member.deliveries.filter((delivery) => delivery.cell!.shard === shard));
      const lost = await member.next('lost');
      expect(lost.shard).to.equal(shard);
      // The acknowledgements under the old epoch did not count. (The shard may have been
      // claimed back since, the thief not being a live member: under a newer epoch then.)
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        'SELECT `cursor`, `epoch` FROM `test_shameless_group_shards` WHERE `group_name` = ? AND `shard` = ?',
        [group, shard],
      );
      expect(Number(rows[0]!.cursor)).to.equal(0);
      expect(BigInt(rows[0]!.epoch) > member.deliveries[0]!.epoch, 'a newer epoch').to.equal(true);
    } finally {
      await sql.end();
    }
  });

  it('resets cursors only while no member is connected', async () => {
    const group = freshGroup();
    const member = await join(a, { group, memberId: 'reader-1' }, { autoAck: true });
    const cells = await allCells(a);
    await member.until(() => new Set(member.deliveries.map(keyOf)).size >= cells.length);
    const refused = await rejection(
      a.api.resetConsumerGroup({
        model: 'rate',
        group,
        to: { $case: 'position', position: StartFrom.START_FROM_EARLIEST },
      }),
    );
    expect(refused.code).to.equal(status.FAILED_PRECONDITION);
    expect(refused.details).to.match(/reader-1/);
    await member.leave();
    const reset = await a.api.resetConsumerGroup({
      model: 'rate',
      group,
      to: { $case: 'position', position: StartFrom.START_FROM_EARLIEST },
    });
    expect(reset.shards.every((shard) => shard.cursor === 0n && shard.owner === '')).to.equal(true);
    const again = await join(a, { group }, { autoAck: true });
    await again.until(() => new Set(again.deliveries.map(keyOf)).size >= cells.length);
    await again.leave();
    const one = await a.api.resetConsumerGroup({
      model: 'rate',
      group,
      to: { $case: 'shard', shard: { shard: 3, cursor: 1n } },
    });
    expect(one.shards[3]!.cursor).to.equal(1n);
  });

  it('starts a new group at the end with from latest, and keeps two groups apart', async () => {
    const latest = freshGroup();
    const earliest = freshGroup();
    const late = await join(
      a,
      { group: latest, from: StartFrom.START_FROM_LATEST },
      { autoAck: true },
    );
    const early = await join(b, { group: earliest }, { autoAck: true });
    const cells = await allCells(a);
    await early.until(() => new Set(early.deliveries.map(keyOf)).size >= cells.length);
    expect(late.deliveries).to.deep.equal([]);
    await writeRates(a, 20, 50_000);
    await late.until(() => late.deliveries.length === 20, 10_000, 'the new cells');
    await early.until(() => new Set(early.deliveries.map(keyOf)).size === cells.length + 20);
  });

  it('delivers only the cells a member asks for, and moves the cursor past the others', async () => {
    const group = freshGroup();
    const { uuid } = await a.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 90_001,
        room_type: 'r',
        check_in_date: 'd',
        gateway: 'gw',
        discount_type: 'x',
      }),
      requestId: requestId(),
      omitBodyAsSent: false,
    });
    const meta = await a.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ note: 'only this' }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      expectedRefKey: undefined,
      requestId: requestId(),
      omitBodyAsSent: false,
    });
    const member = await join(a, { group, cells: ['meta'] }, { autoAck: true });
    await member.until(() => member.deliveries.length >= 1);
    expect(member.deliveries.map((delivery) => delivery.cell!.name)).to.deep.equal(['meta']);
    expect(member.deliveries[0]!.cell!.id).to.equal(meta.cell!.id);
    await timeUntil(
      async () => (await describe_(a, group)).shards.every((shard) => shard.lag === 0n),
      10_000,
      'cursors past the base cells',
    );
  });

  it('hands the shards of a server that stops to members of another', async () => {
    const group = freshGroup();
    const stopping = await startStoreFixture({
      shardsCount: SHARDS,
      partitionUrls: a.partitionUrls,
    });
    const there = await join(stopping, { group, memberId: 'there' }, { autoAck: true });
    const here = await join(a, { group, memberId: 'here' }, { autoAck: true });
    await here.until(() => here.owned.size === 8, 10_000, 'here owning 8');
    await stopping.close();
    await there.until(() => there.ended !== undefined, 5000, 'the stream ending');
    expect(there.ended!.error?.code).to.equal(status.UNAVAILABLE);
    const tookMs = await timeUntil(() => here.owned.size === SHARDS, 5000, 'here owning all');
    expect(tookMs).to.be.at.most(2000);
  });

  it('refuses a stream that does not start with a join, and bad joins, with clear statuses', async () => {
    const stream = a.api.consume();
    const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    stream.on('data', () => undefined);
    stream.write({ message: { $case: 'heartbeat', heartbeat: {} } });
    const notJoin = await ended;
    expect(notJoin.code).to.equal(status.INVALID_ARGUMENT);
    expect(notJoin.details).to.match(/must be join/);

    const cases: [Parameters<typeof GroupMember.join>[1], status, RegExp][] = [
      [{ group: '' }, status.INVALID_ARGUMENT, /join\.group: is required/],
      [{ group: 'has space' }, status.INVALID_ARGUMENT, /join\.group/],
      [{ group: 'g', memberId: 'x'.repeat(65) }, status.INVALID_ARGUMENT, /join\.member_id/],
      [{ group: 'g', maxInFlight: 10_001 }, status.INVALID_ARGUMENT, /join\.max_in_flight/],
      [{ group: 'g', sessionTimeoutMs: 500 }, status.INVALID_ARGUMENT, /join\.session_timeout_ms/],
      [{ group: 'g', model: 'nope' }, status.NOT_FOUND, /nope/],
      [{ group: 'g', cells: ['nope'] }, status.NOT_FOUND, /nope/],
    ];
    for (const [join, code, message] of cases) {
      const member = new GroupMember(a.api);
      member.send({
        $case: 'join',
        join: {
          model: 'rate',
          group: 'g',
          memberId: '',
          from: 0,
          cells: [],
          maxInFlight: 0,
          perShardInFlight: 0,
          maxDeliveries: 0,
          sessionTimeoutMs: 0,
          ...join,
        },
      });
      await member.until(() => member.ended !== undefined);
      expect(member.ended!.error?.code, JSON.stringify(join)).to.equal(code);
      expect(member.ended!.error?.details, JSON.stringify(join)).to.match(message);
    }
    const unknown = await rejection(describe_(a, 'never-joined'));
    expect(unknown.code).to.equal(status.NOT_FOUND);
  });
});

/** The delivery of `key` with attempt `attempt`, waiting for it. */
async function timeUntilDelivery(
  member: GroupMember,
  key: string,
  attempt: number,
  timeoutMs = 5000,
): Promise<Delivery> {
  const find = () =>
    member.deliveries.find((delivery) => keyOf(delivery) === key && delivery.attempt === attempt);
  await member.until(() => find() !== undefined, timeoutMs, `delivery ${attempt} of ${key}`);
  return find()!;
}
