// Defining models, put (the upsert) and field access, against a real server and MariaDB.

import { expect } from 'chai';
import {
  CellNotLoadedError,
  FailedPreconditionError,
  InvalidArgumentError,
  ReadonlyFieldError,
  connect,
  type Model,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  rejection,
  startStoreFixture,
  thrown,
  type StoreFixture,
} from './support/storeFixture.js';

describe('models, put and fields', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let Rate: Model<typeof RATE_SCHEMA>;

  before(async () => {
    fixture = await startStoreFixture();
    Rate = await fixture.store.defineModel(RATE_SCHEMA);
  });
  after(async () => {
    await fixture?.close();
  });

  describe('defineModel', () => {
    it('registers the model with the server, as every client then sees it', async () => {
      const described = await fixture.store.describe();
      const rate = described.models.find((model) => model.name === 'rate');
      expect(rate?.primaryIndex?.fields.map((field) => field.name)).to.deep.equal([
        'hotel_id',
        'room_type',
        'check_in_date',
      ]);
      expect(rate?.primaryIndex?.shardOn).to.equal('hotel_id');
      expect(rate?.secondaryIndices.map((index) => index.name)).to.deep.equal(['secondary']);
      expect(rate?.cells).to.deep.equal(['meta']);
      expect(Rate.definition.cells).to.deep.equal(['meta']);
      expect(Rate.name).to.equal('rate');
      expect(Object.keys(Rate.indices)).to.deep.equal(['primary', 'secondary']);
    });

    it('is idempotent, allows adding cells and refuses a conflicting redefinition', async () => {
      const again = await fixture.store.defineModel(RATE_SCHEMA);
      expect(again.definition).to.deep.equal(Rate.definition);

      const offer = {
        name: 'offer',
        primary: { fields: { hotel_id: 'integer' }, shardOn: 'hotel_id' },
        cells: ['meta'],
      } as const;
      await fixture.store.defineModel(offer);
      const other = await fixture.connectAnother();
      const withCell = await other.defineModel({ ...offer, cells: ['meta', 'ota_rate'] });
      expect(withCell.definition.cells).to.deep.equal(['meta', 'ota_rate']);

      const error = await rejection(
        fixture.store.defineModel({
          ...RATE_SCHEMA,
          primary: { fields: { hotel_id: 'integer', room_type: 'string' }, shardOn: 'hotel_id' },
        }),
      );
      expect(error).to.be.instanceOf(FailedPreconditionError);
    });

    it('refuses a schema that cannot be right before any call', async () => {
      const recording = new RecordingTransport(fixture.store.transport);
      const store = await connect({ transport: recording });
      recording.reset();
      const error = await rejection(
        store.defineModel({
          name: 'broken',
          // A caller without the compile-time check (e.g. plain JavaScript).
          primary: { fields: { key: 'integer', kind: 'string' }, shardOn: 'kind' as 'key' },
        }),
      );
      expect(error).to.be.instanceOf(InvalidArgumentError);
      expect(error.message).to.contain('shardOn');
      expect(recording.calls).to.have.length(0);
    });
  });

  describe('put', () => {
    it('creates a record and returns it with its base cell read from the answer', async () => {
      const recording = new RecordingTransport(fixture.store.transport);
      const RateHere = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
      recording.reset();

      const rate = await RateHere.put(rateValues(1, '1 bed', '2026-12-01', { net_price: 120 }));
      expect(recording.calls.map((call) => call.method)).to.deep.equal(['put']);
      expect(rate.uuid).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(rate.present).to.equal(true);
      expect(rate.refKey).to.equal(0);
      expect(rate.get('net_price')).to.equal(120);
      expect(rate.get('hotel_id')).to.equal(1);
      expect(rate.body).to.deep.equal(rateValues(1, '1 bed', '2026-12-01', { net_price: 120 }));
      expect(rate.base.id).to.be.a('number').and.greaterThan(0);
      expect(rate.createdAt).to.be.instanceOf(Date);
    });

    it('upserts: the same primary values append a base version merging non-index values', async () => {
      const first = await Rate.put(
        rateValues(2, 'suite', '2026-12-02', { net_price: 200, tax: 10 }),
      );
      const second = await Rate.put({
        ...rateValues(2, 'suite', '2026-12-02'),
        gateway: 'ignored: index fields never change',
        net_price: 210,
      });
      expect(second.uuid).to.equal(first.uuid);
      expect(second.refKey).to.equal(1);
      expect(second.body).to.deep.equal(
        rateValues(2, 'suite', '2026-12-02', { net_price: 210, tax: 10 }),
      );
      const found = await Rate.where({ hotel_id: 2, room_type: 'suite' }).toArray();
      expect(found.map((record) => record.uuid)).to.deep.equal([first.uuid]);
    });

    it('keeps any MessagePack value in the body: nested maps, arrays, null, false, binary', async () => {
      const content = {
        nested: { a: [1, 'two', { three: 3 }] },
        nothing: null,
        no: false,
        zero: 0,
        bytes: Buffer.from([1, 2, 3]),
        price: 120.5,
      };
      const rate = await Rate.put(rateValues(3, 'double', '2026-12-03', content));
      const found = await Rate.find(rate.uuid);
      expect(found?.body).to.deep.equal(rateValues(3, 'double', '2026-12-03', content));
    });
  });

  describe('fields', () => {
    it('get/set: set edits the base body locally; save writes it', async () => {
      const rate = await Rate.put(rateValues(4, '1 bed', '2026-12-04', { net_price: 120 }));
      expect(rate.set('net_price', 130)).to.equal(rate);
      expect(rate.get('net_price')).to.equal(130);
      expect(rate.get('missing')).to.equal(undefined);
      expect((await Rate.find(rate.uuid))?.get('net_price')).to.equal(120);
      await rate.save();
      expect(rate.refKey).to.equal(1);
      expect((await Rate.find(rate.uuid))?.get('net_price')).to.equal(130);
    });

    it('setting an index field throws at once, naming the field and its index, in any cell', async () => {
      const recording = new RecordingTransport(fixture.store.transport);
      const RateHere = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
      const rate = await RateHere.put(rateValues(5, '1 bed', '2026-12-05'));
      await rate.meta.load();
      recording.reset();

      // Each of these is also a compile error; a plain JavaScript caller gets the same errors.
      // @ts-expect-error hotel_id is an index field
      const primary = thrown(() => rate.set('hotel_id', 2));
      expect(primary).to.be.instanceOf(ReadonlyFieldError);
      expect(primary).to.be.instanceOf(InvalidArgumentError);
      expect(primary.message).to.contain('hotel_id').and.contain('primary index');
      expect(primary).to.include({ field: 'hotel_id', index: 'primary', model: 'rate' });

      // @ts-expect-error gateway is an index field
      const secondary = thrown(() => rate.meta.set('gateway', 'other'));
      expect(secondary).to.include({ field: 'gateway', index: 'secondary' });
      expect(secondary.message).to.contain('gateway').and.contain('secondary index');

      // @ts-expect-error discount_type is an index field
      const viaUpdate = await rejection(rate.meta.update({ discount_type: 'x' }));
      expect(viaUpdate).to.include({ field: 'discount_type', index: 'secondary' });
      // @ts-expect-error room_type is an index field
      const viaBaseUpdate = await rejection(rate.update({ room_type: 'x' }));
      expect(viaBaseUpdate).to.include({ field: 'room_type', index: 'primary' });

      expect(recording.calls, 'nothing was sent').to.have.length(0);
      expect(rate.get('hotel_id')).to.equal(5);
      expect(rate.meta.has('gateway')).to.equal(false);
    });

    it('fetch returns a stored false or null as is, and the default only for a missing key', async () => {
      const rate = await Rate.put(
        rateValues(6, '1 bed', '2026-12-06', { enabled: false, note: null, count: 0 }),
      );
      const read = (await Rate.find(rate.uuid))!;
      expect(read.fetch('enabled', true)).to.equal(false);
      expect(read.fetch('note', 'default')).to.equal(null);
      expect(read.fetch('count', 5)).to.equal(0);
      expect(read.fetch('missing', 'default')).to.equal('default');
      expect(read.has('note')).to.equal(true);
      await read.meta.load();
      expect(read.meta.fetch('enabled', true)).to.equal(true);
    });

    it('reading a cell that has not been read throws, saying how to read it', async () => {
      const rate = await Rate.put(rateValues(7, '1 bed', '2026-12-07'));
      expect(rate.meta.loaded).to.equal(false);
      const error = thrown(() => rate.meta.get('x'));
      expect(error).to.be.instanceOf(CellNotLoadedError);
      expect(error.message).to.contain("cell('meta').load()");
      expect(thrown(() => rate.meta.present)).to.be.instanceOf(CellNotLoadedError);
      await rate.load('meta');
      expect(rate.meta.present).to.equal(false);
      expect(rate.meta.body).to.deep.equal({});
    });
  });
});
