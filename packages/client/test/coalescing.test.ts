// Call coalescing against a real server and MariaDB: calls made in the same tick go as one
// GetCells, WriteCells, PutMany or WhereMany call; a lone call goes as itself; each caller gets
// its own answer or the typed error its single call would have had, under its own deadline and
// AbortSignal. What goes on the wire is recorded below the coalescing layer (a
// RecordingTransport over a real transport); the counters are the transport's own.

import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { setTimeout as sleep } from 'node:timers/promises';
import { pack } from 'msgpackr';
import {
  Operator,
  type GetCellRequest,
  type GetCellsRequest,
  type PutManyRequest,
  type PutRequest,
  type WhereManyRequest,
  type WhereRequest,
  type WriteCellRequest,
  type WriteCellsRequest,
} from '@shameless/proto';
import { DEFAULT_QUERY_LIMITS } from '@shameless/server';
import { startTcpProxy, type TcpProxy } from '@shameless/testkit';
import {
  CancelledError,
  ConflictError,
  DeadlineExceededError,
  AlreadyExistsError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
  coalesceCalls,
  connect,
  createTransport,
  type ClientMiddleware,
  type ExactInteger,
  type Model,
  type RecordOf,
  type Store,
  type TransportOptions,
  type TransportStats,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { startTwoServers, type TwoServers } from './support/serveProcess.js';
import {
  RecordingTransport,
  rejection,
  startStoreFixture,
  type StoreFixture,
} from './support/storeFixture.js';

type Rate = typeof RATE_SCHEMA;

const MISSING_UUID = '11111111-1111-4111-8111-111111111111';
const READ = { idempotent: true, hedgeable: true } as const;
const WRITE = { idempotent: true, hedgeable: false } as const;

const HOTEL_SCHEMA = {
  name: 'hotel',
  primary: { fields: { hotel_id: 'integer' }, shardOn: 'hotel_id' },
} as const;

/** A store whose coalescing layer sends its calls through a recording of the wire. */
interface WireStore {
  readonly store: Store;
  /** Every call the coalescing layer sent, as it sent it. */
  readonly wire: RecordingTransport;
  readonly Rate: Model<Rate>;
  /** The methods sent since the last `wire.reset()`, in order. */
  sent(): string[];
  /** The counters' change since the last `wire.reset()`. */
  counted(): TransportStats;
}

async function storeOverWire(
  address: string,
  options: Partial<TransportOptions> = {},
): Promise<WireStore> {
  const wire = new RecordingTransport(createTransport({ endpoints: [address], ...options }));
  const transport = coalesceCalls(wire, {
    defaultDeadlineMs: options.deadlineMs ?? 5000,
    maxBatchesInFlight: options.maxBatchesInFlight,
    maxHoldMs: options.maxHoldMs,
  });
  const store = await connect({ transport, closeTransport: true });
  const Rate = await store.defineModel(RATE_SCHEMA);
  let before = store.transport.stats();
  const reset = wire.reset.bind(wire);
  wire.reset = () => {
    reset();
    before = store.transport.stats();
  };
  wire.reset();
  return {
    store,
    wire,
    Rate,
    sent: () => wire.calls.map((call) => call.method),
    counted: () => difference(store.transport.stats(), before),
  };
}

function difference(after: TransportStats, before: TransportStats): TransportStats {
  const delta = { ...after };
  for (const key of Object.keys(delta) as (keyof TransportStats)[]) delta[key] -= before[key];
  return delta;
}

describe('coalescing', function () {
  this.timeout(30_000);
  let fixture: StoreFixture;
  let hotel = 100;

  before(async () => {
    fixture = await startStoreFixture();
  });
  after(async () => {
    await fixture?.close();
  });

  describe('calls made in the same tick go as one batch call per kind', () => {
    let ws: WireStore;
    let Rate: Model<Rate>;
    const newRates = (count: number, content: Record<string, unknown> = {}) => {
      const hotelId = ++hotel;
      return Promise.all(
        Array.from({ length: count }, (_, i) =>
          Rate.put(rateValues(hotelId, `room ${i}`, '2026-12-01', { ...content, n: i })),
        ),
      );
    };

    before(async () => {
      ws = await storeOverWire(fixture.address);
      Rate = ws.Rate;
    });
    beforeEach(() => ws.wire.reset());
    after(async () => {
      await ws?.store.close();
    });

    it('a lone call goes as its single call: GetCell, WriteCell, Put, Where', async () => {
      const rate = await Rate.put(rateValues(++hotel, '1 bed', '2026-12-01', { net_price: 1 }));
      await rate.set('net_price', 2).save();
      await rate.meta.update({ note: 'a' });
      const found = await Rate.find(rate.uuid);
      await found?.reload();
      const first = await Rate.where({
        hotel_id: hotel,
        room_type: '1 bed',
        check_in_date: '2026-12-01',
      }).first();
      expect(ws.sent()).to.deep.equal([
        'put',
        'writeCell',
        'writeCell',
        'getCell',
        'getCell',
        'where',
      ]);
      expect(found?.get('net_price')).to.equal(2);
      expect(first?.uuid).to.equal(rate.uuid);
      expect(ws.counted()).to.include({ coalescedCalls: 0, coalescedBatches: 0, calls: 6 });
    });

    it('concurrent finds (Promise.all) go as one GetCells; each caller gets its own record', async () => {
      const rates = await newRates(5);
      ws.wire.reset();
      const found = await Promise.all([
        ...rates.map((rate) => Rate.find(rate.uuid)),
        Rate.find(MISSING_UUID),
      ]);
      expect(ws.sent()).to.deep.equal(['getCells']);
      const sent = ws.wire.calls[0]?.request as GetCellsRequest;
      expect(sent.keys.map((key) => key.uuid)).to.deep.equal([
        ...rates.map((rate) => rate.uuid),
        MISSING_UUID,
      ]);
      expect(found.map((record) => record?.uuid)).to.deep.equal([
        ...rates.map((rate) => rate.uuid),
        undefined,
      ]);
      expect(found.map((record) => record?.get('n'))).to.deep.equal([0, 1, 2, 3, 4, undefined]);
      expect(ws.counted()).to.include({ coalescedCalls: 6, coalescedBatches: 1, calls: 1 });
      // The batch is marked as the reads it carries.
      expect(ws.wire.calls[0]?.options).to.include(READ);
    });

    it('a loop of un-awaited reloads and finds of several cells go as one GetCells', async () => {
      const rates = await newRates(4);
      ws.wire.reset();
      const pending: Promise<unknown>[] = [];
      for (const rate of rates) pending.push(rate.reload());
      for (const rate of rates) pending.push(Rate.find(rate.uuid, { cells: ['meta'] }));
      await Promise.all(pending);
      expect(ws.sent()).to.deep.equal(['getCells']);
      const keys = (ws.wire.calls[0]?.request as GetCellsRequest).keys;
      expect(keys).to.have.length(4 + 4 * 2);
      expect(ws.counted()).to.include({ coalescedCalls: 12, coalescedBatches: 1 });
    });

    it('finds of two models go as one GetCells per model', async () => {
      const Hotel = await ws.store.defineModel(HOTEL_SCHEMA);
      const [rate] = await newRates(1);
      const inn = await Hotel.put({ hotel_id: ++hotel, name: 'inn' });
      ws.wire.reset();
      const [a, b, c, d] = await Promise.all([
        Rate.find(rate!.uuid),
        Hotel.find(inn.uuid),
        Rate.find(MISSING_UUID),
        Hotel.find(MISSING_UUID),
      ]);
      expect(ws.sent()).to.deep.equal(['getCells', 'getCells']);
      const models = ws.wire.calls.map((call) => (call.request as GetCellsRequest).model);
      expect(models.sort()).to.deep.equal(['hotel', 'rate']);
      expect([a?.uuid, b?.get('name'), c, d]).to.deep.equal([
        rate!.uuid,
        'inn',
        undefined,
        undefined,
      ]);
    });

    it('concurrent saves and updates go as one WriteCells; each cell holds its own version', async () => {
      const rates = await newRates(4);
      ws.wire.reset();
      await Promise.all([
        ...rates.slice(0, 2).map((rate, i) => rate.set('net_price', 10 + i).save()),
        ...rates.slice(2).map((rate, i) => Rate.record(rate.uuid).meta.update({ note: `n${i}` })),
      ]);
      expect(ws.sent()).to.deep.equal(['writeCells']);
      const writes = (ws.wire.calls[0]?.request as WriteCellsRequest).writes;
      expect(writes.map((write) => [write.uuid, write.cell])).to.deep.equal([
        [rates[0]!.uuid, 'base'],
        [rates[1]!.uuid, 'base'],
        [rates[2]!.uuid, 'meta'],
        [rates[3]!.uuid, 'meta'],
      ]);
      expect(ws.wire.calls[0]?.options).to.include(WRITE);
      expect(rates.slice(0, 2).map((rate) => [rate.refKey, rate.get('net_price')])).to.deep.equal([
        [1, 10],
        [1, 11],
      ]);
      ws.wire.reset();
      const again = await Promise.all(
        rates.map((rate) => Rate.find(rate.uuid, { cells: ['meta'] })),
      );
      expect(ws.sent()).to.deep.equal(['getCells']);
      expect(again.map((record) => record?.get('net_price') ?? null)).to.deep.equal([
        10,
        11,
        null,
        null,
      ]);
      expect(again.map((record) => record?.meta.get('note') ?? null)).to.deep.equal([
        null,
        null,
        'n0',
        'n1',
      ]);
      expect(again.map((record) => record?.meta.refKey ?? null)).to.deep.equal([null, null, 0, 0]);
    });

    it('concurrent puts go as one PutMany: creates and updates, each its own record', async () => {
      const [existing] = await newRates(1, { net_price: 1 });
      const hotelId = existing!.get('hotel_id') as number;
      ws.wire.reset();
      const [updated, created, other] = await Promise.all([
        Rate.put(rateValues(hotelId, 'room 0', '2026-12-01', { net_price: 2 })),
        Rate.put(rateValues(hotelId, 'suite', '2026-12-01', { net_price: 3 })),
        Rate.put(rateValues(hotelId, 'suite', '2026-12-02', { net_price: 4 })),
      ]);
      expect(ws.sent()).to.deep.equal(['putMany']);
      const puts = (ws.wire.calls[0]?.request as PutManyRequest).puts;
      expect(new Set(puts.map((put) => put.requestId)).size, 'one requestId per put').to.equal(3);
      expect(ws.wire.calls[0]?.options).to.include(WRITE);
      expect([updated.uuid, updated.refKey, updated.get('net_price')]).to.deep.equal([
        existing!.uuid,
        1,
        2,
      ]);
      expect([created.refKey, created.get('net_price'), other.refKey]).to.deep.equal([0, 3, 0]);
      expect(new Set([existing!.uuid, created.uuid, other.uuid]).size).to.equal(3);
    });

    it('concurrent where lookups go as one WhereMany per round of pages', async () => {
      const rates = await newRates(5);
      const hotelId = rates[0]!.get('hotel_id') as number;
      ws.wire.reset();
      const [pointLookups, missing, all] = await Promise.all([
        Promise.all(
          rates.map((rate) =>
            Rate.where({
              hotel_id: hotelId,
              room_type: rate.get('room_type') as string,
              check_in_date: '2026-12-01',
            }).first(),
          ),
        ),
        Rate.where({ hotel_id: hotelId, room_type: 'none', check_in_date: '2026-12-01' }).first(),
        // Pages of 2: each round of pages is answered together, and its callers ask for their
        // next pages in the same tick.
        Rate.where({ hotel_id: hotelId }, { pageSize: 2 }).toArray(),
      ]);
      expect(pointLookups.map((record) => record?.uuid)).to.deep.equal(rates.map((r) => r.uuid));
      expect(missing).to.equal(undefined);
      expect(all.map((record) => record.get('n'))).to.deep.equal([0, 1, 2, 3, 4]);
      // The first WhereMany carries the 5 point lookups, the miss and the first page of 2; the
      // next two pages are single Where calls, each alone in its tick.
      expect(ws.sent()).to.deep.equal(['whereMany', 'where', 'where']);
      const queries = (ws.wire.calls[0]?.request as WhereManyRequest).queries;
      expect(queries.map((query) => query.limit)).to.deep.equal([1, 1, 1, 1, 1, 1, 2]);
      expect(ws.wire.calls[0]?.options).to.include(READ);
    });

    it("a queue over the server's bounds goes as several calls", async () => {
      const [rate] = await newRates(1);
      const hotelId = rate!.get('hotel_id') as number;
      ws.wire.reset();
      // Pages of 1000 records: a WhereMany asks for 10,000 records at most, so 10 of the 11
      // queries share one and the last goes alone.
      const pages = await Promise.all(
        Array.from({ length: 11 }, () => Rate.where({ hotel_id: hotelId }).toArray()),
      );
      expect(pages.map((page) => page.map((record) => record.uuid))).to.deep.equal(
        Array.from({ length: 11 }, () => [rate!.uuid]),
      );
      expect(ws.sent()).to.deep.equal(['whereMany', 'where']);
      expect((ws.wire.calls[0]?.request as WhereManyRequest).queries).to.have.length(10);
    });

    it('point queries of the whole primary key ask for one record a page: many share a WhereMany', async () => {
      const rates = await newRates(12);
      const hotelId = rates[0]!.get('hotel_id') as number;
      ws.wire.reset();
      // At 1000 records a page, a WhereMany would take 10 of them; at one a page, all 12.
      const found = await Promise.all(
        rates.map((rate) =>
          Rate.where({
            hotel_id: hotelId,
            room_type: rate.get('room_type') as string,
            check_in_date: '2026-12-01',
          }).toArray(),
        ),
      );
      expect(found.map((page) => page.map((record) => record.uuid))).to.deep.equal(
        rates.map((rate) => [rate.uuid]),
      );
      expect(ws.sent()).to.deep.equal(['whereMany']);
      const queries = (ws.wire.calls[0]?.request as WhereManyRequest).queries;
      expect(queries.map((query) => query.limit)).to.deep.equal(rates.map(() => 1));
    });

    it('calls of every kind in one tick: one batch call per kind', async () => {
      const rates = await newRates(2);
      const hotelId = rates[0]!.get('hotel_id') as number;
      ws.wire.reset();
      await Promise.all([
        Rate.find(rates[0]!.uuid),
        Rate.find(rates[1]!.uuid),
        rates[0]!.meta.update({ note: 'x' }),
        rates[1]!.meta.update({ note: 'y' }),
        Rate.put(rateValues(hotelId, 'new 1', '2026-12-01')),
        Rate.put(rateValues(hotelId, 'new 2', '2026-12-01')),
        Rate.where({ hotel_id: hotelId, room_type: 'room 0', check_in_date: '2026-12-01' }).first(),
        Rate.where({ hotel_id: hotelId, room_type: 'room 1', check_in_date: '2026-12-01' }).first(),
      ]);
      expect(ws.sent().sort()).to.deep.equal(['getCells', 'putMany', 'whereMany', 'writeCells']);
      expect(ws.counted()).to.include({ coalescedCalls: 8, coalescedBatches: 4, calls: 4 });
    });

    it("sends the callers' request objects in the batch, so retries resend their requestIds", async () => {
      const [rate] = await newRates(1);
      const requests: WriteCellRequest[] = [0, 1].map((i) => ({
        model: 'rate',
        uuid: rate!.uuid,
        cell: 'meta',
        body: pack({ i }),
        mode: 0,
        expectedRefKey: undefined,
        requestId: `own-request-${hotel}-${i}`,
      }));
      ws.wire.reset();
      await Promise.all(
        requests.map((request) => ws.store.transport.unary('writeCell', request, WRITE)),
      );
      const writes = (ws.wire.calls[0]?.request as WriteCellsRequest).writes;
      expect(writes[0]).to.equal(requests[0]);
      expect(writes[1]).to.equal(requests[1]);
    });
  });

  describe('each caller gets its own answer or error', () => {
    let ws: WireStore;
    let Rate: Model<Rate>;
    /** The same model over a store that does not coalesce: what single calls answer. */
    let Single: Model<Rate>;
    let singleStore: Store;
    const newRate = (content: Record<string, unknown> = {}) =>
      Rate.put(rateValues(++hotel, '1 bed', '2026-12-01', content));

    before(async () => {
      ws = await storeOverWire(fixture.address);
      Rate = ws.Rate;
      singleStore = await fixture.connectAnother({ coalesce: false });
      Single = await singleStore.defineModel(RATE_SCHEMA);
    });
    beforeEach(() => ws.wire.reset());
    after(async () => {
      await ws?.store.close();
    });

    it('a cell with no version fails only its GetCell, with the message GetCell gives', async () => {
      const rate = await newRate({ net_price: 5 });
      const missing: GetCellRequest = {
        model: 'rate',
        uuid: MISSING_UUID,
        cell: '',
        refKey: undefined,
      };
      ws.wire.reset();
      const [found, error, meta] = await Promise.all([
        ws.store.transport.unary('getCell', { ...missing, uuid: rate.uuid }, READ),
        rejection(ws.store.transport.unary('getCell', missing, READ)),
        rejection(
          ws.store.transport.unary('getCell', { ...missing, uuid: rate.uuid, cell: 'meta' }, READ),
        ),
      ]);
      expect(ws.sent()).to.deep.equal(['getCells']);
      expect(found.cell?.uuid).to.equal(rate.uuid);
      const single = await rejection(singleStore.transport.unary('getCell', missing, READ));
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error.message).to.equal(single.message);
      expect(meta.message).to.equal(`cell meta of record ${rate.uuid} has no version`);
    });

    it('a missing record and a stale version fail only their writes, with the typed errors', async () => {
      const [fresh, stale, other] = await Promise.all([newRate(), newRate(), newRate()]);
      // Another process writes `stale` after this one read it.
      await (await Single.find(stale.uuid))!.set('net_price', 99).save();
      ws.wire.reset();
      const [saved, conflict, notFound, updated] = await Promise.all([
        fresh.set('net_price', 1).save(),
        rejection(stale.set('net_price', 2).save()),
        rejection(Rate.record(MISSING_UUID).update({ net_price: 3 })),
        other.update({ net_price: 4 }),
      ]);
      expect(ws.sent()).to.deep.equal(['writeCells']);
      expect(saved.refKey).to.equal(1);
      expect(updated.refKey).to.equal(1);
      expect(conflict).to.be.instanceOf(ConflictError);
      expect(notFound).to.be.instanceOf(NotFoundError);
      // The errors single calls give, word for word.
      const singleNotFound = await rejection(Single.record(MISSING_UUID).update({ net_price: 3 }));
      expect(notFound.message).to.equal(singleNotFound.message);
      expect(conflict.message).to.equal(
        `cell base of ${stale.uuid} is at version 1, not 0: re-read it and write again`,
      );
      // Nothing was written for the refused writes.
      expect((await Single.find(stale.uuid))?.get('net_price')).to.equal(99);
    });

    it('a malformed uuid: its caller gets InvalidArgumentError, the others their answers', async () => {
      const [a, b] = await Promise.all([newRate({ n: 'a' }), newRate({ n: 'b' })]);
      ws.wire.reset();
      const [foundA, error, foundB] = await Promise.all([
        Rate.find(a.uuid),
        rejection(Rate.find('not-a-uuid')),
        Rate.find(b.uuid),
      ]);
      expect([foundA?.get('n'), foundB?.get('n')]).to.deep.equal(['a', 'b']);
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.equal((await rejection(Single.find('not-a-uuid'))).message);
      // The batch was refused as a whole (`keys[1].uuid`), then each call went alone.
      expect(ws.sent()).to.deep.equal(['getCells', 'getCell', 'getCell', 'getCell']);
      expect(ws.counted()).to.include({ coalescedBatches: 1, batchFallbacks: 1 });
    });

    it('a malformed write in a batch: its caller gets InvalidArgumentError, the others write once', async () => {
      const [a, b] = await Promise.all([newRate(), newRate()]);
      ws.wire.reset();
      const [savedA, error, savedB] = await Promise.all([
        a.set('net_price', 1).save(),
        rejection(Rate.record('not-a-uuid').update({ net_price: 2 })),
        b.meta.update({ note: 'b' }),
      ]);
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.equal(
        (await rejection(Single.record('not-a-uuid').update({ net_price: 2 }))).message,
      );
      expect(ws.sent()).to.deep.equal(['writeCells', 'writeCell', 'writeCell', 'writeCell']);
      expect([savedA.refKey, savedB.refKey]).to.deep.equal([1, 0]);
      const again = await Single.find(a.uuid, { cells: ['meta'] });
      expect([again?.refKey, again?.get('net_price')]).to.deep.equal([1, 1]);
      expect((await Single.find(b.uuid, { cells: ['meta'] }))?.meta.refKey).to.equal(0);
    });

    it('a put that cannot create its record in a batch: its caller gets InvalidArgumentError, the others are put', async () => {
      const hotelId = ++hotel;
      const put = (values: Record<string, unknown>, requestId: string): PutRequest => ({
        model: 'rate',
        values: pack(values),
        requestId: `${requestId}-${hotelId}`,
      });
      // A create must name every index field: this one has no gateway. The server refuses it
      // in its own result of the one PutMany (a put no record holds is known so only there).
      const { gateway: _, ...noGateway } = rateValues(hotelId, 'bad', '2026-12-01');
      const requests = [
        put(rateValues(hotelId, 'good 1', '2026-12-01'), 'good-1'),
        put(noGateway, 'bad'),
        put(rateValues(hotelId, 'good 2', '2026-12-01'), 'good-2'),
      ];
      const [first, error, second] = await Promise.all([
        ws.store.transport.unary('put', requests[0]!, WRITE),
        rejection(ws.store.transport.unary('put', requests[1]!, WRITE)),
        ws.store.transport.unary('put', requests[2]!, WRITE),
      ]);
      expect(ws.sent()).to.deep.equal(['putMany']);
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.equal(
        (await rejection(singleStore.transport.unary('put', requests[1]!, WRITE))).message,
      );
      expect([first.created, second.created]).to.deep.equal([true, true]);
      const found = await Single.where({ hotel_id: hotelId }).toArray();
      expect(found.map((record) => record.get('room_type'))).to.deep.equal(['good 1', 'good 2']);
    });

    it('a malformed query in a batch: its caller gets InvalidArgumentError, the others pages', async () => {
      const rate = await newRate();
      const bad: WhereRequest = {
        model: 'rate',
        index: '',
        conditions: [
          {
            field: 'hotel_id',
            op: Operator.OPERATOR_EQ,
            values: [{ kind: { $case: 'string', string: 'one' } }],
          },
        ],
        cells: [],
        order: 0,
        limit: 1,
        pageToken: '',
      };
      ws.wire.reset();
      const [found, error] = await Promise.all([
        Rate.where({ hotel_id: hotel, room_type: '1 bed', check_in_date: '2026-12-01' }).first(),
        rejection(ws.store.transport.collect('where', bad, READ)),
      ]);
      expect(found?.uuid).to.equal(rate.uuid);
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.equal(
        (await rejection(singleStore.transport.collect('where', bad, READ))).message,
      );
      expect(ws.sent()).to.deep.equal(['whereMany', 'where', 'where']);
    });

    it('the same requestId twice in one batch (a caller resending its write): one version', async () => {
      const rate = await newRate();
      const request: WriteCellRequest = {
        model: 'rate',
        uuid: rate.uuid,
        cell: 'meta',
        body: pack({ note: 'once' }),
        mode: 0,
        expectedRefKey: undefined,
        requestId: `resent-${rate.uuid}`,
      };
      ws.wire.reset();
      const answers = await Promise.all([
        ws.store.transport.unary('writeCell', request, WRITE),
        ws.store.transport.unary('writeCell', { ...request }, WRITE),
      ]);
      expect(ws.sent()).to.deep.equal(['writeCells']);
      expect(answers.map((answer) => [answer.cell?.refKey, answer.replayed])).to.deep.equal([
        [0, false],
        [0, true],
      ]);
      expect(answers[1]?.cell?.id).to.equal(answers[0]?.cell?.id);
      const meta = await Single.record(rate.uuid).meta.load();
      expect([meta.refKey, meta.get('note')]).to.deep.equal([0, 'once']);
      expect(await meta.previous()).to.equal(undefined);
    });

    it('a put refused with ALREADY_EXISTS fails only its caller', async () => {
      // A secondary index the Ruby gem made is unique on its fields: made so before the model
      // is defined (DefineModel keeps tables that exist).
      const sql = await mysql.createConnection(fixture.databaseUrl);
      try {
        for (let shard = 0; shard < 4; shard++) {
          await sql.query(
            `CREATE TABLE \`sdk_stay_by_code_index_${String(shard).padStart(6, '0')}\` (
               hotel_id BIGINT NOT NULL, code VARCHAR(255) NOT NULL, uuid VARCHAR(36),
               UNIQUE KEY gem_unique (hotel_id, code))`,
          );
        }
      } finally {
        await sql.end();
      }
      const Stay = await ws.store.defineModel({
        name: 'stay',
        primary: { fields: { hotel_id: 'integer', day: 'string' }, shardOn: 'hotel_id' },
        indices: {
          by_code: { fields: { hotel_id: 'integer', code: 'string' }, shardOn: 'hotel_id' },
        },
      });
      await Stay.put({ hotel_id: 1, day: 'mon', code: 'x' });
      ws.wire.reset();
      const [refused, created] = await Promise.allSettled([
        Stay.put({ hotel_id: 1, day: 'tue', code: 'x' }),
        Stay.put({ hotel_id: 1, day: 'wed', code: 'y' }),
      ]);
      expect(ws.sent()).to.deep.equal(['putMany']);
      expect(refused.status === 'rejected' && refused.reason).to.be.instanceOf(AlreadyExistsError);
      expect((refused as PromiseRejectedResult).reason.message).to.equal(
        'index by_code of stay already holds hotel_id=1, code="x" for another record (a unique index created by the Ruby gem)',
      );
      expect((refused as PromiseRejectedResult).reason.retryable).to.equal(false);
      expect(created.status === 'fulfilled' && created.value.present).to.equal(true);
      expect(await Stay.where({ hotel_id: 1, day: 'tue' }).first()).to.equal(undefined);
    });
  });

  describe('an answer over the message size limit', () => {
    it('is not retried, and the batch is sent again in halves', async () => {
      // 64 KiB answers at most: three 18 KB bodies fit, six do not.
      const ws = await storeOverWire(fixture.address, {
        channelOptions: { 'grpc.max_receive_message_length': 64 * 1024 },
      });
      try {
        const hotelId = ++hotel;
        const rates: RecordOf<Rate>[] = [];
        for (let i = 0; i < 6; i++) {
          rates.push(
            await ws.Rate.put(
              rateValues(hotelId, `big ${i}`, '2026-12-01', { i, pad: 'x'.repeat(18_000) }),
            ),
          );
        }
        ws.wire.reset();
        const found = await Promise.all(rates.map((rate) => ws.Rate.find(rate.uuid)));
        expect(found.map((record) => record?.get('i'))).to.deep.equal([0, 1, 2, 3, 4, 5]);
        expect(ws.sent()).to.deep.equal(['getCells', 'getCells', 'getCells']);
        expect(
          ws.wire.calls.map((call) => (call.request as GetCellsRequest).keys.length),
        ).to.deep.equal([6, 3, 3]);
        expect(ws.counted()).to.include({ retries: 0, batchFallbacks: 1, coalescedBatches: 3 });

        // The kind's next batches carry at most half the calls of the one that was too large,
        // and one more after each batch that fits at that size: 3 fitted, so 4 (too large
        // again: halved) beside the other 2; then 3 and 3, which fit.
        const keysSent = async () => {
          ws.wire.reset();
          const again = await Promise.all(rates.map((rate) => ws.Rate.find(rate.uuid)));
          expect(again.map((record) => record?.get('i'))).to.deep.equal([0, 1, 2, 3, 4, 5]);
          return ws.wire.calls.map((call) => (call.request as GetCellsRequest).keys.length);
        };
        expect(await keysSent()).to.deep.equal([4, 2, 2, 2]);
        expect(await keysSent()).to.deep.equal([3, 3]);
        expect(ws.counted()).to.include({ batchFallbacks: 0 });
      } finally {
        await ws.store.close();
      }
    });

    it('a kind capped at single calls grows its batches back', async () => {
      const ws = await storeOverWire(fixture.address, {
        channelOptions: { 'grpc.max_receive_message_length': 64 * 1024 },
      });
      try {
        const hotelId = ++hotel;
        const big = await Promise.all(
          [0, 1].map((i) =>
            ws.Rate.put(rateValues(hotelId, `big ${i}`, '2026-12-01', { pad: 'x'.repeat(40_000) })),
          ),
        );
        const small = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            ws.Rate.put(rateValues(hotelId, `small ${i}`, '2026-12-01', { i })),
          ),
        );
        // Two answers of 40 KB do not fit in 64 KiB, one does: the kind is capped at 1 call.
        ws.wire.reset();
        await Promise.all(big.map((rate) => ws.Rate.find(rate.uuid)));
        expect(ws.sent()).to.deep.equal(['getCells', 'getCell', 'getCell']);
        // Each round of small finds: the most calls a batch of it carried.
        const largest: number[] = [];
        for (let round = 0; round < 3; round++) {
          ws.wire.reset();
          const found = await Promise.all(small.map((rate) => ws.Rate.find(rate.uuid)));
          expect(found.map((record) => record?.get('i'))).to.deep.equal(small.map((_, i) => i));
          largest.push(
            Math.max(
              ...ws.wire.calls.map((call) =>
                call.method === 'getCells' ? (call.request as GetCellsRequest).keys.length : 1,
              ),
            ),
          );
        }
        expect(largest).to.deep.equal([2, 3, 4]);
      } finally {
        await ws.store.close();
      }
    });
  });

  describe("a server that takes smaller batches than the SDK's own bounds", () => {
    // `--max-batch-keys 5 --max-put-batch 5`: a larger batch is refused whole, nothing written.
    let small: StoreFixture;
    let ws: WireStore;
    /** The items of each batch call sent since the last reset, a single call counting 1. */
    const itemsSent = () =>
      ws.wire.calls.map((call) => {
        const request = call.request as Partial<
          GetCellsRequest & WriteCellsRequest & PutManyRequest
        >;
        return (request.keys ?? request.writes ?? request.puts)?.length ?? 1;
      });

    before(async () => {
      small = await startStoreFixture({
        queryLimits: { ...DEFAULT_QUERY_LIMITS, maxBatchKeys: 5, maxPutBatch: 5 },
      });
      ws = await storeOverWire(small.address);
    });
    after(async () => {
      await ws?.store.close();
      await small?.close();
    });

    it('learns the limit its refusal states, and keeps every later batch within it', async () => {
      const hotelId = ++hotel;
      const put = () =>
        Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            ws.Rate.put(rateValues(hotelId, `room ${i}`, '2026-12-01', { i })),
          ),
        );
      ws.wire.reset();
      const rates = await put();
      expect(itemsSent(), 'refused, then sent within the limit').to.deep.equal([12, 5, 5, 2]);
      ws.wire.reset();
      await put();
      expect(itemsSent()).to.deep.equal([5, 5, 2]);
      expect(ws.counted()).to.include({ batchFallbacks: 0 });

      for (let round = 0; round < 2; round++) {
        ws.wire.reset();
        const found = await Promise.all(rates.map((rate) => ws.Rate.find(rate.uuid)));
        expect(found.map((record) => record?.get('i'))).to.deep.equal(rates.map((_, i) => i));
        expect(itemsSent()).to.deep.equal(round === 0 ? [12, 5, 5, 2] : [5, 5, 2]);
      }
      // WriteCells: its limit learned from its own first refusal too.
      ws.wire.reset();
      const update = (price: number) =>
        Promise.all(rates.map((rate) => ws.Rate.record(rate.uuid).update({ net_price: price })));
      // Version 0 put, 1 put again, 2 this write.
      const written = await update(1);
      expect(written.map((record) => record.refKey)).to.deep.equal(rates.map(() => 2));
      expect(itemsSent()).to.deep.equal([12, 5, 5, 2]);
      ws.wire.reset();
      await update(2);
      expect(itemsSent()).to.deep.equal([5, 5, 2]);
    });
  });

  describe('coalesce: false', () => {
    it('sends every call on its own', async () => {
      const store = await fixture.connectAnother({ coalesce: false });
      const Rate = await store.defineModel(RATE_SCHEMA);
      const hotelId = ++hotel;
      const rates = await Promise.all(
        [0, 1, 2].map((i) => Rate.put(rateValues(hotelId, `room ${i}`, '2026-12-01'))),
      );
      const before = store.transport.stats();
      const found = await Promise.all(rates.map((rate) => Rate.find(rate.uuid)));
      await Promise.all(found.map((record) => record!.update({ net_price: 1 })));
      expect(found.map((record) => record?.refKey)).to.deep.equal([1, 1, 1]);
      const counted = difference(store.transport.stats(), before);
      expect(counted).to.include({ calls: 6, coalescedCalls: 0, coalescedBatches: 0 });
      expect(store.transport.stats()).to.include({ coalescedCalls: 0, coalescedBatches: 0 });
    });
  });

  describe('a batch whose answer is slow (a proxy holds answers back)', () => {
    let proxy: TcpProxy;
    let ws: WireStore;
    let uuids: string[];
    let hotelId: number;
    /** How long the proxy holds back every answer while `slow()` is on. */
    const ANSWER_DELAY_MS = 1000;
    const slow = () =>
      proxy.setFaults({ delayServerToClient: { probability: 1, ms: ANSWER_DELAY_MS } });

    before(async () => {
      const [host, port] = fixture.address.split(':') as [string, string];
      proxy = await startTcpProxy({ target: { host, port: Number(port) } });
      ws = await storeOverWire(proxy.address);
      hotelId = ++hotel;
      uuids = [];
      for (let i = 0; i < 3; i++) {
        uuids.push((await ws.Rate.put(rateValues(hotelId, `room ${i}`, '2026-12-01', { i }))).uuid);
      }
    });
    beforeEach(() => ws.wire.reset());
    afterEach(() => proxy.setFaults({}));
    after(async () => {
      await ws?.store.close();
      await proxy?.close();
    });

    /** Starts `work`, noting in `order` when it settles. */
    const tracked = <T>(order: string[], name: string, work: Promise<T>): Promise<T> =>
      work.finally(() => order.push(name));

    it('a caller aborted while its batch is out rejects at once; the others get answers', async () => {
      slow();
      const order: string[] = [];
      const controller = new AbortController();
      const [a, b, c] = [
        tracked(order, 'a', ws.Rate.find(uuids[0]!)),
        tracked(order, 'b', ws.Rate.find(uuids[1]!, { signal: controller.signal })),
        tracked(order, 'c', ws.Rate.find(uuids[2]!)),
      ];
      await sleep(50);
      expect(ws.sent()).to.deep.equal(['getCells']);
      controller.abort();
      const error = await rejection(b);
      expect(error).to.be.instanceOf(CancelledError);
      expect(order, 'settled before the answers came').to.deep.equal(['b']);
      const [foundA, foundC] = await Promise.all([a, c]);
      expect([foundA?.get('i'), foundC?.get('i')]).to.deep.equal([0, 2]);
    });

    it('a caller aborted before the end of the tick is left out of the batch', async () => {
      const controller = new AbortController();
      const found = ws.Rate.find(uuids[0]!);
      const aborted = rejection(ws.Rate.find(uuids[1]!, { signal: controller.signal }));
      const other = ws.Rate.find(uuids[2]!);
      controller.abort();
      expect(await aborted).to.be.instanceOf(CancelledError);
      expect([(await found)?.get('i'), (await other)?.get('i')]).to.deep.equal([0, 2]);
      expect(
        (ws.wire.calls[0]?.request as GetCellsRequest).keys.map((key) => key.uuid),
      ).to.deep.equal([uuids[0], uuids[2]]);
    });

    it('when every caller has aborted, the batch call is cancelled', async () => {
      slow();
      const controllers = [new AbortController(), new AbortController()];
      const calls = controllers.map((controller, i) =>
        rejection(
          ws.Rate.record(uuids[i]!).meta.update({ note: 'never' }, { signal: controller.signal }),
        ),
      );
      await sleep(50);
      expect(ws.sent()).to.deep.equal(['writeCells']);
      const before = ws.store.transport.stats();
      controllers[0]!.abort();
      expect(ws.store.transport.stats().failures, 'one caller left: the call goes on').to.equal(
        before.failures,
      );
      controllers[1]!.abort();
      // The inner transport ended the batch call (a cancelled call counts as failed).
      expect(ws.store.transport.stats().failures).to.equal(before.failures + 1);
      for (const error of await Promise.all(calls)) expect(error).to.be.instanceOf(CancelledError);
    });

    it("a caller's own deadline passing while its batch is out fails only that caller", async () => {
      slow();
      const order: string[] = [];
      const [a, b, c] = [
        tracked(order, 'a', ws.Rate.find(uuids[0]!)),
        tracked(order, 'b', ws.Rate.find(uuids[1]!, { deadlineMs: 100 })),
        tracked(order, 'c', ws.Rate.find(uuids[2]!)),
      ];
      const error = await rejection(b);
      expect(error).to.be.instanceOf(DeadlineExceededError);
      expect(error.message).to.equal('getCell: deadline of 100 ms exceeded, in a batch of 3 calls');
      expect(order, 'settled before the answers came').to.deep.equal(['b']);
      const [foundA, foundC] = await Promise.all([a, c]);
      expect([foundA?.get('i'), foundC?.get('i')]).to.deep.equal([0, 2]);
      expect(ws.sent()).to.deep.equal(['getCells']);
    });
    it('a batch of reads is hedged like them: a slow server is raced by the other', async () => {
      // Two endpoints for the same server: one through the proxy (slow), one direct.
      const hedged = await storeOverWire(proxy.address, {
        endpoints: [proxy.address, fixture.address],
        hedge: { delayMs: 20 },
      });
      try {
        slow();
        // Round robin: of two batch calls in a row, at least one starts on the slow endpoint.
        for (let round = 0; round < 2; round++) {
          const found = await Promise.all(uuids.map((uuid) => hedged.Rate.find(uuid)));
          expect(found.map((record) => record?.get('i'))).to.deep.equal([0, 1, 2]);
        }
        expect(hedged.sent()).to.deep.equal(['getCells', 'getCells']);
        const counted = hedged.counted();
        expect(counted).to.include({ coalescedBatches: 2, calls: 2, failures: 0 });
        expect(counted.hedgesWon, 'batches answered by their hedge').to.be.at.least(1);
      } finally {
        await hedged.store.close();
      }
    });

    describe('calls made while a batch call of their kind is out', () => {
      // A store of its own (its own connection: no answers of the tests above still queued at
      // the proxy), and answers held back less long: each frame of an answer waits in turn.
      // Those answers come later than a batch call holds back its kind by default (the test of
      // a hung partition shows that bound): here calls are held until the answer comes.
      let held: WireStore;
      const HELD_DELAY_MS = 250;
      const HOLD_MS = 10_000;
      const slowly = () =>
        proxy.setFaults({ delayServerToClient: { probability: 1, ms: HELD_DELAY_MS } });

      before(async () => {
        held = await storeOverWire(proxy.address, { maxHoldMs: HOLD_MS });
      });
      beforeEach(() => held.wire.reset());
      after(async () => {
        await held?.store.close();
      });

      /** The GetCells keys of the `n`th call on the wire. */
      const keysOf = (n: number) =>
        (held.wire.calls[n]?.request as GetCellsRequest).keys.map((key) => key.uuid);

      it('wait for it, then go together as one batch call', async () => {
        slowly();
        const first = held.Rate.find(uuids[0]!);
        await sleep(50);
        // Made in two later ticks while the first call is out: held back, unsent.
        const second = held.Rate.find(uuids[1]!);
        await sleep(20);
        const third = held.Rate.find(uuids[2]!);
        await sleep(50);
        expect(held.sent()).to.deep.equal(['getCell']);
        expect(held.counted()).to.include({ heldCalls: 2, coalescedBatches: 0 });
        const found = await Promise.all([first, second, third]);
        expect(found.map((record) => record?.get('i'))).to.deep.equal([0, 1, 2]);
        expect(held.sent()).to.deep.equal(['getCell', 'getCells']);
        expect(keysOf(1)).to.deep.equal([uuids[1], uuids[2]]);
        expect(held.counted()).to.include({ heldCalls: 2, coalescedBatches: 1, coalescedCalls: 2 });
      });

      it('a held call whose deadline passes fails alone, never sent', async () => {
        slowly();
        const order: string[] = [];
        const first = tracked(order, 'first', held.Rate.find(uuids[0]!));
        await sleep(50);
        const late = tracked(order, 'late', held.Rate.find(uuids[1]!, { deadlineMs: 100 }));
        const other = tracked(order, 'other', held.Rate.find(uuids[2]!));
        const error = await rejection(late);
        expect(error).to.be.instanceOf(DeadlineExceededError);
        expect(error.message).to.equal(
          'getCell: deadline of 100 ms exceeded before it was sent, waiting for a batch call ' +
            'of its kind to come back',
        );
        expect(order, 'failed before any answer came').to.deep.equal(['late']);
        expect([(await first)?.get('i'), (await other)?.get('i')]).to.deep.equal([0, 2]);
        expect(held.sent()).to.deep.equal(['getCell', 'getCell']);
        expect((held.wire.calls[1]?.request as GetCellRequest).uuid).to.equal(uuids[2]);
      });

      it('a held caller that aborts rejects at once and is left out', async () => {
        slowly();
        const controller = new AbortController();
        const first = held.Rate.find(uuids[0]!);
        await sleep(50);
        const aborted = rejection(held.Rate.find(uuids[1]!, { signal: controller.signal }));
        const other = held.Rate.find(uuids[2]!);
        await sleep(20);
        controller.abort();
        expect(await aborted).to.be.instanceOf(CancelledError);
        expect(held.sent(), 'nothing sent for it').to.deep.equal(['getCell']);
        expect([(await first)?.get('i'), (await other)?.get('i')]).to.deep.equal([0, 2]);
        expect(held.sent()).to.deep.equal(['getCell', 'getCell']);
        expect((held.wire.calls[1]?.request as GetCellRequest).uuid).to.equal(uuids[2]);
      });

      it('calls of another kind do not wait for it', async () => {
        slowly();
        const found = held.Rate.find(uuids[0]!);
        await sleep(50);
        const written = held.Rate.record(uuids[1]!).meta.update({ note: 'not held' });
        await sleep(50);
        expect(held.sent()).to.deep.equal(['getCell', 'writeCell']);
        expect(held.counted().heldCalls).to.equal(0);
        await Promise.all([found, written]);
      });

      it('a full batch goes at once; only the rest waits', async () => {
        slowly();
        const first = held.Rate.where({ hotel_id: hotelId }).toArray();
        await sleep(50);
        // Pages of 1000 records: a WhereMany asks for 10,000 at most, so 10 of these 11 fill
        // one, which goes while the first call is out; the 11th waits for an answer.
        const pages = Array.from({ length: 11 }, () =>
          held.Rate.where({ hotel_id: hotelId }).toArray(),
        );
        await sleep(50);
        expect(held.sent()).to.deep.equal(['where', 'whereMany']);
        expect(held.counted().heldCalls).to.equal(1);
        const all = await Promise.all([first, ...pages]);
        for (const page of all) expect(page.map((record) => record.uuid)).to.have.members(uuids);
        expect(held.sent()).to.deep.equal(['where', 'whereMany', 'where']);
      });

      it("maxBatchesInFlight: Infinity sends each tick's calls at its end", async () => {
        const eager = await storeOverWire(proxy.address, { maxBatchesInFlight: Infinity });
        try {
          slowly();
          const first = eager.Rate.find(uuids[0]!);
          await sleep(50);
          const second = eager.Rate.find(uuids[1]!);
          await sleep(50);
          expect(eager.sent()).to.deep.equal(['getCell', 'getCell']);
          expect(eager.counted().heldCalls).to.equal(0);
          await Promise.all([first, second]);
        } finally {
          await eager.store.close();
        }
      });

      it('by default one batch call of a kind may be out per endpoint', async () => {
        const [host, port] = fixture.address.split(':') as [string, string];
        const second = await startTcpProxy({ target: { host, port: Number(port) } });
        const store = await connect({
          endpoints: [proxy.address, second.address],
          maxHoldMs: HOLD_MS,
        });
        try {
          const Rate = await store.defineModel(RATE_SCHEMA);
          await Rate.find(uuids[0]!);
          slowly();
          second.setFaults({ delayServerToClient: { probability: 1, ms: HELD_DELAY_MS } });
          const before = store.transport.stats();
          const calls = [Rate.find(uuids[0]!)];
          await sleep(50);
          calls.push(Rate.find(uuids[1]!));
          await sleep(50);
          expect(store.transport.stats().heldCalls - before.heldCalls, 'two may be out').to.equal(
            0,
          );
          calls.push(Rate.find(uuids[2]!));
          await sleep(50);
          expect(store.transport.stats().heldCalls - before.heldCalls).to.equal(1);
          const found = await Promise.all(calls);
          expect(found.map((record) => record?.get('i'))).to.deep.equal([0, 1, 2]);
        } finally {
          await store.close();
          await second.close();
        }
      });

      it('maxBatchesInFlight must be a whole number of calls, maxHoldMs not negative', async () => {
        for (const maxBatchesInFlight of [0, 1.5, Number.NaN]) {
          expect(() =>
            coalesceCalls(held.wire, { defaultDeadlineMs: 1000, maxBatchesInFlight }),
          ).to.throw(RangeError, 'maxBatchesInFlight must be an integer >= 1');
          const refused = await rejection(
            connect({ endpoints: [fixture.address], maxBatchesInFlight }),
          );
          expect(refused).to.be.instanceOf(RangeError);
        }
        const refused = await rejection(connect({ endpoints: [fixture.address], maxHoldMs: -1 }));
        expect(refused).to.be.instanceOf(RangeError);
        expect(refused.message).to.equal(
          'maxHoldMs must be from 0 to 2147483647 (or Infinity), got -1',
        );
      });
    });
  });
  describe('a caller answered while its batch call is retried', () => {
    it('is left out of the retry: a write it was told failed cannot land after a later one', async () => {
      const [host, port] = fixture.address.split(':') as [string, string];
      const proxy = await startTcpProxy({ target: { host, port: Number(port) } });
      // Each attempt of a WriteCells, as sent: the uuids it carried. The first one is lost on
      // the way (the proxy swallows it) until the network comes back.
      const attempts: string[][] = [];
      let loseNext = false;
      const watch: ClientMiddleware = async function* (call, options, next) {
        if (call.method === 'writeCells') {
          attempts.push((call.request as WriteCellsRequest).writes.map((write) => write.uuid));
          if (loseNext) proxy.setFaults({ blackhole: true });
          loseNext = false;
        }
        yield* next(call, options);
      };
      const store = await connect({ endpoints: [proxy.address], interceptors: [watch] });
      try {
        const Rate = await store.defineModel(RATE_SCHEMA);
        const Direct = await fixture.store.defineModel(RATE_SCHEMA);
        const hotelId = ++hotel;
        const [x, y] = await Promise.all(
          ['x', 'y'].map((room) => Direct.put(rateValues(hotelId, room, '2026-12-01'))),
        );
        loseNext = true;
        // One WriteCells: x's caller gives up after 300 ms, y's waits its default 5 s.
        const short = rejection(Rate.record(x!.uuid).update({ net_price: 1 }, { deadlineMs: 300 }));
        const long = Rate.record(y!.uuid).update({ net_price: 1 });
        expect(await short).to.be.instanceOf(DeadlineExceededError);
        // Told that its write failed, x's owner writes again, and that write is acknowledged.
        await Direct.record(x!.uuid).update({ net_price: 2 });
        // The network comes back: the lost attempt fails, and the batch call is retried.
        proxy.resetAll();
        proxy.setFaults({});
        await long;
        expect(attempts[0]).to.deep.equal([x!.uuid, y!.uuid]);
        expect(attempts.length, 'retried').to.be.at.least(2);
        for (const retry of attempts.slice(1)) expect(retry).to.deep.equal([y!.uuid]);
        const final = await Direct.find(x!.uuid);
        expect([final?.refKey, final?.get('net_price')]).to.deep.equal([1, 2]);
      } finally {
        await store.close();
        await proxy.close();
      }
    });
  });

  describe('one partition of two down, or hung', () => {
    // The second partition is reached through a proxy, which takes it down.
    let split: StoreFixture;
    let partition: TcpProxy;
    let Rate: Model<Rate>;
    /** Records whose content lives on the partition that stays up, and on the one that goes down. */
    const up: string[] = [];
    const down: string[] = [];

    before(async () => {
      split = await startStoreFixture({ partitions: 2, proxiedPartitions: [1] });
      partition = split.partitionProxies[1]!;
      Rate = await split.store.defineModel(RATE_SCHEMA);
      for (let i = 0; up.length < 4 || down.length < 4; i++) {
        const { uuid } = await Rate.put(rateValues(i, 'room', '2026-12-01', { i }));
        const { partition: at } = await split.store.findShard({ uuid });
        (at === 0 ? up : down).push(uuid);
      }
    });
    afterEach(() => partition.setFaults({}));
    after(async () => {
      partition?.setFaults({});
      await split?.close();
    });

    const takeDown = async () => {
      partition.setFaults({ refuseConnections: true });
      partition.resetAll();
      // The server's pool finds its connections gone.
      await sleep(300);
    };

    it('a batch it fails goes again call by call: each caller gets its own answer', async () => {
      await takeDown();
      const before = split.store.transport.stats();
      const [foundA, foundB, lost] = await Promise.allSettled([
        Rate.find(up[0]!),
        Rate.find(up[1]!),
        Rate.find(down[0]!),
      ]);
      expect(foundA.status === 'fulfilled' && foundA.value?.uuid).to.equal(up[0]);
      expect(foundB.status === 'fulfilled' && foundB.value?.uuid).to.equal(up[1]);
      expect(lost.status === 'rejected' && lost.reason).to.be.instanceOf(UnavailableError);

      // A write of the healthy partition may be stored while the batch fails as a whole: sent
      // again alone, with its requestId, it is answered, and stored once.
      const [written, refused] = await Promise.allSettled([
        Rate.record(up[2]!).update({ note: 'up' }),
        Rate.record(down[1]!).update({ note: 'down' }),
      ]);
      expect(written.status, String((written as PromiseRejectedResult).reason)).to.equal(
        'fulfilled',
      );
      expect(refused.status === 'rejected' && refused.reason).to.be.instanceOf(UnavailableError);
      const counted = difference(split.store.transport.stats(), before);
      expect(counted).to.include({ coalescedBatches: 2, batchFallbacks: 2 });
      partition.setFaults({});
      const stored = await Rate.find(up[2]!);
      expect([stored?.refKey, stored?.get('note')]).to.deep.equal([1, 'up']);
    });

    it('a call stuck on it holds later calls of its kind back for a bounded time only', async () => {
      partition.setFaults({ blackhole: true });
      partition.resetAll();
      const stuck = Rate.find(down[2]!, { deadlineMs: 3000 }).catch((error: unknown) => error);
      await sleep(50);
      // Finds of the partition that is up, in later ticks: held behind the stuck call, but not
      // until their own deadline.
      const startedAt = Date.now();
      const found = await Promise.all(
        [0, 1, 2].map(async (i) => {
          await sleep(i * 20);
          return Rate.find(up[i]!, { deadlineMs: 1000 });
        }),
      );
      const tookMs = Date.now() - startedAt;
      expect(found.map((record) => record?.uuid)).to.deep.equal(up.slice(0, 3));
      expect(tookMs, 'not held until their deadline').to.be.below(700);
      partition.setFaults({});
      partition.resetAll();
      await stuck;
    });
  });

  describe('a batch cut off by a server killed mid-batch', function () {
    this.timeout(180_000);
    const RECORDS = 200;
    const ROUNDS = 4;
    const KILL_IN_ROUND = 1;

    let cluster: TwoServers;
    let store: Store | undefined;

    before(async () => {
      cluster = await startTwoServers();
    });
    after(async () => {
      await store?.close();
      await cluster?.close();
    });

    it('is retried on the other server: every acknowledged write is stored exactly once', async () => {
      const [victim, survivor] = cluster.servers;
      // Batches of hundreds of creates take a while on a busy machine: a deadline to match.
      store = await connect({ endpoints: [victim.address, survivor.address], deadlineMs: 60_000 });
      const Rate = await store.defineModel(RATE_SCHEMA);
      const owned = await Promise.all(
        Array.from({ length: RECORDS }, (_, i) =>
          Rate.put(rateValues(1, `own ${i}`, '2026-01-01')),
        ),
      );
      await Promise.all(owned.map((record) => record.meta.load()));

      const puts: { round: number; i: number; uuid: string }[] = [];
      let atKill: TransportStats | undefined;
      for (let round = 0; round < ROUNDS; round++) {
        // Every record's meta saved (one WriteCells) and as many new records put (one PutMany),
        // in the same tick: two calls, which round robin sends to the two servers.
        const saves = owned.map((record) => record.meta.set('round', round).save());
        const created = Array.from({ length: RECORDS }, (_, i) =>
          Rate.put(rateValues(2 + round, `new ${i}`, '2026-01-01', { round, i })),
        );
        if (round === KILL_IN_ROUND) {
          await sleep(5);
          atKill = store.transport.stats();
          await victim.kill('SIGKILL');
        }
        await Promise.all(saves);
        for (const [i, record] of (await Promise.all(created)).entries()) {
          expect(record.refKey, `put ${i} of round ${round}`).to.equal(0);
          puts.push({ round, i, uuid: record.uuid });
        }
        for (const record of owned) expect(record.meta.refKey).to.equal(round);
      }

      const stats = store.transport.stats();
      console.log(
        `      kill: ${ROUNDS} rounds of ${RECORDS} saves and ${RECORDS} puts, each round one ` +
          `WriteCells and one PutMany; ${stats.coalescedBatches} batch calls carried ` +
          `${stats.coalescedCalls} calls; ${stats.retries - atKill!.retries} retried after the kill`,
      );
      expect(stats.retries - atKill!.retries, 'batch calls retried on the survivor').to.be.at.least(
        1,
      );
      expect(stats.coalescedBatches).to.be.at.least(ROUNDS * 2);

      // The log of every shard: each save is one meta version, 0 .. ROUNDS - 1, holding its
      // round; each put one base version 0 of the record it answered.
      const single = await connect({ endpoints: [survivor.address], coalesce: false });
      try {
        const Check = await single.defineModel(RATE_SCHEMA);
        const versions = new Map<string, [number | undefined, unknown][]>();
        for (const shard of Check.shards) {
          for (let cursor: ExactInteger = 0; ;) {
            const page = await Check.fetchLatestCells({ shard, cursor, limit: 1000 });
            for (const cell of page.cells) {
              const key = `${cell.uuid} ${cell.name}`;
              const value = cell.name === 'meta' ? cell.get('round') : cell.get('i');
              versions.set(key, [...(versions.get(key) ?? []), [cell.refKey, value]]);
            }
            if (page.cells.length === 0) break;
            cursor = page.nextCursor;
          }
        }
        for (const record of owned) {
          expect(versions.get(`${record.uuid} meta`), `meta of ${record.uuid}`).to.deep.equal(
            Array.from({ length: ROUNDS }, (_, round) => [round, round]),
          );
        }
        for (const put of puts) {
          expect(
            versions.get(`${put.uuid} base`),
            `base of put ${put.i} of round ${put.round}`,
          ).to.deep.equal([[0, put.i]]);
        }
        // A create cut by the kill between its base cell and its primary-index row leaves that
        // base cell, reachable through no index (the retry creates the record the put
        // answered): it may only hold the values of an acknowledged put.
        const reachable = new Set([...owned, ...puts].map((record) => `${record.uuid} base`));
        const leftovers = [...versions.entries()].filter(
          ([key]) => key.endsWith(' base') && !reachable.has(key),
        );
        for (const [key, list] of leftovers) {
          expect(list.length, key).to.equal(1);
          expect(list[0]?.[0], key).to.equal(0);
        }
        // Through the index: the records put, once each, with the uuid each put answered.
        for (let round = 0; round < ROUNDS; round++) {
          const found = await Check.where({ hotel_id: 2 + round }).toArray();
          expect(
            found.map((record) => [record.get('i'), record.uuid]).sort(byFirst),
            `records put in round ${round}`,
          ).to.deep.equal(
            puts.filter((put) => put.round === round).map((put) => [put.i, put.uuid]),
          );
        }
        console.log(
          `      kill: every save and put stored once; ${leftovers.length} base cell(s) left by ` +
            `creates the kill cut (in the log, reachable through no index)`,
        );
      } finally {
        await single.close();
      }
    });
  });
});

function byFirst(a: unknown[], b: unknown[]): number {
  return Number(a[0]) - Number(b[0]);
}
