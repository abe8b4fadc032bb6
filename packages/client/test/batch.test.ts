// Batch reads and writes (getCells, writeCells) through the SDK, against a real server and
// MariaDB: typed results in order, per-write typed errors, default modes, requestIds, the
// client-side refusal of index fields, and what each call sends.

import { expect } from 'chai';
import type { GetCellsRequest, WriteCellsRequest } from '@shameless/proto';
import { WriteMode } from '@shameless/proto';
import {
  Cell,
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  ReadonlyFieldError,
  connect,
  type Model,
  type WriteCellsResult,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  rejection,
  startStoreFixture,
  type StoreFixture,
} from './support/storeFixture.js';

const MISSING_UUID = '11111111-1111-4111-8111-111111111111';

describe('batches: getCells and writeCells', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let recording: RecordingTransport;
  let Rate: Model<typeof RATE_SCHEMA>;
  let hotel = 500;
  const newRate = (content: Record<string, unknown> = {}) =>
    Rate.put(rateValues(++hotel, '1 bed', '2026-12-01', content));
  const writesSent = (): WriteCellsRequest[] =>
    recording.callsOf('writeCells').map((call) => call.request as WriteCellsRequest);

  /** The cell of a write that succeeded; fails the test otherwise. */
  const cellOf = (result: WriteCellsResult<typeof RATE_SCHEMA> | undefined) => {
    if (!result?.ok) throw new Error(`expected a written result, got ${String(result?.error)}`);
    return result.cell;
  };

  before(async () => {
    fixture = await startStoreFixture();
    recording = new RecordingTransport(fixture.store.transport);
    Rate = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
  });
  beforeEach(() => recording.reset());
  after(async () => {
    await fixture?.close();
  });

  describe('writeCells', () => {
    it('answers each write in order with a Cell of its record', async () => {
      const first = await newRate({ net_price: 100 });
      const second = await newRate({ net_price: 200 });
      const results = await Rate.writeCells([
        { uuid: first.uuid, cell: 'meta', body: { note: 'a' } },
        { uuid: second.uuid, body: { net_price: 210 } },
        { uuid: first.uuid, cell: 'meta', body: { seen: true }, mode: 'merge' },
      ]);

      const cells = results.map(cellOf);
      expect(cells.every((cell) => cell instanceof Cell)).to.equal(true);
      expect(results.map((result) => result.ok && result.replayed)).to.deep.equal([
        false,
        false,
        false,
      ]);
      expect(cells.map((cell) => [cell.uuid, cell.name, cell.refKey])).to.deep.equal([
        [first.uuid, 'meta', 0],
        [second.uuid, 'base', 1],
        [first.uuid, 'meta', 1],
      ]);
      expect(cells[0]!.body).to.deep.equal({ note: 'a' });
      expect(cells[2]!.body).to.deep.equal({ note: 'a', seen: true });
      // On base the default is a merge: the index fields and other content stay.
      expect(cells[1]!.body).to.deep.equal(
        rateValues(hotel, '1 bed', '2026-12-01', { net_price: 210 }),
      );
      expect(cells[1]!.record.uuid).to.equal(second.uuid);
      expect(cells[0]!.createdAt).to.be.instanceOf(Date);

      const [sent] = writesSent();
      expect(sent?.writes.map((write) => write.mode)).to.deep.equal([
        WriteMode.WRITE_MODE_REPLACE,
        WriteMode.WRITE_MODE_MERGE,
        WriteMode.WRITE_MODE_MERGE,
      ]);
      // The cells are live: a save goes on from the version written, checked against it.
      await cells[2]!.set('note', 'b').save();
      expect(cells[2]!.refKey).to.equal(2);
      expect(await rejection(cells[0]!.set('note', 'c').save())).to.be.instanceOf(ConflictError);
    });

    it('gives each refused write its typed error and writes the others', async () => {
      const rate = await newRate();
      const results = await Rate.writeCells([
        { uuid: rate.uuid, cell: 'meta', body: { n: 0 } },
        { uuid: MISSING_UUID, cell: 'meta', body: { n: 1 } },
        { uuid: rate.uuid, cell: 'meta', body: { n: 2 }, expectedRefKey: -1 },
        { uuid: rate.uuid, cell: 'meta', body: { n: 3 }, expectedRefKey: 0 },
      ]);
      expect(results.map((result) => result.ok)).to.deep.equal([true, false, false, true]);
      const [, missing, stale, last] = results;
      expect(!missing?.ok && missing?.error).to.be.instanceOf(NotFoundError);
      expect(!stale?.ok && stale?.error).to.be.instanceOf(ConflictError);
      if (stale?.ok === false) {
        expect(stale.error.retryable).to.equal(false);
        expect(stale.error.message).to.match(/version 0, not -1/);
      }
      expect(cellOf(last).refKey).to.equal(1);
      expect(cellOf(last).body).to.deep.equal({ n: 3 });
    });

    it('sends one requestId per write, retryable but not hedged, and keeps given ones', async () => {
      const rate = await newRate();
      const results = await Rate.writeCells([
        { uuid: rate.uuid, cell: 'meta', body: { a: 1 } },
        { uuid: rate.uuid, cell: 'meta', body: { b: 2 }, requestId: 'batch-test-given-1' },
        { uuid: rate.uuid, cell: 'meta', body: { c: 3 } },
      ]);
      const [call] = recording.callsOf('writeCells');
      expect(call?.options).to.include({ idempotent: true, hedgeable: false });
      const ids = (call?.request as WriteCellsRequest).writes.map((write) => write.requestId);
      expect(ids[1]).to.equal('batch-test-given-1');
      expect(new Set(ids).size).to.equal(3);

      // The same requestIds again (as a retry sends them): the versions already written.
      const again = await Rate.writeCells(
        (call?.request as WriteCellsRequest).writes.map((write, i) => ({
          uuid: write.uuid,
          cell: 'meta' as const,
          body: { other: i },
          requestId: write.requestId,
        })),
      );
      expect(again.map((result) => result.ok && result.replayed)).to.deep.equal([true, true, true]);
      expect(again.map((result) => cellOf(result).refKey)).to.deep.equal(
        results.map((result) => cellOf(result).refKey),
      );
      expect(cellOf(again[2]).body).to.deep.equal({ c: 3 });
    });

    it("answers batches larger than grpc-js's 4 MiB default message size", async () => {
      const rate = await newRate();
      const payload = 'x'.repeat(16 * 1024);
      // 320 versions of 16 KiB: about 5 MiB each way.
      const writes = Array.from({ length: 320 }, (_, i) => ({
        uuid: rate.uuid,
        cell: 'meta' as const,
        body: { i, payload },
      }));
      const results = await Rate.writeCells(writes);
      expect(results.map((result) => result.ok && result.cell.refKey)).to.deep.equal(
        writes.map((_, i) => i),
      );
      const [meta] = await Rate.getCells([{ uuid: rate.uuid, cell: 'meta' }]);
      expect(meta?.get('i')).to.equal(319);
    });

    it('refuses index fields before any call', async () => {
      const rate = await newRate();
      const error = await rejection(
        Rate.writeCells([
          { uuid: rate.uuid, cell: 'meta', body: { ok: 1 } },
          // @ts-expect-error index fields can never be written
          { uuid: rate.uuid, cell: 'meta', body: { gateway: 'sabre' } },
        ]),
      );
      expect(error).to.be.instanceOf(ReadonlyFieldError);
      expect(error.message).to.match(/gateway cannot be modified: it is part of the secondary/);
      expect(recording.callsOf('writeCells')).to.have.length(0);
    });

    it('fails the whole call on a malformed write, naming it, and writes nothing', async () => {
      const rate = await newRate();
      const error = await rejection(
        Rate.writeCells([
          { uuid: rate.uuid, cell: 'meta', body: { a: 1 } },
          { uuid: 'not-a-uuid', cell: 'meta', body: { a: 2 } },
        ]),
      );
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.match(/^writes\[1\]\.uuid: /);
      const [meta] = await Rate.getCells([{ uuid: rate.uuid, cell: 'meta' }]);
      expect(meta).to.equal(undefined);
    });

    it('resolves an empty list without a call', async () => {
      expect(await Rate.writeCells([])).to.deep.equal([]);
      expect(await Rate.getCells([])).to.deep.equal([]);
      expect(recording.calls).to.have.length(0);
    });
  });

  describe('getCells', () => {
    it('answers the latest version of each key in order, undefined where there is none', async () => {
      const first = await newRate({ net_price: 1 });
      const second = await newRate({ net_price: 2 });
      await Rate.writeCells([
        { uuid: first.uuid, cell: 'meta', body: { v: 0 } },
        { uuid: first.uuid, cell: 'meta', body: { v: 1 } },
      ]);
      recording.reset();

      const cells = await Rate.getCells([
        { uuid: first.uuid, cell: 'meta' },
        { uuid: second.uuid, cell: 'meta' },
        { uuid: MISSING_UUID },
        { uuid: second.uuid },
      ]);
      expect(cells.map((cell) => cell && [cell.uuid, cell.name, cell.refKey])).to.deep.equal([
        [first.uuid, 'meta', 1],
        undefined,
        undefined,
        [second.uuid, 'base', 0],
      ]);
      expect(cells[0]!.body).to.deep.equal({ v: 1 });
      expect(cells[3]!.get('net_price')).to.equal(2);
      expect((await cells[0]!.previous())?.body).to.deep.equal({ v: 0 });

      const [call] = recording.callsOf('getCells');
      expect(call?.options).to.include({ idempotent: true, hedgeable: true });
      expect((call?.request as GetCellsRequest).keys.map((key) => key.cell)).to.deep.equal([
        'meta',
        'meta',
        'base',
        'base',
      ]);
    });

    it('rejects an unknown cell with a NotFoundError naming the key', async () => {
      const rate = await newRate();
      const error = await rejection(
        // @ts-expect-error no such cell
        Rate.getCells([{ uuid: rate.uuid }, { uuid: rate.uuid, cell: 'nope' }]),
      );
      expect(error).to.be.instanceOf(NotFoundError);
      expect(error.message).to.match(/^keys\[1\]\.cell: /);
    });
  });
});
