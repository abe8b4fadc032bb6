// PutMany and WhereMany: the batch forms of Put and Where that the SDK sends for calls made
// concurrently. Each item behaves as its single call would; a malformed item fails the call
// and names itself.
import { expect } from 'chai';
import { Operator, type PutResult } from '@shameless/proto';
import { status } from '@grpc/grpc-js';
import { rejection } from '../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { int, str } from '../support/indexValues.js';

const rate = (hotelId: number, date: string, extra: Record<string, unknown> = {}) => ({
  hotel_id: hotelId,
  room_type: '1 bed',
  check_in_date: date,
  gateway: 'pegasus',
  discount_type: 'geo',
  ...extra,
});

function written(result: PutResult | undefined) {
  if (result?.outcome?.$case !== 'put')
    throw new Error(`expected a put, got ${JSON.stringify(result)}`);
  return result.outcome.put;
}

describe('batch RPCs: PutMany and WhereMany', function () {
  let store: StoreFixture;

  before(async () => {
    store = await startStoreFixture({ shardsCount: 4 });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());

  const putOf = (values: Record<string, unknown>, id = requestId()) => ({
    model: 'rate',
    values: pack(values),
    requestId: id,
  });

  describe('PutMany', () => {
    it('creates and updates, one result per put in request order', async () => {
      const existing = await store.api.put(putOf(rate(501, '2026-01-01', { net_price: 1 })));
      const { results } = await store.api.putMany({
        puts: [
          putOf(rate(501, '2026-01-01', { net_price: 2 })),
          putOf(rate(502, '2026-01-01', { net_price: 3 })),
        ],
      });
      expect(results).to.have.length(2);
      const update = written(results[0]);
      expect(update.uuid).to.equal(existing.uuid);
      expect(update.created).to.equal(false);
      expect(update.base?.refKey).to.equal(1);
      expect(unpack(update.base!.body)).to.include({ net_price: 2, hotel_id: 501 });
      const create = written(results[1]);
      expect(create.created).to.equal(true);
      expect(create.base?.refKey).to.equal(0);
    });

    it('converges two puts of the same new values on one record', async () => {
      const { results } = await store.api.putMany({
        puts: [
          putOf(rate(503, '2026-01-01', { net_price: 1 })),
          putOf(rate(503, '2026-01-01', { net_price: 2 })),
        ],
      });
      const [first, second] = results.map(written);
      expect(first!.uuid).to.equal(second!.uuid);
      expect([first!.created, second!.created].sort()).to.deep.equal([false, true]);
      expect([first!.base!.refKey, second!.base!.refKey].sort()).to.deep.equal([0, 1]);
    });

    it("puts a batch's new records in as many content shards as it has write transactions", async () => {
      const puts = Array.from({ length: 16 }, (_, i) => putOf(rate(600 + i, '2026-01-01')));
      const created = (await store.api.putMany({ puts })).results.map(written);
      expect(created.every((put) => put.created)).to.equal(true);
      const shards = new Set(created.map((put) => store.engine.layout.contentShard(put.uuid)));
      // Random uuids would spread sixteen records over all four shards but once in 10,000.
      expect(shards.size).to.equal(2);
    });

    it('replays a batch sent again with the same request ids', async () => {
      const puts = [putOf(rate(504, '2026-01-01')), putOf(rate(505, '2026-01-01'))];
      const first = (await store.api.putMany({ puts })).results.map(written);
      const again = (await store.api.putMany({ puts })).results.map(written);
      expect(again.map((put) => [put.uuid, put.base!.id, put.created])).to.deep.equal(
        first.map((put) => [put.uuid, put.base!.id, put.created]),
      );
    });

    it('refuses the whole call for a malformed put, naming it, and writes nothing', async () => {
      const error = await rejection(
        store.api.putMany({
          puts: [putOf(rate(506, '2026-01-01')), putOf({ hotel_id: 506, room_type: '1 bed' })],
        }),
      );
      expect(error.code).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(/^puts\[1\]\.values: check_in_date is required/);
      expect(error.metadata.get('shameless-field')).to.deep.equal(['puts[1].values']);
      const found = await store.api.where({
        conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(506)] }],
      });
      expect(found.flatMap((page) => page.records)).to.deep.equal([]);
    });

    it('names an unknown model and a missing request id by position', async () => {
      const unknown = await rejection(
        store.api.putMany({
          puts: [putOf(rate(507, '2026-01-01')), { ...putOf({}), model: 'nope' }],
        }),
      );
      expect(unknown.code).to.equal(status.NOT_FOUND);
      expect(unknown.details).to.match(/^puts\[1\]\.model: model "nope" is not defined/);
      const noId = await rejection(
        store.api.putMany({ puts: [{ ...putOf(rate(507, '2026-01-01')), requestId: '' }] }),
      );
      expect(noId.code).to.equal(status.INVALID_ARGUMENT);
      expect(noId.details).to.match(/^puts\[0\]\.request_id: is required/);
    });

    it('refuses an empty batch and one of more than 1000 puts', async () => {
      const empty = await rejection(store.api.putMany({ puts: [] }));
      expect(empty.code).to.equal(status.INVALID_ARGUMENT);
      expect(empty.details).to.match(/^puts: at least one/);
      const many = Array.from({ length: 1001 }, (_, i) => putOf(rate(600 + i, '2026-01-01')));
      const tooMany = await rejection(store.api.putMany({ puts: many }));
      expect(tooMany.code).to.equal(status.INVALID_ARGUMENT);
      expect(tooMany.details).to.match(/^puts: at most 1000 per call, got 1001/);
    });
  });

  describe('WhereMany', () => {
    before(async () => {
      for (const date of ['2026-02-01', '2026-02-02', '2026-02-03']) {
        await store.api.put(putOf(rate(510, date, { net_price: 10 })));
      }
      await store.api.put(putOf(rate(511, '2026-02-01', { net_price: 11 })));
    });

    const hotel = (id: number) => ({
      field: 'hotel_id',
      op: Operator.OPERATOR_EQ,
      values: [int(id)],
    });

    it('answers each query with its own page, in request order', async () => {
      const { pages } = await store.api.whereMany([
        { conditions: [hotel(511)] },
        { conditions: [hotel(510)], limit: 2 },
        { conditions: [hotel(999)] },
        {
          conditions: [
            hotel(510),
            { field: 'check_in_date', op: Operator.OPERATOR_EQ, values: [str('2026-02-03')] },
          ],
        },
      ]);
      expect(pages).to.have.length(4);
      expect(pages[0]!.records.map((r) => unpack(r.cells[0]!.body).hotel_id)).to.deep.equal([511]);
      expect(pages[1]!.records.map((r) => unpack(r.cells[0]!.body).check_in_date)).to.deep.equal([
        '2026-02-01',
        '2026-02-02',
      ]);
      expect(pages[1]!.nextPageToken).to.not.equal('');
      expect(pages[2]!.records).to.deep.equal([]);
      expect(pages[2]!.nextPageToken).to.equal('');
      expect(pages[3]!.records.map((r) => unpack(r.cells[0]!.body).check_in_date)).to.deep.equal([
        '2026-02-03',
      ]);

      const rest = await store.api.whereMany([
        { conditions: [hotel(510)], limit: 2, pageToken: pages[1]!.nextPageToken },
      ]);
      expect(
        rest.pages[0]!.records.map((r) => unpack(r.cells[0]!.body).check_in_date),
      ).to.deep.equal(['2026-02-03']);
    });

    it('names a malformed query by position', async () => {
      const badValue = await rejection(
        store.api.whereMany([
          { conditions: [hotel(510)] },
          { conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [str('x')] }] },
        ]),
      );
      expect(badValue.code).to.equal(status.INVALID_ARGUMENT);
      expect(badValue.details).to.match(
        /^queries\[1\]\.conditions\[0\]\.values: hotel_id must be an integer/,
      );
      const noShard = await rejection(store.api.whereMany([{ conditions: [] }]));
      expect(noShard.details).to.match(
        /^queries\[0\]\.conditions: a condition hotel_id = <integer> is required/,
      );
      const unknownIndex = await rejection(
        store.api.whereMany([{ index: 'nope', conditions: [hotel(510)] }]),
      );
      expect(unknownIndex.code).to.equal(status.NOT_FOUND);
      expect(unknownIndex.details).to.match(/^queries\[0\]: model rate has no index "nope"/);
    });

    it('bounds the records asked for in all', async () => {
      const error = await rejection(
        store.api.whereMany(Array.from({ length: 11 }, () => ({ conditions: [hotel(510)] }))),
      );
      expect(error.code).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(/^queries: ask for at most 10000 records in all .* got 11000/);
      const fine = await store.api.whereMany(
        Array.from({ length: 20 }, () => ({ conditions: [hotel(511)], limit: 500 })),
      );
      expect(fine.pages).to.have.length(20);
    });
  });
});
