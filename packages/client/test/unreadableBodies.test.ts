// Issue 56: a server refuses a body nested deeper than readers read, but a store the gem wrote
// may already hold one (written by plain SQL here, as the gem would). Reading it fails for that
// cell alone, with an UnreadableBodyError naming it, when its body is used: a GetCells of many
// keys, a log read, a follower and a consumer group all deliver the other cells, and a
// consumer group parks it at once.

import { expect } from 'chai';
import mysql from 'mysql2/promise';
import {
  UnreadableBodyError,
  connect,
  type Cell,
  type Consumer,
  type Model,
  type Store,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { waitFor } from './support/consumers.js';
import { startStoreFixture, type StoreFixture } from './support/storeFixture.js';

type RateCell = Cell<typeof RATE_SCHEMA>;
const SHARDS = 4;
/** The body: a map whose value `a` is 200,000 arrays deep. */
const DEEP_BODY = Buffer.concat([
  Buffer.from([0x81, 0xa1, 0x61]),
  Buffer.alloc(200_000, 0x91),
  Buffer.from([0x01]),
]);
const shardOf = (uuid: string) => parseInt(uuid.slice(0, 4), 16) % SHARDS;

/** Whether using the cell's body throws an UnreadableBodyError naming this very cell. */
function unreadable(cell: RateCell): boolean {
  try {
    void cell.body;
    return false;
  } catch (error) {
    if (!(error instanceof UnreadableBodyError)) throw error;
    expect([error.model, error.uuid, error.cell, error.refKey]).to.deep.equal([
      'rate',
      cell.uuid,
      cell.name,
      cell.refKey,
    ]);
    expect(error.message).to.match(
      new RegExp(
        `^cell ${cell.name}@${cell.refKey} of rate ${cell.uuid}: the body cannot be read: nested deeper than 1000 levels`,
      ),
    );
    return true;
  }
}

describe('a body no SDK reads, stored around the server', function () {
  this.timeout(30_000);
  let fixture: StoreFixture;
  let store: Store;
  let Rate: Model<typeof RATE_SCHEMA>;
  let sql: mysql.Connection;
  /** The records; the meta cell of `deep` was written by SQL, the others' by the SDK. */
  let uuids: string[];
  let deep: string;
  const consumers: Consumer<typeof RATE_SCHEMA>[] = [];

  /** Inserts version `refKey` of `uuid`'s meta cell with the deep body, as the gem would. */
  async function insertDeepMeta(uuid: string, refKey: number): Promise<void> {
    const table = `sdk_rate_${String(shardOf(uuid)).padStart(6, '0')}`;
    await sql.query(
      `INSERT INTO ${table} (uuid, column_name, ref_key, body, created_at) VALUES (?, 'meta', ?, ?, NOW(6))`,
      [uuid, refKey, DEEP_BODY],
    );
  }

  before(async () => {
    fixture = await startStoreFixture({ shardsCount: SHARDS });
    store = await connect({ endpoints: [fixture.address] });
    Rate = await store.defineModel(RATE_SCHEMA);
    sql = await mysql.createConnection(fixture.databaseUrl);
    uuids = [];
    for (let hotel = 1; hotel <= 6; hotel++) {
      const rate = await Rate.put(rateValues(hotel, 'deep', '2026-12-01'));
      uuids.push(rate.uuid);
      if (hotel === 3) await insertDeepMeta(rate.uuid, 0);
      else await rate.meta.update({ n: hotel });
    }
    deep = uuids[2]!;
  });
  after(async () => {
    await Promise.all(consumers.map((consumer) => consumer.close()));
    await sql?.end();
    await store?.close();
    await fixture?.close();
  });

  it('GetCells of many keys reads them all; only that cell throws, once its body is used', async () => {
    const cells = await Rate.getCells(uuids.map((uuid) => ({ uuid, cell: 'meta' })));
    expect(cells.map((cell) => cell?.uuid)).to.deep.equal(uuids);
    expect(cells.map((cell) => unreadable(cell!))).to.deep.equal(
      uuids.map((uuid) => uuid === deep),
    );
    expect(cells.filter((cell) => cell!.uuid !== deep).map((cell) => cell!.body.n)).to.deep.equal([
      1, 2, 4, 5, 6,
    ]);
    // Its coordinates, and the record's other cells, are there as usual.
    const found = await Rate.find(deep, { cells: ['meta'] });
    expect(found!.base.body.hotel_id).to.equal(3);
    expect(found!.meta.refKey).to.equal(0);
    expect(unreadable(found!.meta)).to.equal(true);
  });

  it('a log read (Each) goes on past it, to the end of every shard', async () => {
    const cells: RateCell[] = [];
    for await (const cell of Rate.each({ batchSize: 2 })) cells.push(cell);
    const metas = cells.filter((cell) => cell.name === 'meta');
    expect(metas.map((cell) => cell.uuid)).to.have.members(uuids);
    expect(metas.filter(unreadable).map((cell) => cell.uuid)).to.deep.equal([deep]);
    expect(cells.filter((cell) => cell.name === 'base')).to.have.length(6);
  });

  it('a follower delivers it as it comes, and the cells after it', async () => {
    const controller = new AbortController();
    const cursors = new Map<number, bigint>();
    for (let shard = 0; shard < SHARDS; shard++) {
      cursors.set(shard, BigInt(await Rate.maxIdOnShard(shard)));
    }
    const seen: RateCell[] = [];
    const following = (async () => {
      for await (const cell of Rate.each({ follow: true, cursors, signal: controller.signal })) {
        seen.push(cell);
      }
    })().catch((error: unknown) => {
      if (!controller.signal.aborted) throw error;
    });
    try {
      await insertDeepMeta(deep, 1);
      const after = Rate.record(uuids[3]!);
      await after.meta.update({ n: 40 });
      await waitFor(
        () => seen.some((cell) => cell.uuid === uuids[3] && cell.name === 'meta'),
        10_000,
        'the write after the deep cell',
      );
      await waitFor(() => seen.some((cell) => cell.uuid === deep), 10_000, 'the deep cell');
    } finally {
      controller.abort();
      await following;
    }
    const delivered = seen.find((cell) => cell.uuid === deep)!;
    expect([delivered.name, delivered.refKey]).to.deep.equal(['meta', 1]);
    expect(unreadable(delivered)).to.equal(true);
    expect(seen.find((cell) => cell.uuid === uuids[3])!.body.n).to.equal(40);
  });

  it('a consumer group parks it at once, handles every other cell, and lists it', async () => {
    const handled = new Set<string>();
    const consumer = Rate.consume(
      { group: 'billing', from: 'earliest', maxDeliveries: 5 },
      (cell) => {
        // What a handler does with a cell: it reads its body.
        void cell.body.n;
        handled.add(`${cell.uuid}/${cell.name}@${cell.refKey}`);
      },
    );
    consumers.push(consumer);
    // Every base cell, and every meta version but the two deep ones (@0, @1).
    const expected = [
      ...uuids.map((uuid) => `${uuid}/base@0`),
      ...uuids.filter((uuid) => uuid !== deep).map((uuid) => `${uuid}/meta@0`),
      `${uuids[3]}/meta@1`,
    ];
    await waitFor(
      () => expected.every((key) => handled.has(key)),
      15_000,
      () =>
        `every readable cell handled: ${expected.filter((key) => !handled.has(key)).join(', ')}`,
    );
    await waitFor(
      async () => (await store.parkedCells(Rate, 'billing').toArray()).length === 2,
      10_000,
      'both deep cells parked',
    );
    const parked = await store.parkedCells(Rate, 'billing').toArray();
    expect(
      parked.map((cell) => [cell.cell!.uuid, cell.cell!.refKey, cell.attempts]),
    ).to.have.deep.members([
      [deep, 0, 1],
      [deep, 1, 1],
    ]);
    for (const cell of parked) {
      expect(cell.shard).to.equal(shardOf(deep));
      expect(cell.error).to.match(
        /^cell meta@[01] of rate .*: the body cannot be read: nested deeper/,
      );
      expect(() => cell.cell!.body).to.throw(UnreadableBodyError);
    }
    expect([...handled].some((key) => key.startsWith(`${deep}/meta`))).to.equal(false);
  });
});
