// Cells: save and update on base and on other cells, optimistic concurrency, previous, reload,
// present, asJSON, cells and named accessors, against a real server and MariaDB.

import { expect } from 'chai';
import type { WriteCellRequest } from '@shameless/proto';
import { WriteMode } from '@shameless/proto';
import {
  Cell,
  ConflictError,
  DeadlineExceededError,
  InvalidArgumentError,
  MessagePackExtension,
  connect,
  type Model,
} from '../src/index.js';
import { randomUUID } from 'node:crypto';
import { decodeBody, encodeBody } from '../src/model/body.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  rejection,
  startStoreFixture,
  type StoreFixture,
} from './support/storeFixture.js';

/** Bodies sent, decoded: no cell of the store is named. */
const SOME_CELL = { model: 'rate', uuid: 'sent', cell: 'sent' };

describe('cells: save, update, versions', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let recording: RecordingTransport;
  let Rate: Model<typeof RATE_SCHEMA>;
  /** The same model seen by another client ("another process"). */
  let OtherRate: Model<typeof RATE_SCHEMA>;
  let hotel = 100;
  const newRate = (content: Record<string, unknown> = {}) =>
    Rate.put(rateValues(++hotel, '1 bed', '2026-12-01', content));
  const writesSent = (): WriteCellRequest[] =>
    recording.callsOf('writeCell').map((call) => call.request as WriteCellRequest);

  before(async () => {
    fixture = await startStoreFixture();
    recording = new RecordingTransport(fixture.store.transport);
    Rate = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
    OtherRate = await (await fixture.connectAnother()).defineModel(RATE_SCHEMA);
  });
  beforeEach(() => recording.reset());
  after(async () => {
    await fixture?.close();
  });

  describe('save', () => {
    it('on base: writes the body as the next version, checked against the version read', async () => {
      const rate = await newRate({ net_price: 120 });
      rate.set('net_price', 130).set('currency', 'USD');
      await rate.save();

      const [sent] = writesSent();
      expect(sent?.cell).to.equal('base');
      expect(sent?.expectedRefKey).to.equal(0);
      // Index fields may not appear in a write: base is merged without them.
      expect(sent?.mode).to.equal(WriteMode.WRITE_MODE_MERGE);
      expect(rate.refKey).to.equal(1);
      const stored = await OtherRate.find(rate.uuid);
      expect(stored?.refKey).to.equal(1);
      expect(stored?.body).to.deep.equal(
        rateValues(hotel, '1 bed', '2026-12-01', { net_price: 130, currency: 'USD' }),
      );
    });

    it('on another cell: writes it the same way, starting from version 0 (expectedRefKey -1)', async () => {
      const rate = await newRate();
      await rate.meta.load();
      rate.meta.set('hotel_enabled', true).set('note', 'first');
      await rate.meta.save();
      expect(rate.meta.refKey).to.equal(0);
      expect(writesSent()[0]).to.include({
        cell: 'meta',
        expectedRefKey: -1,
        mode: WriteMode.WRITE_MODE_MERGE,
      });

      rate.meta.set('note', 'second');
      await rate.cell('meta').save();
      const other = (await OtherRate.find(rate.uuid, { cells: ['meta'] }))!;
      expect(other.meta.refKey).to.equal(1);
      expect(other.meta.body).to.deep.equal({ hotel_enabled: true, note: 'second' });
      expect(other.base.refKey, 'base untouched').to.equal(0);
    });

    it('on a stale cell rejects with a ConflictError and writes nothing', async () => {
      const rate = await newRate({ net_price: 120 });
      const other = (await OtherRate.find(rate.uuid))!;
      await other.update({ net_price: 125 });

      rate.set('net_price', 130);
      const error = await rejection(rate.save());
      expect(error).to.be.instanceOf(ConflictError);
      expect(writesSent()[0]?.expectedRefKey).to.equal(0);
      const stored = await OtherRate.find(rate.uuid);
      expect(stored?.refKey).to.equal(1);
      expect(stored?.get('net_price')).to.equal(125);

      // Re-read and decide again.
      await rate.reload();
      rate.set('net_price', 130);
      await rate.save();
      expect(rate.refKey).to.equal(2);
    });

    it('sends only the keys set since the version was read, merged into that version', async () => {
      const rate = await newRate({ net_price: 120, currency: 'EUR', extras: { breakfast: true } });
      rate.set('net_price', 130);
      await rate.save();
      rate.set('currency', 'USD').set('tax', 0.5);
      await rate.save();

      const patches = writesSent().map((sent) => decodeBody(sent.body, SOME_CELL));
      expect(patches).to.deep.equal([{ net_price: 130 }, { currency: 'USD', tax: 0.5 }]);
      expect(writesSent().map((sent) => [sent.mode, sent.expectedRefKey])).to.deep.equal([
        [WriteMode.WRITE_MODE_MERGE, 0],
        [WriteMode.WRITE_MODE_MERGE, 1],
      ]);
      const expected = rateValues(hotel, '1 bed', '2026-12-01', {
        net_price: 130,
        currency: 'USD',
        extras: { breakfast: true },
        tax: 0.5,
      });
      expect(rate.body).to.deep.equal(expected);
      expect((await OtherRate.find(rate.uuid))?.body).to.deep.equal(expected);
    });

    it('with nothing set still writes a new version, with an empty patch (as the gem does)', async () => {
      const rate = await newRate({ net_price: 120 });
      await rate.save();
      expect(writesSent().map((sent) => Buffer.from(sent.body).toString('hex'))).to.deep.equal([
        '80',
      ]);
      expect(rate.refKey).to.equal(1);
      const stored = (await OtherRate.find(rate.uuid))!;
      expect(stored.refKey).to.equal(1);
      expect(stored.body).to.deep.equal(
        rateValues(hotel, '1 bed', '2026-12-01', { net_price: 120 }),
      );

      // And so does a cell with no version yet: version 0, an empty body.
      await rate.meta.load();
      await rate.meta.save();
      expect(rate.meta.refKey).to.equal(0);
      expect(rate.meta.body).to.deep.equal({});
    });

    it('forgets the keys set when the cell is read again', async () => {
      const rate = await newRate({ net_price: 120 });
      rate.set('net_price', 999).set('draft', true);
      await rate.reload();
      await rate.save();
      expect(writesSent().map((sent) => decodeBody(sent.body, SOME_CELL))).to.deep.equal([{}]);
      expect(rate.body).to.deep.equal(rateValues(hotel, '1 bed', '2026-12-01', { net_price: 120 }));
    });

    it('writes a value changed in place only once it is set again', async () => {
      const rate = await newRate({ extras: { breakfast: true } });
      const extras = rate.get('extras') as { breakfast: boolean };
      extras.breakfast = false;
      await rate.save();
      expect((await OtherRate.find(rate.uuid))?.get('extras')).to.deep.equal({ breakfast: true });

      rate.set('extras', extras);
      await rate.save();
      expect((await OtherRate.find(rate.uuid))?.get('extras')).to.deep.equal({ breakfast: false });
    });

    it('keeps the bytes of every key not set: a Ruby float 120.0 and an integer 2^40 survive', async () => {
      // Bodies as the gem's Ruby writes them: net_price is the float 120.0 (which the SDK
      // reads as the number 120) and big is 2^40 as a uint64.
      const rubyEntries = Buffer.concat([
        Buffer.from('a96e65745f7072696365' + 'cb405e000000000000', 'hex'), // "net_price": 120.0
        Buffer.from('a3626967' + 'cf0000010000000000', 'hex'), // "big": 2^40
      ]);
      const indexFields = encodeBody(rateValues(++hotel, '1 bed', '2026-12-01'));
      expect(indexFields[0], 'five index fields in a fixmap').to.equal(0x85);
      const created = await fixture.store.transport.unary(
        'put',
        {
          model: 'rate',
          values: Buffer.concat([Buffer.from([0x87]), indexFields.subarray(1), rubyEntries]),
          requestId: randomUUID(),
        },
        { idempotent: true, hedgeable: false },
      );
      await fixture.store.transport.unary(
        'writeCell',
        {
          model: 'rate',
          uuid: created.uuid,
          cell: 'meta',
          body: Buffer.concat([Buffer.from([0x82]), rubyEntries]),
          mode: WriteMode.WRITE_MODE_REPLACE,
          expectedRefKey: undefined,
          requestId: randomUUID(),
        },
        { idempotent: true, hedgeable: false },
      );
      const stored = async (cell: string) => {
        const response = await fixture.store.transport.unary(
          'getCell',
          { model: 'rate', uuid: created.uuid, cell, refKey: undefined },
          { idempotent: true, hedgeable: false },
        );
        return Buffer.from(response.cell!.body).toString('hex');
      };

      const rate = (await Rate.find(created.uuid, { cells: ['meta'] }))!;
      expect(rate.get('net_price')).to.equal(120);
      rate.set('note', 'seen');
      await rate.save();
      await rate.meta.update({ note: 'seen' });
      rate.meta.set('checked', true);
      await rate.meta.save();

      for (const cell of ['base', 'meta']) {
        const bytes = await stored(cell);
        expect(bytes, `${cell} keeps net_price a float64`).to.include(
          'a96e65745f7072696365cb405e000000000000',
        );
        expect(bytes, `${cell} keeps big a uint64`).to.include('a3626967cf0000010000000000');
        expect(bytes).to.include('a46e6f7465a47365656e'); // "note": "seen"
      }
      expect(rate.refKey).to.equal(1);
      expect(rate.meta.refKey).to.equal(2);
      expect(rate.meta.body).to.deep.equal({
        net_price: 120,
        big: 2 ** 40,
        note: 'seen',
        checked: true,
      });
    });

    it('writes a typed array, a DataView and an ArrayBuffer as a binary of their bytes', async () => {
      const floats = new Float64Array([1.5, -2.25]);
      const shorts = new Uint16Array([1, 0x1234]);
      const within = new Uint8Array([9, 8, 7, 6]).buffer;
      const values = {
        floats,
        shorts,
        view: new DataView(within, 1, 2),
        buffer: within,
        nested: [new Int32Array([-1])],
      };
      const rate = await newRate();
      await rate.meta.update(values);
      const stored = (await OtherRate.find(rate.uuid, { cells: ['meta'] }))!.meta;
      const bytes = (view: ArrayBufferView) =>
        Buffer.from(view.buffer, view.byteOffset, view.byteLength).toString('hex');
      const read = (value: unknown) => Buffer.from(value as Uint8Array).toString('hex');
      expect(read(stored.get('floats'))).to.equal(bytes(floats));
      expect(read(stored.get('shorts'))).to.equal(bytes(shorts));
      expect(read(stored.get('view'))).to.equal('0807');
      expect(read(stored.get('buffer'))).to.equal('09080706');
      expect(read((stored.get('nested') as unknown[])[0])).to.equal('ffffffff');
    });

    it('reads a nested map with integer keys (as Ruby stores it) as a Map, and writes its keys back as integers', async () => {
      // meta as the gem stores { "prices" => { 20261201 => 120 } }.
      const prices = 'a6707269636573' + '81' + 'ce01352951' + '78';
      const rate = await newRate();
      await fixture.store.transport.unary(
        'writeCell',
        {
          model: 'rate',
          uuid: rate.uuid,
          cell: 'meta',
          body: Buffer.from('81' + prices, 'hex'),
          mode: WriteMode.WRITE_MODE_REPLACE,
          expectedRefKey: undefined,
          requestId: randomUUID(),
        },
        { idempotent: true, hedgeable: false },
      );
      const meta = (await Rate.find(rate.uuid, { cells: ['meta'] }))!.meta;
      const read = meta.get('prices');
      expect(read).to.be.instanceOf(Map);
      expect([...(read as Map<unknown, unknown>)]).to.deep.equal([[20261201, 120]]);

      // Written back as read: the same bytes.
      meta.set('prices', read);
      await meta.save();
      expect(Buffer.from(writesSent()[0]!.body).toString('hex')).to.equal('81' + prices);
      // With a date added: both keys stay integers.
      meta.set('prices', new Map([...(read as Map<unknown, unknown>), [20261202, 130]]));
      await meta.save();
      const stored = await OtherRate.find(rate.uuid, { cells: ['meta'] });
      expect([...(stored!.meta.get('prices') as Map<unknown, unknown>)]).to.deep.equal([
        [20261201, 120],
        [20261202, 130],
      ]);
      // JSON has string keys only: asJSON writes such a map as an object.
      expect(JSON.stringify(stored!.meta.asJSON().body)).to.equal(
        '{"prices":{"20261201":120,"20261202":130}}',
      );
    });

    it('keeps a key named __proto__ as a key, at the top and nested, without touching prototypes', async () => {
      const rate = await newRate();
      rate.set('__proto__', 'kept').set('nested', JSON.parse('{"__proto__": {"x": 1}}'));
      await rate.save();
      const stored = (await OtherRate.find(rate.uuid))!;
      expect(stored.has('__proto__')).to.equal(true);
      expect(stored.get('__proto__')).to.equal('kept');
      expect(Object.keys(stored.body)).to.include('__proto__').and.not.include('__proto_');
      expect(Object.getPrototypeOf(stored.body)).to.equal(Object.prototype);
      const nested = stored.get('nested') as object;
      expect(Object.keys(nested)).to.deep.equal(['__proto__']);
      expect(Object.getPrototypeOf(nested)).to.equal(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(nested, '__proto__')?.value).to.deep.equal({ x: 1 });
    });

    it('resends the same requestId after a failure with an unknown outcome, so it applies once', async () => {
      const rate = await newRate({ net_price: 120 });
      rate.set('net_price', 130);
      // The write reaches the server, but its answer is lost.
      recording.loseAnswers(
        'writeCell',
        1,
        () => new DeadlineExceededError('writeCell: deadline exceeded'),
      );
      expect(await rejection(rate.save())).to.be.instanceOf(DeadlineExceededError);
      await rate.save(); // the caller tries again
      const [first, second] = writesSent();
      expect(second?.requestId).to.equal(first?.requestId);
      expect(rate.refKey, 'one version, not a conflict').to.equal(1);
      expect((await OtherRate.find(rate.uuid))?.refKey).to.equal(1);
    });

    it('keeps a key set while a save is out, and writes it with the next save', async () => {
      const rate = await newRate({ net_price: 120 });
      rate.set('net_price', 130);
      const saving = rate.save();
      rate.set('tax_rate', 11); // not in the write already sent
      await saving;
      expect(rate.refKey).to.equal(1);
      expect(rate.get('tax_rate'), 'still set here').to.equal(11);
      await rate.save();
      const stored = (await OtherRate.find(rate.uuid))!;
      expect(stored.get('net_price')).to.equal(130);
      expect(stored.get('tax_rate')).to.equal(11);
    });

    it('does not resend a write of unknown outcome once a key was set while it was out', async () => {
      const rate = await newRate({ net_price: 120 });
      rate.set('net_price', 130);
      recording.loseAnswers(
        'writeCell',
        1,
        () => new DeadlineExceededError('writeCell: deadline exceeded'),
      );
      const saving = rate.save();
      rate.set('tax_rate', 11);
      expect(await rejection(saving)).to.be.instanceOf(DeadlineExceededError);
      // The lost write did land: the next save, holding tax_rate, must not pass for it.
      expect(await rejection(rate.save())).to.be.instanceOf(ConflictError);
      expect(rate.get('tax_rate')).to.equal(11);
      await rate.reload();
      await rate.update({ tax_rate: 11 });
      expect((await OtherRate.find(rate.uuid))?.get('tax_rate')).to.equal(11);
    });
  });

  describe('update', () => {
    it('shallow-merges into base and writes it, keeping other keys and index fields', async () => {
      const rate = await newRate({ net_price: 120, extras: { breakfast: true } });
      await rate.update({ tax_rate: 11, extras: { parking: true } });
      expect(rate.refKey).to.equal(1);
      const stored = (await OtherRate.find(rate.uuid))!;
      expect(stored.body).to.deep.equal(
        rateValues(hotel, '1 bed', '2026-12-01', {
          net_price: 120,
          tax_rate: 11,
          extras: { parking: true },
        }),
      );
    });

    it('refuses a value MessagePack cannot hold, naming its key path, and leaves the cell as it was', async () => {
      const circular: Record<string, unknown> = { a: 1 };
      circular.self = circular;
      const cases: [Record<string, unknown>, string, RegExp][] = [
        [{ price_cents: 2n ** 64n }, 'price_cents', /does not fit a MessagePack integer/],
        [{ rates: [{ night: 1, cents: -(2n ** 63n) - 1n }] }, 'rates[0].cents', /does not fit/],
        [{ prices: new Map([[20261169, 2n ** 64n]]) }, 'prices.20261169', /does not fit/],
        [{ tag: Symbol('x') }, 'tag', /a symbol/],
        [{ fn: () => 1 }, 'fn', /a function/],
        [{ c: circular }, 'c.self', /cycle/],
      ];
      const rate = await newRate({ net_price: 120 });
      for (const [values, path, reason] of cases) {
        recording.reset();
        const error = await rejection(rate.update(values));
        expect(error, path).to.be.instanceOf(InvalidArgumentError);
        expect(error.message, path).to.include(`cell base of ${rate.uuid}: ${path}: `);
        expect(error.message, path).to.match(reason);
        expect(writesSent(), 'nothing sent').to.have.length(0);
        expect(rate.has(Object.keys(values)[0]!), 'the key is not set').to.equal(false);
      }
      // Nothing refused is left pending: the next update writes only its own values.
      await rate.update({ tax_rate: 11 });
      expect(decodeBody(writesSent()[0]!.body, SOME_CELL)).to.deep.equal({ tax_rate: 11 });

      const put = await rejection(
        Rate.put(rateValues(++hotel, '1 bed', '2026-12-01', { price_cents: 2n ** 64n })),
      );
      expect(put).to.be.instanceOf(InvalidArgumentError);
      expect(put.message).to.match(/^put on rate: price_cents: 18446744073709551616 does not fit/);
      const writes = await rejection(
        Rate.writeCells([
          { uuid: rate.uuid, body: { ok: 1 } },
          { uuid: rate.uuid, body: { fn: () => 1 } },
        ]),
      );
      expect(writes).to.be.instanceOf(InvalidArgumentError);
      expect(writes.message).to.match(/^writeCells on rate: writes\[1\]\.body: fn: a function/);
    });

    it('on a cell not read yet merges on the server in one call', async () => {
      const rate = await newRate();
      await rate.meta.update({ hotel_enabled: true });
      expect(recording.calls.map((call) => call.method)).to.deep.equal(['put', 'writeCell']);
      expect(writesSent()[0]).to.include({ mode: WriteMode.WRITE_MODE_MERGE });
      expect(writesSent()[0]?.expectedRefKey).to.equal(undefined);
      expect(rate.meta.present).to.equal(true);
      expect(rate.meta.refKey).to.equal(0);

      await rate.meta.update({ hotel_enabled: false, source: 'ota' });
      const stored = (await OtherRate.find(rate.uuid, { cells: ['meta'] }))!;
      expect(stored.meta.body).to.deep.equal({ hotel_enabled: false, source: 'ota' });
      expect(stored.meta.refKey).to.equal(1);
    });

    it('on a stale cell rejects with a ConflictError unless asked to retry', async () => {
      const rate = await newRate({ net_price: 120 });
      await (await OtherRate.find(rate.uuid))!.update({ net_price: 125, by: 'other' });
      expect(await rejection(rate.update({ tax_rate: 11 }))).to.be.instanceOf(ConflictError);
    });

    it('sends its values and the keys set before it, nothing else', async () => {
      const rate = await newRate({ net_price: 120, currency: 'EUR' });
      rate.set('note', 'checked');
      await rate.update({ tax_rate: 11 });
      expect(writesSent().map((sent) => decodeBody(sent.body, SOME_CELL))).to.deep.equal([
        { note: 'checked', tax_rate: 11 },
      ]);
      expect((await OtherRate.find(rate.uuid))?.body).to.deep.equal(
        rateValues(hotel, '1 bed', '2026-12-01', {
          net_price: 120,
          currency: 'EUR',
          note: 'checked',
          tax_rate: 11,
        }),
      );
    });

    it('with retryOnConflict re-reads, merges again and writes over the newer version', async () => {
      const rate = await newRate({ net_price: 120 });
      await (await OtherRate.find(rate.uuid))!.update({ net_price: 125, by: 'other' });

      await rate.update({ tax_rate: 11 }, { retryOnConflict: 2 });
      expect(rate.refKey).to.equal(2);
      expect(rate.body).to.include({ net_price: 125, by: 'other', tax_rate: 11 });
      expect(recording.calls.map((call) => call.method)).to.deep.equal([
        'put',
        'writeCell', // conflict
        'getCell', // re-read
        'writeCell', // merged again
      ]);
      const [first, second] = writesSent();
      expect([first?.expectedRefKey, second?.expectedRefKey]).to.deep.equal([0, 1]);
      expect(second?.requestId).to.not.equal(first?.requestId);
      // The retry sends the update's values again, merged into the version re-read.
      expect(decodeBody(second!.body, SOME_CELL)).to.deep.equal({ tax_rate: 11 });
      expect((await OtherRate.find(rate.uuid))?.body).to.include({
        net_price: 125,
        tax_rate: 11,
      });
    });

    it('retries read-merge-write for concurrent updaters without losing any update', async () => {
      const rate = await newRate({ count: 0 });
      const writers = await Promise.all(
        [1, 2, 3, 4].map(async () => (await OtherRate.find(rate.uuid))!),
      );
      await Promise.all(
        writers.map((writer, i) =>
          writer.update({ [`writer_${i}`]: true }, { retryOnConflict: 10 }),
        ),
      );
      const stored = (await OtherRate.find(rate.uuid))!;
      expect(stored.refKey).to.equal(4);
      expect(stored.body).to.include({
        writer_0: true,
        writer_1: true,
        writer_2: true,
        writer_3: true,
      });
    });
  });

  describe('previous', () => {
    it('chains down to version 0, then gives undefined', async () => {
      const rate = await newRate({ net_price: 120 });
      await rate.update({ net_price: 130 });
      await rate.update({ net_price: 140 });
      expect(rate.refKey).to.equal(2);

      const v1 = await rate.previous();
      expect(v1).to.be.instanceOf(Cell);
      expect(v1?.refKey).to.equal(1);
      expect(v1?.get('net_price')).to.equal(130);
      const v0 = await v1?.previous();
      expect(v0?.refKey).to.equal(0);
      expect(v0?.get('net_price')).to.equal(120);
      expect(v0?.record).to.equal(rate);
      recording.reset();
      expect(await v0?.previous()).to.equal(undefined);
      expect(recording.calls, 'no call needed at version 0').to.have.length(0);
      expect(rate.refKey, 'the record still holds the latest').to.equal(2);
    });

    it('works on other cells, and is undefined for a cell with no version', async () => {
      const rate = await newRate();
      expect(await rate.meta.previous()).to.equal(undefined);
      await rate.meta.update({ step: 1 });
      await rate.meta.update({ step: 2 });
      const previous = await rate.meta.previous();
      expect(previous?.name).to.equal('meta');
      expect(previous?.body).to.deep.equal({ step: 1 });
      expect(await previous?.previous()).to.equal(undefined);
    });
  });

  describe('reload and present', () => {
    it('reload picks up another writer’s versions of every read cell and drops unsaved edits', async () => {
      const rate = await newRate({ net_price: 120 });
      await rate.meta.update({ hotel_enabled: true });
      const other = (await OtherRate.find(rate.uuid, { cells: ['meta'] }))!;
      await other.update({ net_price: 130 });
      await other.meta.update({ hotel_enabled: false });

      rate.set('unsaved', 'edit');
      expect(rate.get('net_price')).to.equal(120);
      await rate.reload();
      expect(rate.get('net_price')).to.equal(130);
      expect(rate.has('unsaved')).to.equal(false);
      expect(rate.refKey).to.equal(1);
      expect(rate.meta.get('hotel_enabled')).to.equal(false);
      expect(rate.meta.refKey).to.equal(1);
    });

    it('reload leaves cells never read unread', async () => {
      const rate = await newRate();
      await rate.reload();
      expect(rate.meta.loaded).to.equal(false);
      expect(
        recording.callsOf('getCell').map((call) => (call.request as { cell: string }).cell),
      ).to.deep.equal(['base']);
    });

    it('present tells whether a cell has a stored version', async () => {
      const rate = await newRate();
      expect(rate.present).to.equal(true);
      await rate.meta.load();
      expect(rate.meta.present).to.equal(false);
      expect(rate.meta.refKey).to.equal(undefined);
      await rate.meta.update({ x: 1 });
      expect(rate.meta.present).to.equal(true);
      expect(rate.cells.some((cell) => cell.present)).to.equal(true);

      const missing = Rate.record('00000000-0000-4000-8000-000000000000');
      await missing.load();
      expect(missing.present).to.equal(false);
      expect(await Rate.find(missing.uuid)).to.equal(undefined);
    });
  });

  describe('asJSON, cells and named accessors', () => {
    it('asJSON gives id, uuid, column_name, ref_key, body and created_at', async () => {
      const before = Date.now();
      const rate = await newRate({ net_price: 120 });
      await rate.update({ net_price: 130 });
      const json = rate.asJSON();
      expect(Object.keys(json)).to.deep.equal([
        'id',
        'uuid',
        'column_name',
        'ref_key',
        'body',
        'created_at',
      ]);
      expect(json).to.include({ uuid: rate.uuid, column_name: 'base', ref_key: 1 });
      expect(json.id).to.equal(rate.base.id).and.be.greaterThan(0);
      expect(json.body).to.deep.equal(rateValues(hotel, '1 bed', '2026-12-01', { net_price: 130 }));
      expect(Date.parse(json.created_at!)).to.be.within(before - 1000, Date.now() + 1000);
      expect(JSON.parse(JSON.stringify(rate))).to.deep.equal(json);

      await rate.meta.load();
      expect(rate.meta.asJSON()).to.deep.equal({
        id: null,
        uuid: rate.uuid,
        column_name: 'meta',
        ref_key: null,
        body: {},
        created_at: null,
      });
    });

    it("keeps another writer's extension values: read as type and bytes, saved back as they were", async () => {
      const rate = await newRate();
      // { "sym" => :usd, "tag" => <type 5 "foo!">, "n" => 1 }, as a Ruby writer that registered
      // Symbol as type 0 (msgpack-ruby's README) and a type of its own stores it.
      const symbol = 'a373796d' + 'c70300757364';
      const tag = 'a3746167' + 'd605666f6f21';
      await fixture.store.transport.unary(
        'writeCell',
        {
          model: RATE_SCHEMA.name,
          uuid: rate.uuid,
          cell: 'meta',
          body: Buffer.from('83' + symbol + tag + 'a16e01', 'hex'),
          mode: WriteMode.WRITE_MODE_REPLACE,
          expectedRefKey: undefined,
          requestId: randomUUID(),
        },
        { idempotent: true, hedgeable: false },
      );
      const read = (await Rate.find(rate.uuid))!;
      await read.meta.load();
      const sym = read.meta.get('sym') as MessagePackExtension;
      expect(sym).to.be.instanceOf(MessagePackExtension);
      expect([sym.type, sym.data.toString()]).to.deep.equal([0, 'usd']);
      expect(JSON.parse(JSON.stringify(read.meta)).body).to.deep.equal({
        sym: { extension: 0, base64: Buffer.from('usd').toString('base64') },
        tag: { extension: 5, base64: Buffer.from('foo!').toString('base64') },
        n: 1,
      });

      // Set again as read, beside a key that changes: the stored bytes of both stay.
      await read.meta.update({ sym, tag: read.meta.get('tag'), n: 2 });
      const stored = await fixture.store.transport.unary(
        'getCell',
        { model: RATE_SCHEMA.name, uuid: rate.uuid, cell: 'meta', refKey: undefined },
        { idempotent: true, hedgeable: false },
      );
      expect(Buffer.from(stored.cell!.body).toString('hex')).to.equal(
        '83' + symbol + tag + 'a16e02',
      );
    });

    it('cells lists base and every declared cell; named accessors are the same cells', async () => {
      const rate = await newRate();
      expect(rate.cells.map((cell) => cell.name)).to.deep.equal(['base', 'meta']);
      expect(rate.meta).to.equal(rate.cell('meta'));
      expect(rate.base).to.equal(rate.cell('base'));
      expect(rate.meta.record).to.equal(rate);
      expect(rate.meta.uuid).to.equal(rate.uuid);
    });
  });
});
