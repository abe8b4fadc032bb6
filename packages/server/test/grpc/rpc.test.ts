// Every RPC of the contract, through a real gRPC server on loopback, over a real MariaDB.
import { expect } from 'chai';
import {
  Operator,
  SortOrder,
  WriteMode,
  type Cell,
  type IndexValue,
  type WhereRequest,
} from '@shameless/proto';
import { status } from '@grpc/grpc-js';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { collect, rejection } from '../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { int, str } from '../support/indexValues.js';

describe('Store RPCs', function () {
  let store: StoreFixture;

  before(async () => {
    store = await startStoreFixture({ shardsCount: 4 });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());

  const rate = (
    hotelId: number,
    roomType: string,
    date: string,
    extra: Record<string, unknown> = {},
  ) => ({
    hotel_id: hotelId,
    room_type: roomType,
    check_in_date: date,
    gateway: 'pegasus',
    discount_type: 'geo',
    ...extra,
  });

  const put = (values: Record<string, unknown>, id = requestId()) =>
    store.api.put({ model: 'rate', values: pack(values), requestId: id });

  describe('DefineModel', () => {
    it('is idempotent, allows adding a cell, and refuses other changes', async () => {
      const again = await store.api.defineModel({ model: RATE_MODEL });
      expect(again.changed).to.equal(false);
      expect(again.model?.cells).to.deep.equal(['meta']);

      const withCell = await store.api.defineModel({
        model: { ...RATE_MODEL, cells: ['meta', 'ota_rate'] },
      });
      expect(withCell.changed).to.equal(true);
      expect(withCell.model?.cells).to.deep.equal(['meta', 'ota_rate']);

      const conflicting = await rejection(
        store.api.defineModel({
          model: {
            ...RATE_MODEL,
            primaryIndex: {
              ...RATE_MODEL.primaryIndex!,
              shardOn: 'hotel_id',
              fields: RATE_MODEL.primaryIndex!.fields.slice(0, 2),
            },
          },
        }),
      );
      expect(conflicting.code).to.equal(status.FAILED_PRECONDITION);
      expect(conflicting.details).to.match(/only cells may be added/);
    });

    it('creates the tables of every shard', async () => {
      const names = (
        (await store.engine['partitions']
          .at(0)
          .run(UNBOUNDED, (pool) =>
            pool.query(
              `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'test\\_rate\\_%' ORDER BY 1`,
            ),
          )) as { name: string }[]
      ).map((row) => row.name);
      expect(names).to.deep.equal([
        'test_rate_000000',
        'test_rate_000001',
        'test_rate_000002',
        'test_rate_000003',
        'test_rate_primary_index_000000',
        'test_rate_primary_index_000001',
        'test_rate_primary_index_000002',
        'test_rate_primary_index_000003',
        'test_rate_secondary_index_000000',
        'test_rate_secondary_index_000001',
        'test_rate_secondary_index_000002',
        'test_rate_secondary_index_000003',
      ]);
    });
  });

  describe('DescribeStore and FindShard', () => {
    it('describes namespace, shards, partitions without credentials, and models', async () => {
      const description = await store.api.describeStore({});
      expect(description.namespace).to.equal('test');
      expect(description.shardsCount).to.equal(4);
      expect(description.partitions).to.have.length(1);
      expect(description.partitions[0]).to.include({
        index: 0,
        host: '127.0.0.1',
        firstShard: 0,
        lastShard: 3,
      });
      expect(JSON.stringify(description)).not.to.match(/password|root@/);
      expect(description.models.map((model) => model.name)).to.include('rate');
    });

    it('finds shards with the floored modulo and from a uuid', async () => {
      expect(await store.api.findShard({ key: { $case: 'value', value: 6n } })).to.deep.equal({
        shard: 2,
        partition: 0,
      });
      expect(await store.api.findShard({ key: { $case: 'value', value: -1n } })).to.deep.equal({
        shard: 3,
        partition: 0,
      });
      // 0x00ff = 255 -> 255 mod 4 = 3
      expect(
        await store.api.findShard({
          key: { $case: 'uuid', uuid: '00ff0000-0000-4000-8000-000000000000' },
        }),
      ).to.deep.equal({ shard: 3, partition: 0 });
    });
  });

  describe('Put', () => {
    it('creates with every value in base version 0, then merges non-index values into new versions', async () => {
      const created = await put(
        rate(1, '1 bed', '2026-12-01', { net_price: 120.5, flags: { a: [1, 2] } }),
      );
      expect(created.created).to.equal(true);
      expect(created.base?.refKey).to.equal(0);
      expect(unpack(created.base!.body)).to.deep.equal(
        rate(1, '1 bed', '2026-12-01', { net_price: 120.5, flags: { a: [1, 2] } }),
      );

      const updated = await put({
        hotel_id: 1,
        room_type: '1 bed',
        check_in_date: '2026-12-01',
        net_price: 130,
        gateway: 'ignored',
      });
      expect(updated.created).to.equal(false);
      expect(updated.uuid).to.equal(created.uuid);
      expect(updated.base?.refKey).to.equal(1);
      // index fields are immutable: gateway (a secondary-index field) keeps its value
      expect(unpack(updated.base!.body)).to.deep.equal(
        rate(1, '1 bed', '2026-12-01', { net_price: 130, flags: { a: [1, 2] } }),
      );
      expect(updated.base!.shard).to.equal(created.base!.shard);
      expect(updated.base!.id > created.base!.id).to.equal(true);
    });

    it('answers a repeated request id with the same version instead of writing another', async () => {
      const id = requestId();
      const first = await put(rate(2, 'suite', '2026-12-02', { net_price: 1 }), id);
      const again = await put(rate(2, 'suite', '2026-12-02', { net_price: 1 }), id);
      expect(again.created).to.equal(true);
      expect(again.base).to.deep.equal(first.base);
      const latest = await store.api.getCell({
        model: 'rate',
        uuid: first.uuid,
        cell: '',
        refKey: undefined,
      });
      expect(latest.cell?.refKey).to.equal(0);
    });
  });

  describe('WriteCell, GetCell and Previous', () => {
    let uuid: string;
    before(async () => {
      uuid = (await put(rate(3, 'double', '2026-12-03', { net_price: 99 }))).uuid;
    });

    it('writes other cells from version 0, replacing or merging', async () => {
      const first = await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ enabled: true, note: 'x' }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      });
      expect(first.cell?.refKey).to.equal(0);
      const merged = await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ note: 'y', extra: null }),
        mode: WriteMode.WRITE_MODE_MERGE,
        requestId: requestId(),
      });
      expect(merged.cell?.refKey).to.equal(1);
      expect(unpack(merged.cell!.body)).to.deep.equal({ enabled: true, note: 'y', extra: null });
      const replaced = await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ only: false }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      });
      expect(unpack(replaced.cell!.body)).to.deep.equal({ only: false });
      const latest = await store.api.getCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        refKey: undefined,
      });
      expect(latest.cell).to.deep.equal(replaced.cell);
      const v0 = await store.api.getCell({ model: 'rate', uuid, cell: 'meta', refKey: 0 });
      expect(v0.cell).to.deep.equal(first.cell);
    });

    it('checks expected_ref_key: the right version writes, a stale one is ABORTED', async () => {
      const ok = await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'base',
        body: pack({ net_price: 101 }),
        mode: WriteMode.WRITE_MODE_MERGE,
        expectedRefKey: 0,
        requestId: requestId(),
      });
      expect(ok.cell?.refKey).to.equal(1);
      const stale = await rejection(
        store.api.writeCell({
          model: 'rate',
          uuid,
          cell: 'base',
          body: pack({ net_price: 102 }),
          mode: WriteMode.WRITE_MODE_MERGE,
          expectedRefKey: 0,
          requestId: requestId(),
        }),
      );
      expect(stale.code).to.equal(status.ABORTED);
      expect(stale.details).to.match(/version 1, not 0/);
      const fresh = await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'ota_rate',
        body: pack({ p: 1 }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        expectedRefKey: -1,
        requestId: requestId(),
      });
      expect(fresh.cell?.refKey).to.equal(0);
    });

    it('replays a repeated WriteCell request id', async () => {
      const id = requestId();
      const request = {
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ replay: 1 }),
        mode: WriteMode.WRITE_MODE_MERGE,
        requestId: id,
      };
      const first = await store.api.writeCell(request);
      const second = await store.api.writeCell(request);
      expect(first.replayed).to.equal(false);
      expect(second.replayed).to.equal(true);
      expect(second.cell).to.deep.equal(first.cell);
    });

    it('walks previous versions down to 0 and then says none', async () => {
      const latest = (
        await store.api.getCell({ model: 'rate', uuid, cell: 'meta', refKey: undefined })
      ).cell!;
      const seen: number[] = [latest.refKey];
      let current: Cell = latest;
      for (;;) {
        const previous = await store.api.previous({
          model: 'rate',
          uuid,
          cell: 'meta',
          refKey: current.refKey,
        });
        if (previous.none) {
          expect(previous.cell).to.equal(undefined);
          break;
        }
        seen.push(previous.cell!.refKey);
        current = previous.cell!;
      }
      expect(seen).to.deep.equal([...Array(latest.refKey + 1).keys()].reverse());
    });

    it('answers NOT_FOUND for an absent version or cell', async () => {
      const missingVersion = await rejection(
        store.api.getCell({ model: 'rate', uuid, cell: 'meta', refKey: 999 }),
      );
      expect(missingVersion.code).to.equal(status.NOT_FOUND);
      const otherRecord = await rejection(
        store.api.getCell({
          model: 'rate',
          uuid: '11111111-1111-4111-8111-111111111111',
          cell: 'base',
          refKey: undefined,
        }),
      );
      expect(otherRecord.code).to.equal(status.NOT_FOUND);
      expect(otherRecord.details).to.match(/has no version/);
    });
  });

  describe('Where', () => {
    const hotel = 42;
    before(async () => {
      for (let day = 1; day <= 12; day++) {
        const date = `2027-01-${String(day).padStart(2, '0')}`;
        await put({
          ...rate(hotel, day % 2 ? 'single' : 'double', date, { price: day }),
          gateway: day % 3 ? 'pegasus' : 'sabre',
        });
      }
      await put(rate(hotel + 4, 'single', '2027-01-01')); // same shard, other hotel
    });

    const where = (request: Partial<WhereRequest>) => store.api.where(request);
    const dates = (messages: Awaited<ReturnType<typeof where>>) =>
      messages.flatMap((m) => m.records).map((r) => unpack(r.cells[0]!.body).check_in_date);

    it('queries the primary index with each operator, in index order', async () => {
      const eqHotel = { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(hotel)] };
      const all = await where({ conditions: [eqHotel] });
      expect(dates(all)).to.have.length(12);
      const byDate = (op: Operator, values: IndexValue[]) =>
        where({ conditions: [eqHotel, { field: 'check_in_date', op, values }] }).then((m) =>
          dates(m).sort(),
        );
      expect(await byDate(Operator.OPERATOR_LT, [str('2027-01-03')])).to.deep.equal([
        '2027-01-01',
        '2027-01-02',
      ]);
      expect(await byDate(Operator.OPERATOR_LE, [str('2027-01-02')])).to.deep.equal([
        '2027-01-01',
        '2027-01-02',
      ]);
      expect(await byDate(Operator.OPERATOR_GT, [str('2027-01-11')])).to.deep.equal(['2027-01-12']);
      expect(await byDate(Operator.OPERATOR_GE, [str('2027-01-11')])).to.deep.equal([
        '2027-01-11',
        '2027-01-12',
      ]);
      expect(
        await byDate(Operator.OPERATOR_BETWEEN, [str('2027-01-04'), str('2027-01-06')]),
      ).to.deep.equal(['2027-01-04', '2027-01-05', '2027-01-06']);
      expect(
        await byDate(Operator.OPERATOR_IN, [
          str('2027-01-07'),
          str('2027-01-09'),
          str('1999-01-01'),
        ]),
      ).to.deep.equal(['2027-01-07', '2027-01-09']);
      expect(await byDate(Operator.OPERATOR_NE, [str('2027-01-01')])).to.have.length(11);
      const eq = await byDate(Operator.OPERATOR_EQ, [str('2027-01-05')]);
      expect(eq).to.deep.equal(['2027-01-05']);
      // ordered by room_type, then check_in_date: doubles first, each ascending by date
      const ordered = all.flatMap((m) => m.records).map((r) => unpack(r.cells[0]!.body));
      const keys = ordered.map((b) => `${b.room_type}|${b.check_in_date}`);
      expect(keys).to.deep.equal([...keys].sort());
      const descending = await where({ conditions: [eqHotel], order: SortOrder.SORT_ORDER_DESC });
      expect(descending.flatMap((m) => m.records).map((r) => r.uuid)).to.deep.equal(
        all
          .flatMap((m) => m.records)
          .map((r) => r.uuid)
          .reverse(),
      );
    });

    it('queries a named index, returns the cells asked for, and pages with a token', async () => {
      const conditions = [
        { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(hotel)] },
        { field: 'gateway', op: Operator.OPERATOR_EQ, values: [str('sabre')] },
      ];
      const sabre = await where({ index: 'secondary', conditions });
      expect(dates(sabre).sort()).to.deep.equal([
        '2027-01-03',
        '2027-01-06',
        '2027-01-09',
        '2027-01-12',
      ]);

      const uuid = sabre[0]!.records[0]!.uuid;
      await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ m: 1 }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      });
      const withMeta = await where({ index: 'secondary', conditions, cells: ['base', 'meta'] });
      const record = withMeta.flatMap((m) => m.records).find((r) => r.uuid === uuid)!;
      expect(record.cells.map((c) => c.name)).to.deep.equal(['base', 'meta']);
      const others = withMeta.flatMap((m) => m.records).filter((r) => r.uuid !== uuid);
      expect(others.every((r) => r.cells.length === 1)).to.equal(true);

      const pages: string[][] = [];
      let pageToken = '';
      do {
        const messages = await where({ conditions: [conditions[0]!], limit: 5, pageToken });
        pages.push(messages.flatMap((m) => m.records).map((r) => r.uuid));
        pageToken = messages[messages.length - 1]?.nextPageToken ?? '';
      } while (pageToken);
      expect(pages.map((p) => p.length)).to.deep.equal([5, 5, 2]);
      const all = await where({ conditions: [conditions[0]!] });
      expect(pages.flat()).to.deep.equal(all.flatMap((m) => m.records).map((r) => r.uuid));
    });

    it('reads base for an empty cell name, as GetCell does, each cell once', async () => {
      const conditions = [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(hotel)] }];
      const names = async (cells: string[]) =>
        (await where({ conditions, cells, limit: 1 }))
          .flatMap((m) => m.records)
          .map((r) => r.cells.map((c) => c.name));
      expect(await names([''])).to.deep.equal([['base']]);
      expect(await names(['', 'base'])).to.deep.equal([['base']]);
      const { pages } = await store.api.whereMany([{ conditions, cells: [''], limit: 1 }]);
      expect(pages[0]!.records[0]!.cells.map((c) => c.name)).to.deep.equal(['base']);
    });
  });

  describe('FetchLatestCells and Each', () => {
    it('pages a shard log strictly after the cursor, in ascending id, with next cursor and max id', async () => {
      // Content shards follow random uuids: page the fullest one.
      const sizes = await Promise.all(
        [0, 1, 2, 3].map(async (candidate) => {
          const page = await store.api.fetchLatestCells({
            model: 'rate',
            shard: candidate,
            cursor: 0n,
            limit: 10_000,
          });
          return page.cells.length;
        }),
      );
      const shard = sizes.indexOf(Math.max(...sizes));
      const everything = await store.api.fetchLatestCells({
        model: 'rate',
        shard,
        cursor: 0n,
        limit: 10_000,
      });
      expect(everything.cells.length).to.be.greaterThan(2);
      const ids = everything.cells.map((c) => c.id);
      expect(ids).to.deep.equal([...ids].sort((a, b) => Number(a - b)));
      expect(everything.cells.every((c) => c.shard === shard)).to.equal(true);
      expect(everything.maxId).to.equal(ids[ids.length - 1]);
      const page = await store.api.fetchLatestCells({
        model: 'rate',
        shard,
        cursor: ids[0]!,
        limit: 2,
      });
      expect(page.cells.map((c) => c.id)).to.deep.equal(ids.slice(1, 3));
      expect(page.nextCursor).to.equal(ids[2]);
      const empty = await store.api.fetchLatestCells({
        model: 'rate',
        shard,
        cursor: everything.maxId,
        limit: 10,
      });
      expect(empty.cells).to.deep.equal([]);
      expect(empty.nextCursor).to.equal(everything.maxId);
    });

    it('streams every shard to its end without follow', async () => {
      const messages = await collect(
        store.api.client.each({
          model: 'rate',
          shards: [],
          cursors: {},
          follow: false,
          batchSize: 3,
          heartbeatIntervalMs: 0,
        }),
      );
      const streamed = messages.flatMap((m) =>
        m.event?.$case === 'batch' ? m.event.batch.cells : [],
      );
      let expected = 0;
      for (let shard = 0; shard < 4; shard++) {
        const page = await store.api.fetchLatestCells({
          model: 'rate',
          shard,
          cursor: 0n,
          limit: 10_000,
        });
        expected += page.cells.length;
        const ids = streamed.filter((c) => c.shard === shard).map((c) => c.id);
        expect(ids).to.deep.equal(page.cells.map((c) => c.id));
      }
      expect(streamed).to.have.length(expected);
    });

    it('follows a shard: new writes arrive, heartbeats come when idle, cancel ends it', async () => {
      const first = await put(rate(7, 'follow', '2027-02-01'));
      const shard = first.base!.shard;
      const stream = store.api.client.each({
        model: 'rate',
        shards: [shard],
        cursors: { [shard]: first.base!.id },
        follow: true,
        batchSize: 100,
        heartbeatIntervalMs: 200,
      });
      const received: Cell[] = [];
      let heartbeats = 0;
      const done = new Promise<void>((resolve) => {
        stream.on('data', (message) => {
          if (message.event?.$case === 'batch') received.push(...message.event.batch.cells);
          if (message.event?.$case === 'heartbeat') heartbeats += 1;
        });
        stream.on('error', () => resolve());
        stream.on('end', () => resolve());
      });
      const written: bigint[] = [];
      for (let i = 0; i < 5; i++) {
        const cell = await store.api.writeCell({
          model: 'rate',
          uuid: first.uuid,
          cell: 'meta',
          body: pack({ i }),
          mode: WriteMode.WRITE_MODE_REPLACE,
          requestId: requestId(),
        });
        written.push(cell.cell!.id);
      }
      const deadline = Date.now() + 5000;
      while ((received.length < 5 || heartbeats === 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      stream.cancel();
      await done;
      expect(received.map((c) => c.id)).to.deep.equal(written);
      expect(heartbeats).to.be.greaterThan(0);
    });

    it('heartbeats no more often than the server polls, whatever interval the client asks', async () => {
      const first = await put(rate(8, 'follow', '2027-02-02'));
      const shard = first.base!.shard;
      const stream = store.api.client.each({
        model: 'rate',
        shards: [shard],
        cursors: { [shard]: first.base!.id },
        follow: true,
        batchSize: 100,
        heartbeatIntervalMs: 1,
      });
      let heartbeats = 0;
      const done = new Promise<void>((resolve) => {
        stream.on('data', (message) => {
          if (message.event?.$case === 'heartbeat') heartbeats += 1;
        });
        stream.on('error', () => resolve());
        stream.on('end', () => resolve());
      });
      const watchedMs = 1000;
      await new Promise((resolve) => setTimeout(resolve, watchedMs));
      stream.cancel();
      await done;
      // The fixture polls every 50 ms: at most a heartbeat (and a read of MySQL) per poll, where
      // the 1 ms asked for would make a thousand.
      expect(heartbeats).to.be.within(1, watchedMs / 50 + 2);
    });
  });
});
