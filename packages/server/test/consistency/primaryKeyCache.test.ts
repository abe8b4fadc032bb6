// Puts and point Wheres through remembered primary values (primaryKeyCache.ts, putRoute.ts):
// two servers over one database, each with its own cache, and rows changed behind their back
// with plain SQL. Whatever a server remembers, a put appends only to the record the primary
// index leads to when it commits, a point Where answers only with that record, a create tried
// first leaves nothing behind when the values turn out taken, and a retried put gets its one
// version back whichever way it went.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { Operator, type PutResponse } from '@shameless/proto';
import mysql from 'mysql2/promise';
import {
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { type SharedStore, grpcCode, startSharedStore } from './support.js';

const SHARDS = 4;
const NAMESPACE = 'test';
const pad = (shard: number) => String(shard).padStart(6, '0');
const contentTables = Array.from({ length: SHARDS }, (_, s) => `${NAMESPACE}_rate_${pad(s)}`);
const primaryTable = (hotel: number) => `${NAMESPACE}_rate_primary_index_${pad(hotel % SHARDS)}`;
const secondaryTables = Array.from(
  { length: SHARDS },
  (_, s) => `${NAMESPACE}_rate_secondary_index_${pad(s)}`,
);

let nextHotel = 100;
/** Fresh primary values, with every index field (a create takes them). */
function freshRate(extra: Record<string, unknown> = {}) {
  nextHotel += 1;
  return {
    hotel_id: nextHotel,
    room_type: 'double',
    check_in_date: '2026-03-01',
    gateway: 'pegasus',
    discount_type: 'geo',
    ...extra,
  };
}
type Rate = ReturnType<typeof freshRate>;

describe('consistency: puts and point Wheres through remembered primary values', function () {
  this.timeout(60_000);
  let shared: SharedStore;
  let a: StoreFixture;
  let b: StoreFixture;
  let sql: mysql.Connection;

  before(async () => {
    shared = await startSharedStore(SHARDS, NAMESPACE);
    ({ a, b, sql } = shared);
  });
  after(() => shared?.close());

  const put = (store: StoreFixture, values: Record<string, unknown>, id = requestId()) =>
    store.api.put({ model: 'rate', values: pack(values), requestId: id });
  const cacheHits = (store: StoreFixture) => store.engine.primaryKeyCacheStats().hits;

  /** Every version of every cell of `uuid`, as `cell:refKey`. */
  async function versionsOf(uuid: string): Promise<string[]> {
    const found: string[] = [];
    for (const table of contentTables) {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT column_name, ref_key FROM \`${table}\` WHERE uuid = ? ORDER BY column_name, ref_key`,
        [uuid],
      );
      found.push(...rows.map((row) => `${row.column_name}:${row.ref_key}`));
    }
    return found;
  }

  /** The uuids the secondary index holds for a hotel. */
  async function secondaryRowsOf(hotel: number): Promise<string[]> {
    const uuids: string[] = [];
    for (const table of secondaryTables) {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT uuid FROM \`${table}\` WHERE hotel_id = ?`,
        [hotel],
      );
      uuids.push(...rows.map((row) => String(row.uuid)));
    }
    return uuids;
  }

  async function baseCellsOfHotel(hotel: number): Promise<number> {
    let count = 0;
    for (const table of contentTables) {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT body FROM \`${table}\` WHERE column_name = 'base' AND ref_key = 0`,
      );
      count += rows.filter((row) => unpack(row.body as Buffer).hotel_id === hotel).length;
    }
    return count;
  }

  /** Makes the primary row of `rate` lead to `uuid` instead, as manual SQL could. */
  async function repoint(rate: Rate, uuid: string): Promise<void> {
    await sql.query(
      `UPDATE \`${primaryTable(rate.hotel_id)}\` SET uuid = ?
        WHERE hotel_id = ? AND room_type = ? AND check_in_date = ?`,
      [uuid, rate.hotel_id, rate.room_type, rate.check_in_date],
    );
  }

  async function pointWhere(store: StoreFixture, rate: Rate): Promise<string[]> {
    const messages = await store.api.where({
      conditions: [
        {
          field: 'hotel_id',
          op: Operator.OPERATOR_EQ,
          values: [{ kind: { $case: 'integer', integer: BigInt(rate.hotel_id) } }],
        },
        {
          field: 'room_type',
          op: Operator.OPERATOR_EQ,
          values: [{ kind: { $case: 'string', string: rate.room_type } }],
        },
        {
          field: 'check_in_date',
          op: Operator.OPERATOR_EQ,
          values: [{ kind: { $case: 'string', string: rate.check_in_date } }],
        },
      ],
    });
    return messages.flatMap((message) => message.records.map((record) => record.uuid));
  }

  it('a put of values another server created updates that record, and the create it tried first leaves nothing behind', async () => {
    const rate = freshRate({ price: 1 });
    const created = await put(a, rate);
    expect(created.created).to.equal(true);
    // b has never seen these values: it tries the create first, finds them taken, updates.
    const updated = await put(b, { ...rate, price: 2 });
    expect(updated).to.deep.include({ uuid: created.uuid, created: false });
    expect(updated.base!.refKey).to.equal(1);
    expect(unpack(updated.base!.body).price).to.equal(2);
    expect(await versionsOf(created.uuid)).to.deep.equal(['base:0', 'base:1']);
    expect(await baseCellsOfHotel(rate.hotel_id), 'no base cell of the tried create').to.equal(1);
    expect(await secondaryRowsOf(rate.hotel_id), 'no index row of the tried create').to.deep.equal([
      created.uuid,
    ]);
    // Now b remembers them: the next put goes straight to the record.
    const hits = cacheHits(b);
    const again = await put(b, { ...rate, price: 3 });
    expect(again.base!.refKey).to.equal(2);
    expect(cacheHits(b)).to.equal(hits + 1);
  });

  it('a retried put gets its one version back, whether remembered, found by a tried create or looked up', async () => {
    const rate = freshRate();
    const created = await put(a, rate);
    const id = requestId();
    const first = await put(b, { ...rate, price: 10 }, id);
    expect(first.base!.refKey).to.equal(1);
    const answers: PutResponse[] = [];
    answers.push(await put(b, { ...rate, price: 10 }, id)); // remembered by b
    const c = await startStoreFixture({
      shardsCount: SHARDS,
      namespace: NAMESPACE,
      partitionUrls: a.partitionUrls,
    });
    try {
      await c.api.describeStore({});
      answers.push(await put(c, { ...rate, price: 10 }, id)); // c: tries the create first
    } finally {
      await c.close();
    }
    answers.push(await put(a, { ...rate, price: 10 }, id)); // a remembers it from the create
    for (const answer of answers) {
      expect(answer).to.deep.include({ uuid: created.uuid, created: false });
      expect(answer.base!.refKey).to.equal(1);
      expect(answer.base!.id).to.equal(first.base!.id);
    }
    expect(await versionsOf(created.uuid)).to.deep.equal(['base:0', 'base:1']);
  });

  it('a put whose remembered record no longer holds the values appends to the record that does', async () => {
    const rate = freshRate();
    const x = await put(a, rate); // a remembers rate → x
    const y = await put(a, freshRate());
    await repoint(rate, y.uuid);
    const hits = cacheHits(a);
    const updated = await put(a, { ...rate, price: 5 });
    expect(cacheHits(a), 'the remembered record was tried').to.equal(hits + 1);
    expect(updated).to.deep.include({ uuid: y.uuid, created: false });
    expect(await versionsOf(x.uuid), 'nothing appended to the record left behind').to.deep.equal([
      'base:0',
    ]);
    expect(await versionsOf(y.uuid)).to.deep.equal(['base:0', 'base:1']);
  });

  it('a batch of puts through remembered records writes each, and the one whose values moved to another record goes there', async () => {
    // Six records over the four primary tables, so that some tables are checked for two rows.
    const rates = Array.from({ length: 6 }, () => freshRate());
    const records: PutResponse[] = [];
    for (const rate of rates) records.push(await put(a, rate));
    const y = await put(a, freshRate());
    await repoint(rates[4]!, y.uuid);
    const hits = cacheHits(a);
    const puts = [...rates, rates[1]!].map((rate, i) => ({
      model: 'rate',
      values: pack({ ...rate, price: 100 + i }),
      requestId: requestId(),
    }));
    const { results } = await a.api.putMany({ puts });
    expect(cacheHits(a), 'every put went to its remembered record first').to.equal(hits + 7);
    const written = results.map((result) => {
      expect(result.outcome?.$case).to.equal('put');
      return (result.outcome as { put: PutResponse }).put;
    });
    written.forEach((answer, i) => {
      const expected = i === 4 ? y.uuid : records[i === 6 ? 1 : i]!.uuid;
      expect(answer, `put ${i}`).to.deep.include({ uuid: expected, created: false });
      expect(unpack(answer.base!.body).price).to.equal(100 + i);
    });
    expect(
      await versionsOf(records[4]!.uuid),
      'nothing appended to the record left behind',
    ).to.deep.equal(['base:0']);
    expect(await versionsOf(y.uuid)).to.deep.equal(['base:0', 'base:1']);
    expect(await versionsOf(records[1]!.uuid), 'one record put twice').to.deep.equal([
      'base:0',
      'base:1',
      'base:2',
    ]);
    for (const i of [0, 2, 3, 5]) {
      expect(await versionsOf(records[i]!.uuid)).to.deep.equal(['base:0', 'base:1']);
    }
  });

  it('a put whose values were taken out of the primary index creates a record for them again', async () => {
    const rate = freshRate();
    const x = await put(a, rate);
    await sql.query(
      `DELETE FROM \`${primaryTable(rate.hotel_id)}\`
        WHERE hotel_id = ? AND room_type = ? AND check_in_date = ?`,
      [rate.hotel_id, rate.room_type, rate.check_in_date],
    );
    const again = await put(a, { ...rate, price: 7 });
    expect(again.created).to.equal(true);
    expect(again.uuid).to.not.equal(x.uuid);
    expect(await versionsOf(x.uuid)).to.deep.equal(['base:0']);
    expect(await pointWhere(a, rate)).to.deep.equal([again.uuid]);
  });

  it('a point Where answers with the remembered record only while the primary index leads there', async () => {
    const rate = freshRate();
    const x = await put(a, rate);
    const y = await put(a, freshRate());
    let hits = cacheHits(a);
    expect(await pointWhere(a, rate)).to.deep.equal([x.uuid]);
    expect(cacheHits(a), 'answered from the remembered record').to.equal(hits + 1);
    await repoint(rate, y.uuid);
    hits = cacheHits(a);
    expect(await pointWhere(a, rate)).to.deep.equal([y.uuid]);
    expect(cacheHits(a)).to.equal(hits + 1);
    // b learns the values from its own Where, and answers the next one from memory.
    expect(await pointWhere(b, rate)).to.deep.equal([y.uuid]);
    hits = cacheHits(b);
    expect(await pointWhere(b, rate)).to.deep.equal([y.uuid]);
    expect(cacheHits(b)).to.equal(hits + 1);
    await sql.query(
      `DELETE FROM \`${primaryTable(rate.hotel_id)}\`
        WHERE hotel_id = ? AND room_type = ? AND check_in_date = ?`,
      [rate.hotel_id, rate.room_type, rate.check_in_date],
    );
    expect(await pointWhere(a, rate)).to.deep.equal([]);
    expect(await pointWhere(b, rate)).to.deep.equal([]);
  });

  it('values without the secondary fields update the record that holds them on a server that never saw them, and create nothing', async () => {
    const rate = freshRate();
    const created = await put(a, rate);
    const partial = {
      hotel_id: rate.hotel_id,
      room_type: rate.room_type,
      check_in_date: rate.check_in_date,
      price: 9,
    };
    const updated = await put(b, partial);
    expect(updated).to.deep.include({ uuid: created.uuid, created: false });
    const missing = await put(b, { ...partial, check_in_date: '2026-03-02' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(grpcCode(missing)).to.equal(status.INVALID_ARGUMENT);
    expect((missing as { details: string }).details).to.match(/gateway is required/);
  });
});
