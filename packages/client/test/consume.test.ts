// Consumer groups through the SDK (`Model.consume`, `store.describeConsumerGroup`, parked
// cells, replays, resets) against a real `shameless serve` process over the local MariaDB: a
// 16-shard store, one model, each test its own group. No timing assertions; the figures (the
// throughput of one member) are printed.

import { expect } from 'chai';
import {
  CancelledError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  connect,
  type Consumer,
  type Model,
  type Store,
} from '../src/index.js';
import {
  Events,
  Handled,
  logOf,
  num,
  startGroupServer,
  waitFor,
  writeRates,
  type GroupServer,
} from './support/consumers.js';
import { RATE_SCHEMA } from './support/rateModel.js';

const SHARDS = 16;

describe('consumer groups', function () {
  this.timeout(60_000);
  let fixture: GroupServer;
  let store: Store;
  let Rate: Model<typeof RATE_SCHEMA>;
  /** Every consumer a test made: closed after it, whatever happened. */
  const consumers: Consumer[] = [];
  const track = <C extends Consumer>(consumer: C): C => {
    consumers.push(consumer as unknown as Consumer);
    return consumer;
  };

  before(async () => {
    fixture = await startGroupServer(SHARDS);
    store = await connect({ endpoints: [fixture.server.address] });
    Rate = await store.defineModel(RATE_SCHEMA);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
  });
  after(async () => {
    await store?.close();
    await fixture?.close();
  });

  it('one member handles every cell of every shard, in id order per shard', async () => {
    await writeRates(Rate, 3000, 'all');
    const handled = new Handled();
    const events = new Events();
    const startedAt = performance.now();
    let lastAt = startedAt;
    const consumer = track(
      Rate.consume(
        { group: 'everything', maxInFlight: 256, onEvent: events.hook },
        (cell, delivery) => {
          handled.add({
            shard: cell.shard!,
            id: num(cell.id!),
            attempt: delivery.attempt,
            replay: delivery.replay,
            by: 'a',
          });
          lastAt = performance.now();
        },
      ),
    );
    const log = await logOf(Rate);
    const total = [...log.values()].reduce((sum, ids) => sum + ids.length, 0);
    await waitFor(() => handled.covers(log), 30_000, 'every cell of the log to be handled');
    const seconds = (lastAt - startedAt) / 1000;
    console.log(
      `      one member, a no-op handler: ${total} cells over ${SHARDS} shards in ` +
        `${seconds.toFixed(2)} s (${Math.round(total / seconds)} cells/s, join included)`,
    );
    // Cells written while it runs come too.
    await writeRates(Rate, 100, 'all-later');
    const later = await logOf(Rate);
    await waitFor(() => handled.covers(later), 10_000, 'the cells written since');

    expect(consumer.shards).to.deep.equal([...Array(SHARDS).keys()]);
    for (const shard of log.keys()) {
      const ids = handled.all.filter((seen) => seen.shard === shard).map((seen) => seen.id);
      expect(ids, `shard ${shard}: ids in order, each once`).to.deep.equal(later.get(shard));
    }
    expect(events.of('assigned')).to.have.length(SHARDS);
    expect(events.of('joined')[0]?.memberId).to.equal(consumer.memberId);

    await consumer.close();
    await consumer.closed;
    expect(consumer.shards).to.deep.equal([]);
    // The leave committed every cursor: up to the end of each shard, as the store says too.
    const group = await store.describeConsumerGroup('rate', 'everything');
    expect(group.members).to.deep.equal([]);
    for (const shard of group.shards) {
      const ids = later.get(shard.shard)!;
      const last = ids[ids.length - 1] ?? 0;
      expect(num(shard.cursor), `shard ${shard.shard}`).to.equal(last);
      // The leave's commits are confirmed before GroupLeft: the member knows what the store holds.
      expect(num(consumer.committed.get(shard.shard) ?? 0)).to.equal(last);
      expect(shard.owner).to.equal(undefined);
      expect(shard.lag).to.equal(0);
    }
    expect(events.of('left')).to.have.length(1);
  });

  it('two members split 16 shards 8/8; a third joining moves only the shards that must move', async () => {
    const handled = new Handled();
    const member = (name: string) =>
      track(
        Rate.consume({ group: 'balance', memberId: `balance-${name}` }, (cell) =>
          handled.add({
            shard: cell.shard!,
            id: num(cell.id!),
            attempt: 1,
            replay: false,
            by: name,
          }),
        ),
      );
    const a = member('a');
    await waitFor(() => a.shards.length === SHARDS, 10_000, 'a to own every shard');
    const b = member('b');
    await waitFor(
      () => a.shards.length === 8 && b.shards.length === 8,
      10_000,
      () => `an 8/8 split (a: ${a.shards}, b: ${b.shards})`,
    );
    expect([...a.shards, ...b.shards].sort((x, y) => x - y)).to.deep.equal([
      ...Array(SHARDS).keys(),
    ]);
    const before = { a: a.shards, b: b.shards };

    const c = member('c');
    await waitFor(
      () =>
        c.shards.length >= 5 &&
        a.shards.length + b.shards.length + c.shards.length === SHARDS &&
        Math.max(a.shards.length, b.shards.length, c.shards.length) -
          Math.min(a.shards.length, b.shards.length, c.shards.length) <=
          1,
      10_000,
      () => `a balanced split of three (a: ${a.shards}, b: ${b.shards}, c: ${c.shards})`,
    );
    // Sticky: a and b kept shards they had, and gave c only what it needed.
    expect(before.a).to.include.members(a.shards);
    expect(before.b).to.include.members(b.shards);
    expect(before.a.length - a.shards.length + (before.b.length - b.shards.length)).to.equal(
      c.shards.length,
    );
    const group = await store.describeConsumerGroup(Rate, 'balance');
    expect(group.members.map((m) => [m.memberId, m.shards])).to.have.deep.members([
      ['balance-a', a.shards],
      ['balance-b', b.shards],
      ['balance-c', c.shards],
    ]);
    for (const shard of group.shards) {
      expect(shard.owner).to.be.oneOf(['balance-a', 'balance-b', 'balance-c']);
    }
  });

  it('a revocation and a graceful close hand shards over with no cell handled twice', async () => {
    const handled = new Handled();
    const events = { a: new Events(), b: new Events() };
    let writing = true;
    const writer = (async () => {
      for (let round = 0; writing; round++) await writeRates(Rate, 40, `handover-${round}`);
    })();
    const member = (name: 'a' | 'b') =>
      track(
        Rate.consume(
          {
            group: 'handover',
            memberId: `handover-${name}`,
            perShardInFlight: 2,
            from: 'latest',
            onEvent: events[name].hook,
          },
          async (cell, delivery) => {
            handled.add({
              shard: cell.shard!,
              id: num(cell.id!),
              attempt: delivery.attempt,
              replay: delivery.replay,
              by: name,
            });
            await new Promise((resolve) => setTimeout(resolve, 2));
          },
        ),
      );
    const a = member('a');
    await waitFor(() => a.shards.length === SHARDS && handled.all.length > 50, 10_000, 'a at work');
    // Where the group began: the cursors a was first assigned.
    const began = new Map(events.a.of('assigned').map((e) => [e.shard, num(e.cursor)]));
    // b joining: 8 shards revoked from a, released once their started cells are acknowledged.
    const b = member('b');
    await waitFor(() => a.shards.length === 8 && b.shards.length === 8, 10_000, 'an 8/8 split');
    await waitFor(() => handled.by('b').length > 50, 10_000, 'b at work');
    // a leaving: its cells finish and are acknowledged, its shards go to b.
    await a.close();
    await waitFor(() => b.shards.length === SHARDS, 10_000, 'b to own every shard');
    writing = false;
    await writer;
    const log = await logOf(Rate);
    await waitFor(
      () => {
        const counts = handled.counts();
        for (const [shard, ids] of log) {
          if (ids.some((id) => id > began.get(shard)! && !counts.has(`${shard}/${id}`))) {
            return false;
          }
        }
        return true;
      },
      20_000,
      'b to catch up with the log',
    );
    const twice = [...handled.counts()].filter(([, count]) => count > 1);
    expect(twice, 'cells handled twice').to.deep.equal([]);
    expect(handled.all.every((seen) => seen.attempt === 1)).to.equal(true);
    expect(handled.by('a').length).to.be.greaterThan(0);
    expect(events.a.of('revoked')).to.have.length(8);
    expect(events.a.of('released').map((e) => e.shard)).to.have.members(
      events.a.of('revoked').map((e) => e.shard),
    );
    expect(events.a.of('lost')).to.deep.equal([]);
    expect(events.a.of('left')).to.deep.equal([{ type: 'left', handedOver: true }]);
    expect(events.b.of('assigned')).to.have.length(SHARDS);
  });

  it('a handler that always throws: the cell is parked after maxDeliveries and the shard goes on', async () => {
    const events = new Events();
    const handled = new Handled();
    const consumer = track(
      Rate.consume(
        { group: 'poison', from: 'latest', maxDeliveries: 3, onEvent: events.hook },
        (cell, delivery) => {
          handled.add({
            shard: cell.shard!,
            id: num(cell.id!),
            attempt: delivery.attempt,
            replay: delivery.replay,
            by: 'a',
          });
          if (cell.body.poison === true) throw new TypeError(`cannot bill ${cell.uuid}`);
        },
      ),
    );
    await waitFor(() => consumer.shards.length === SHARDS, 10_000, 'every shard assigned');
    const poison = await Rate.put({
      hotel_id: 5,
      room_type: 'poison',
      check_in_date: '2026-05-02',
      gateway: 'g',
      discount_type: 'd',
      poison: true,
    });
    const shard = poison.base.shard!;
    const poisonId = num(poison.base.id!);
    // Cells after it on its shard, which must come once it is parked (the server puts a
    // turn's creates on a few shards: written until its shard has some).
    let after: number[] = [];
    for (let round = 0; after.length < 5; round++) {
      await writeRates(Rate, 50, `after-poison-${round}`);
      const page = await Rate.fetchLatestCells({ shard, cursor: poisonId, limit: 100 });
      after = page.cells.map((cell) => num(cell.id!));
    }
    await waitFor(
      () => after.every((id) => handled.all.some((x) => x.shard === shard && x.id === id)),
      15_000,
      'the cells after the parked one',
    );
    const tries = handled.all.filter((x) => x.shard === shard && x.id === poisonId);
    expect(tries.map((x) => x.attempt)).to.deep.equal([1, 2, 3]);
    // Strict order: nothing after it on its shard ran before it was parked.
    const lastTry = handled.all.indexOf(tries[2]!);
    const firstAfter = handled.all.findIndex((x) => x.shard === shard && x.id > poisonId);
    expect(firstAfter).to.be.greaterThan(lastTry);
    expect(events.of('failed').map((e) => [e.shard, num(e.id), e.attempt])).to.deep.equal([
      [shard, poisonId, 1],
      [shard, poisonId, 2],
      [shard, poisonId, 3],
    ]);
    expect(events.of('failed')[0]!.error).to.be.instanceOf(TypeError);
    expect(events.of('parked').map((e) => [e.shard, num(e.id), e.attempts])).to.deep.equal([
      [shard, poisonId, 3],
    ]);
    const parked = await store.parkedCells('rate', 'poison').toArray();
    expect(parked).to.have.length(1);
    expect(parked[0]).to.deep.include({ shard, id: poisonId, attempts: 3, replayPending: false });
    expect(parked[0]!.error).to.equal(`TypeError: cannot bill ${poison.uuid}`);
    expect(parked[0]!.cell).to.deep.include({ uuid: poison.uuid, name: 'base', refKey: 0 });
    expect(parked[0]!.cell!.body.poison).to.equal(true);
    const group = await store.describeConsumerGroup('rate', 'poison');
    expect(group.shards.map((s) => s.parked)).to.deep.equal(
      group.shards.map((s) => (s.shard === shard ? 1 : 0)),
    );
  });

  it('park() parks a cell at once; a replay delivers it again, and once acknowledged it is no longer parked', async () => {
    const handled = new Handled();
    let refuse = true;
    const consumer = track(
      Rate.consume({ group: 'parking', from: 'latest' }, (cell, delivery) => {
        handled.add({
          shard: cell.shard!,
          id: num(cell.id!),
          attempt: delivery.attempt,
          replay: delivery.replay,
          by: 'a',
        });
        if (cell.body.suspect === true && refuse) delivery.park('suspect rate');
      }),
    );
    await waitFor(() => consumer.shards.length === SHARDS, 10_000, 'every shard assigned');
    const suspect = await Rate.put({
      hotel_id: 6,
      room_type: 'suspect',
      check_in_date: '2026-05-03',
      gateway: 'g',
      discount_type: 'd',
      suspect: true,
    });
    const shard = suspect.base.shard!;
    const id = num(suspect.base.id!);
    await waitFor(
      async () => (await store.parkedCells(Rate, 'parking', { shard }).toArray()).length === 1,
      10_000,
      'the cell parked',
    );
    const [parked] = await store.parkedCells(Rate, 'parking', { shard }).toArray();
    expect(parked).to.deep.include({ shard, id, attempts: 1, error: 'suspect rate' });
    expect(handled.all.filter((x) => x.id === id && x.shard === shard)).to.have.length(1);

    refuse = false;
    await store.replayParkedCell(Rate, 'parking', { shard, id });
    await waitFor(
      () => handled.all.some((x) => x.shard === shard && x.id === id && x.replay),
      10_000,
      'the replay',
    );
    await waitFor(
      async () => (await store.parkedCells(Rate, 'parking').toArray()).length === 0,
      10_000,
      'the replayed cell no longer parked',
    );
    const replayError = await store.replayParkedCell(Rate, 'parking', { shard, id }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(replayError).to.be.instanceOf(NotFoundError);
  });

  it('from latest, and only the cells asked for', async () => {
    await writeRates(Rate, 20, 'before-latest');
    const handled: { name: string; uuid: string }[] = [];
    const controller = new AbortController();
    const events = new Events();
    const consumer = Rate.consume(
      {
        group: 'meta-only',
        from: 'latest',
        cells: ['meta'],
        signal: controller.signal,
        onEvent: events.hook,
      },
      (cell) => {
        handled.push({ name: cell.name, uuid: cell.uuid });
      },
    );
    await waitFor(() => consumer.shards.length === SHARDS, 10_000, 'every shard assigned');
    const record = await Rate.put({
      hotel_id: 7,
      room_type: 'meta',
      check_in_date: '2026-05-04',
      gateway: 'g',
      discount_type: 'd',
    });
    await record.cell('meta').update({ note: 'first' });
    await record.cell('meta').update({ note: 'second' });
    await waitFor(() => handled.length >= 2, 10_000, 'the meta cells');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(handled).to.deep.equal([
      { name: 'meta', uuid: record.uuid },
      { name: 'meta', uuid: record.uuid },
    ]);
    // Its signal closes it, as close() does.
    controller.abort();
    await consumer.closed;
    expect(consumer.shards).to.deep.equal([]);
    expect(events.of('left')).to.have.length(1);
    const group = await store.describeConsumerGroup(Rate, 'meta-only');
    expect(group.members).to.deep.equal([]);
  });

  it('resets cursors only while no member is connected', async () => {
    await writeRates(Rate, 50, 'reset');
    let count = 0;
    const first = track(Rate.consume({ group: 'reset', memberId: 'reset-1' }, () => void count++));
    const log = await logOf(Rate);
    const total = [...log.values()].reduce((sum, ids) => sum + ids.length, 0);
    await waitFor(() => count >= total, 20_000, 'every cell');
    const refused = await store.resetConsumerGroup('rate', 'reset', 'earliest').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(FailedPreconditionError);
    expect((refused as Error).message).to.include('reset-1');
    await first.close();

    const shards = await store.resetConsumerGroup('rate', 'reset', 'earliest');
    expect(shards.map((shard) => num(shard.cursor))).to.deep.equal(Array(SHARDS).fill(0));
    // One shard to a cursor: at most its highest id (past it, cells would be skipped).
    const end = await Rate.maxIdOnShard(3);
    const three = await store.resetConsumerGroup('rate', 'reset', { shard: 3, cursor: end });
    expect(num(three[3]!.cursor)).to.equal(num(end));
    const past = await store
      .resetConsumerGroup('rate', 'reset', { shard: 3, cursor: BigInt(end) + 1n })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(past).to.be.instanceOf(InvalidArgumentError);
    const latest = await store.resetConsumerGroup(Rate, 'reset', 'latest');
    expect(latest.every((shard) => shard.lag === 0)).to.equal(true);
  });

  it('refuses bad options at once, and stops for good on what joining again cannot mend', async () => {
    const noop = () => {};
    const refusals: [string, () => unknown][] = [
      ['group', () => Rate.consume({ group: '' }, noop)],
      ['group', () => Rate.consume({ group: 'a b' }, noop)],
      ['memberId', () => Rate.consume({ group: 'g', memberId: 'x'.repeat(65) }, noop)],
      ['maxInFlight', () => Rate.consume({ group: 'g', maxInFlight: 0 }, noop)],
      [
        'perShardInFlight',
        () => Rate.consume({ group: 'g', maxInFlight: 4, perShardInFlight: 5 }, noop),
      ],
      ['maxDeliveries', () => Rate.consume({ group: 'g', maxDeliveries: 101 }, noop)],
      ['sessionTimeoutMs', () => Rate.consume({ group: 'g', sessionTimeoutMs: 999 }, noop)],
      ['from', () => Rate.consume({ group: 'g', from: 'oldest' as never }, noop)],
      ['handler', () => Rate.consume({ group: 'g' }, 'nope' as never)],
      ['shard', () => store.parkedCells(Rate, 'g', { shard: -1 })],
      ['pageSize', () => store.parkedCells(Rate, 'g', { pageSize: 0 })],
    ];
    for (const [option, make] of refusals) {
      let error: unknown;
      try {
        make();
      } catch (thrown) {
        error = thrown;
      }
      expect(error, option).to.be.instanceOf(InvalidArgumentError);
      expect((error as Error).message, option).to.include(option);
    }
    expect(
      await store.replayParkedCell(Rate, 'g', { shard: 1, id: -1 }).then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).to.be.instanceOf(InvalidArgumentError);

    // A cell the model does not have: the server's NOT_FOUND stops the consumer.
    const events = new Events();
    const unknownCell = Rate.consume(
      { group: 'unknown-cell', cells: ['nope' as never], onEvent: events.hook },
      noop,
    );
    const stopped = await unknownCell.closed.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(stopped).to.be.instanceOf(NotFoundError);
    expect(events.of('stopped')[0]?.error).to.equal(stopped);
    expect(events.of('reconnecting')).to.deep.equal([]);
    await unknownCell.close(); // closing a stopped consumer is a no-op

    expect(
      await store.describeConsumerGroup('rate', 'never-joined').then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).to.be.instanceOf(NotFoundError);

    // Closing the store stops its consumers: closed rejects with CancelledError.
    const other = await connect({ endpoints: [fixture.server.address] });
    const OtherRate = await other.defineModel(RATE_SCHEMA);
    const orphan = OtherRate.consume({ group: 'orphan' }, noop);
    await waitFor(() => orphan.shards.length === SHARDS, 10_000, 'every shard assigned');
    await other.close();
    const cancelled = await orphan.closed.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(cancelled).to.be.instanceOf(CancelledError);
    expect(orphan.shards).to.deep.equal([]);
  });
});
