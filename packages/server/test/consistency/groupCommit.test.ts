// Issue 10, group commit: writes that arrive together share one transaction, and each keeps its
// own outcome. A conflict, a missing record or a repeated request id in the middle of a group
// touch nobody else; creates converge inside a group; and a server killed while groups commit
// loses nothing it acknowledged and applies nothing twice.
import { expect } from 'chai';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { ConflictError, NotFoundError } from '../../src/engine/base/errors.js';
import type { WriteCellInput } from '../../src/engine/engine.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import {
  ProcessCluster,
  codeName,
  grpcCode,
  newRequestId,
  range,
  sleep,
  versionsByCell,
} from './support.js';
import { WriteMode } from '@shameless/proto';

describe('consistency: group commit', function () {
  this.timeout(120_000);

  describe('one group, many outcomes', () => {
    let store: StoreFixture;
    before(async () => {
      store = await startStoreFixture({ shardsCount: 4 });
      await store.api.defineModel({ model: RATE_MODEL });
    });
    after(() => store?.close());

    const rate = (hotel: number, room = '1 bed') => ({
      hotel_id: hotel,
      room_type: room,
      check_in_date: '2026-03-01',
      gateway: 'g',
      discount_type: 'd',
    });

    it('keeps each write its own: versions chain, a conflict, a missing record and a repeat touch nobody else', async () => {
      const { uuid } = await store.engine.put(UNBOUNDED, 'rate', pack(rate(1)), requestId());
      const meta = (body: Record<string, unknown>, extra: Partial<WriteCellInput> = {}) => ({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack(body),
        mode: 'merge' as const,
        requestId: requestId(),
        ...extra,
      });
      await store.engine.writeCell(UNBOUNDED, meta({ a: -1 }));
      const repeated = requestId();
      const missing = '00000000-0000-4000-8000-000000000000';
      const writes: WriteCellInput[] = [
        meta({ a: 0 }),
        meta({ a: 1 }),
        meta({ a: 2, b: 2 }, { requestId: repeated }),
        meta({ stale: true }, { expectedRefKey: 0 }),
        meta({ lost: true }, { uuid: missing }),
        meta({ a: 2, b: 2 }, { requestId: repeated }),
        { ...meta({ b: 1 }), cell: 'base' },
      ];

      const before = store.engine.writeStats();
      // Issued in one turn of the event loop: they form one group.
      const results = await Promise.allSettled(
        writes.map((write) => store.engine.writeCell(UNBOUNDED, write)),
      );
      const after = store.engine.writeStats();
      expect(after.groups - before.groups, 'transactions').to.equal(1);
      expect(after.items - before.items, 'writes carried').to.equal(writes.length);

      const value = (i: number) => {
        const result = results[i]!;
        if (result.status === 'rejected') throw result.reason;
        return result.value;
      };
      expect([0, 1, 2].map((i) => value(i).cell.refKey)).to.deep.equal([1, 2, 3]);
      expect(results[3]!.status === 'rejected' && results[3]!.reason).to.be.instanceOf(
        ConflictError,
      );
      expect(results[4]!.status === 'rejected' && results[4]!.reason).to.be.instanceOf(
        NotFoundError,
      );
      expect(value(5).replayed).to.equal(true);
      expect(value(5).cell.id).to.equal(value(2).cell.id);
      expect(value(6).cell.refKey).to.equal(1);

      const latest = await store.engine.getCell(UNBOUNDED, 'rate', uuid, 'meta');
      expect(latest.refKey).to.equal(3);
      // The merges applied in order, each onto the one before.
      expect(unpack(latest.body)).to.deep.equal({ a: 2, b: 2 });
      expect(unpack((await store.engine.getCell(UNBOUNDED, 'rate', uuid, 'base')).body)).to.include(
        { b: 1 },
      );
      expect(
        (await store.engine.getCells(UNBOUNDED, 'rate', [{ uuid: missing, cell: 'base' }]))[0],
      ).to.equal(undefined);
    });

    it('creates in one group: distinct values each create, equal values converge on one record', async () => {
      const puts = [
        rate(2, 'a'),
        rate(2, 'b'),
        rate(3, 'same'),
        rate(4, 'c'),
        { ...rate(3, 'same'), net_price: 5 },
        rate(5, 'd'),
      ].map((values) => ({ model: 'rate', values: pack(values), requestId: requestId() }));

      const before = store.engine.writeStats();
      const outcomes = await store.engine.putMany(UNBOUNDED, puts);
      const after = store.engine.writeStats();
      // One transaction for the creates, one for the put that found its values taken and
      // became an update of the winner.
      expect(after.groups - before.groups, 'transactions').to.equal(2);

      const written = outcomes.map((outcome) => {
        if (!outcome.ok) throw outcome.error;
        return outcome;
      });
      expect(written.map((put) => put.created)).to.deep.equal([
        true,
        true,
        true,
        true,
        false,
        true,
      ]);
      expect(new Set(written.map((put) => put.uuid)).size).to.equal(5);
      expect(written[4]!.uuid).to.equal(written[2]!.uuid);
      expect(written[4]!.base.refKey).to.equal(1);
      expect(unpack(written[4]!.base.body)).to.include({ room_type: 'same', net_price: 5 });
      for (const put of written) {
        const page = await store.engine.where(UNBOUNDED, {
          model: 'rate',
          index: 'secondary',
          conditions: [
            { field: 'hotel_id', op: 'eq', values: [unpack(put.base.body).hotel_id as number] },
          ],
          cells: [],
          descending: false,
          limit: 0,
          pageToken: '',
        });
        expect(page.records.map((record) => record.uuid)).to.include(put.uuid);
      }
    });
  });

  describe('a server killed while groups commit', () => {
    const SHARDS = 4;
    const WRITERS = 16;
    const KILLS = 3;
    let cluster: ProcessCluster;

    before(async () => {
      cluster = await ProcessCluster.serving(SHARDS);
    });
    after(() => cluster?.close());

    interface Write {
      uuid: string;
      requestId: string;
      body: Record<string, unknown>;
      acked?: { id: bigint; refKey: number };
      error?: string;
    }

    it('loses no acknowledged write and applies none twice', async () => {
      const records: string[] = [];
      for (const hotel of range(4)) {
        const put = await cluster.api(0).put({
          model: 'rate',
          values: pack({
            hotel_id: 8000 + hotel,
            room_type: 'r',
            check_in_date: '2024-01-01',
            gateway: 'g',
          }),
          requestId: newRequestId('seed'),
        });
        records.push(put.uuid);
      }
      const writes: Write[] = [];
      let up = true;
      let stop = false;
      const send = (write: Write) =>
        cluster.api(0).writeCell({
          model: 'rate',
          uuid: write.uuid,
          cell: 'meta',
          body: pack(write.body),
          mode: WriteMode.WRITE_MODE_MERGE,
          expectedRefKey: undefined,
          requestId: write.requestId,
        });
      const writer = async (w: number) => {
        let serial = 0;
        while (!stop) {
          if (!up) {
            await sleep(5);
            continue;
          }
          serial += 1;
          const write: Write = {
            uuid: records[(w + serial) % records.length]!,
            requestId: newRequestId('group'),
            body: { writer: w, serial },
          };
          writes.push(write);
          try {
            const { cell } = await send(write);
            write.acked = { id: cell!.id, refKey: cell!.refKey };
          } catch (error) {
            write.error = codeName(grpcCode(error));
          }
        }
      };
      const writing = Promise.all(range(WRITERS).map(writer));
      for (const _ of range(KILLS)) {
        await sleep(200 + Math.random() * 400);
        up = false;
        await cluster.crashAndRestart(0);
        up = true;
      }
      await sleep(300);
      stop = true;
      await writing;

      const unacked = writes.filter((write) => !write.acked);
      console.log(
        `      group commit: ${writes.length} writes, ${unacked.length} cut off by ${KILLS} kills`,
      );
      expect(unacked.length, 'some writes were cut off').to.be.greaterThan(0);
      // Resent unchanged, every cut-off write applies at most once more.
      for (const write of unacked) {
        const { cell } = await send(write);
        write.acked = { id: cell!.id, refKey: cell!.refKey };
      }

      const rows = (await cluster.contentRows()).filter((row) => row.cell === 'meta');
      const byRequest = new Map(rows.map((row) => [row.requestId, row]));
      expect(byRequest.size, 'no request id stored twice').to.equal(rows.length);
      expect(rows.length, 'one version per write').to.equal(writes.length);
      for (const write of writes) {
        const row = byRequest.get(write.requestId);
        expect(row, write.requestId).to.not.equal(undefined);
        expect([row!.id, row!.refKey, row!.uuid]).to.deep.equal([
          write.acked!.id,
          write.acked!.refKey,
          write.uuid,
        ]);
        expect(unpack(row!.body)).to.include(write.body);
      }
      for (const [cell, versions] of versionsByCell(rows)) {
        expect(
          versions.map((row) => row.refKey),
          `versions of ${cell}`,
        ).to.deep.equal(range(versions.length));
      }
    });
  });
});
