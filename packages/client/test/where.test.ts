// where on the primary index and on a named index: every operator, order, limit, pages and
// the cells read with each record, against a real server and MariaDB.

import { expect } from 'chai';
import type { WhereRequest } from '@shameless/proto';
import { InvalidArgumentError, connect, type Model, type RecordOf } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  startStoreFixture,
  thrown,
  type StoreFixture,
} from './support/storeFixture.js';

describe('where', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let recording: RecordingTransport;
  let Rate: Model<typeof RATE_SCHEMA>;
  const HOTEL = 7;
  const DATES = ['2026-12-01', '2026-12-02', '2026-12-03', '2026-12-04', '2026-12-05'];
  const dates = (records: RecordOf<typeof RATE_SCHEMA>[]) =>
    records.map((record) => record.get('check_in_date'));

  before(async () => {
    fixture = await startStoreFixture();
    recording = new RecordingTransport(fixture.store.transport);
    Rate = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
    for (const [i, date] of DATES.entries()) {
      await Rate.put({
        ...rateValues(HOTEL, '1 bed', date, { net_price: 100 + i }),
        gateway: i % 2 === 0 ? 'pegasus' : 'sabre',
        discount_type: i < 3 ? 'geo' : 'member',
      });
      await Rate.put({
        ...rateValues(HOTEL, 'suite', date, { net_price: 300 + i }),
        gateway: 'expedia',
        discount_type: 'none',
      });
    }
    // Another hotel on the same index shard (4 shards: 7 and 11 share shard 3).
    await Rate.put(rateValues(HOTEL + 4, '1 bed', DATES[0]!, { net_price: 1 }));
  });
  beforeEach(() => recording.reset());
  after(async () => {
    await fixture?.close();
  });

  it('finds by the full primary key (=)', async () => {
    const found = await Rate.where({
      hotel_id: HOTEL,
      room_type: '1 bed',
      check_in_date: '2026-12-03',
    }).toArray();
    expect(found).to.have.length(1);
    expect(found[0]?.get('net_price')).to.equal(102);
    expect(found[0]?.present).to.equal(true);
  });

  it('supports != < <= > >= IN and BETWEEN', async () => {
    const oneBed = (checkInDate: object | string) =>
      Rate.where({
        hotel_id: HOTEL,
        room_type: '1 bed',
        check_in_date: checkInDate as string,
      }).toArray();
    expect(dates(await oneBed({ ne: '2026-12-03' }))).to.deep.equal([
      '2026-12-01',
      '2026-12-02',
      '2026-12-04',
      '2026-12-05',
    ]);
    expect(dates(await oneBed({ lt: '2026-12-03' }))).to.deep.equal(['2026-12-01', '2026-12-02']);
    expect(dates(await oneBed({ lte: '2026-12-02' }))).to.deep.equal(['2026-12-01', '2026-12-02']);
    expect(dates(await oneBed({ gt: '2026-12-04' }))).to.deep.equal(['2026-12-05']);
    expect(dates(await oneBed({ gte: '2026-12-04' }))).to.deep.equal(['2026-12-04', '2026-12-05']);
    expect(dates(await oneBed({ in: ['2026-12-05', '2026-12-01', '2027-01-01'] }))).to.deep.equal([
      '2026-12-01',
      '2026-12-05',
    ]);
    expect(dates(await oneBed({ between: ['2026-12-02', '2026-12-04'] }))).to.deep.equal([
      '2026-12-02',
      '2026-12-03',
      '2026-12-04',
    ]);
    // Several operators on one field are ANDed.
    expect(
      dates(await oneBed({ gt: '2026-12-01', lt: '2026-12-04', ne: '2026-12-02' })),
    ).to.deep.equal(['2026-12-03']);
    const sent = recording.callsOf('where').at(-1)?.request as WhereRequest;
    expect(sent.conditions.map((condition) => condition.field)).to.deep.equal([
      'hotel_id',
      'room_type',
      'check_in_date',
      'check_in_date',
      'check_in_date',
    ]);
  });

  it('orders by the index (ascending by default, or descending) and limits', async () => {
    const ascending = await Rate.where({ hotel_id: HOTEL }).toArray();
    expect(ascending.map((r) => `${r.get('room_type')} ${r.get('check_in_date')}`)).to.deep.equal([
      ...DATES.map((date) => `1 bed ${date}`),
      ...DATES.map((date) => `suite ${date}`),
    ]);
    const descending = await Rate.where(
      { hotel_id: HOTEL, room_type: '1 bed', check_in_date: { gte: '2026-12-02' } },
      { order: 'desc', limit: 2 },
    ).toArray();
    expect(dates(descending)).to.deep.equal(['2026-12-05', '2026-12-04']);
    expect((recording.callsOf('where').at(-1)?.request as WhereRequest).limit).to.equal(2);
  });

  it('pages through every match with page tokens, up to the limit', async () => {
    const all = await Rate.where({ hotel_id: HOTEL }, { pageSize: 3 }).toArray();
    expect(all).to.have.length(10);
    expect(recording.callsOf('where')).to.have.length(4);
    recording.reset();
    const seven = await Rate.where({ hotel_id: HOTEL }, { pageSize: 3, limit: 7 }).toArray();
    expect(seven.map((r) => r.uuid)).to.deep.equal(all.slice(0, 7).map((r) => r.uuid));
    expect(
      recording.callsOf('where').map((call) => (call.request as WhereRequest).limit),
    ).to.deep.equal([3, 3, 1]);
  });

  it('iterates with for await, and first() fetches one record', async () => {
    const seen: unknown[] = [];
    for await (const rate of Rate.where({ hotel_id: HOTEL, room_type: 'suite' })) {
      seen.push(rate.get('net_price'));
    }
    expect(seen).to.deep.equal([300, 301, 302, 303, 304]);
    const first = await Rate.where(
      { hotel_id: HOTEL, room_type: 'suite' },
      { order: 'desc' },
    ).first();
    expect(first?.get('net_price')).to.equal(304);
    expect(await Rate.where({ hotel_id: 404 }).first()).to.equal(undefined);
  });

  it('queries a named index, by name or through indices', async () => {
    const geo = await Rate.index('secondary')
      .where({ hotel_id: HOTEL, gateway: 'pegasus', discount_type: 'geo' })
      .toArray();
    // Ordered by (hotel_id, gateway, discount_type), then uuid.
    expect(dates(geo).sort()).to.deep.equal(['2026-12-01', '2026-12-03']);
    expect((recording.callsOf('where').at(-1)?.request as WhereRequest).index).to.equal(
      'secondary',
    );

    const notGeo = await Rate.indices.secondary
      .where({ hotel_id: HOTEL, discount_type: { ne: 'geo' }, gateway: { in: ['sabre'] } })
      .toArray();
    expect(dates(notGeo)).to.deep.equal(['2026-12-04']);
  });

  it('reads the cells asked for with each record, in the same call', async () => {
    const [first] = await Rate.where({ hotel_id: HOTEL, room_type: 'suite' }).toArray();
    await first!.meta.update({ hotel_enabled: true });
    recording.reset();

    const records = await Rate.where(
      { hotel_id: HOTEL, room_type: 'suite' },
      { cells: ['base', 'meta'], limit: 2 },
    ).toArray();
    expect(recording.calls.map((call) => call.method)).to.deep.equal(['where']);
    expect(records[0]?.meta.loaded).to.equal(true);
    expect(records[0]?.meta.get('hotel_enabled')).to.equal(true);
    expect(records[1]?.meta.present, 'read: no version').to.equal(false);
    expect(records[0]?.get('net_price')).to.equal(300);

    const baseOnly = await Rate.where({ hotel_id: HOTEL, room_type: 'suite' }).first();
    expect(baseOnly?.meta.loaded).to.equal(false);
  });

  it('refuses malformed conditions before any call, naming the field', () => {
    // Each of these is also a compile error; a plain JavaScript caller gets these errors.
    const conditions: Record<string, unknown>[] = [
      { room_type: '1 bed' },
      { hotel_id: '7' },
      { hotel_id: HOTEL, gateway: 'pegasus' },
      { hotel_id: HOTEL, room_type: 1 },
      { hotel_id: HOTEL, check_in_date: { after: '2026-12-01' } },
      { hotel_id: HOTEL, check_in_date: { between: ['2026-12-01'] } },
      { hotel_id: HOTEL, check_in_date: { in: [] } },
      { hotel_id: HOTEL, check_in_date: {} },
    ];
    const messages = conditions.map((condition) => {
      const error = thrown(() => Rate.where(condition as { hotel_id: number }));
      expect(error).to.be.instanceOf(InvalidArgumentError);
      return error.message;
    });
    expect(messages[0]).to.contain('hotel_id');
    expect(messages[1]).to.contain('hotel_id');
    expect(messages[2]).to.contain('gateway is not a field of the index');
    expect(messages[3]).to.contain('room_type is a string field');
    expect(messages[4]).to.contain('unknown operator after');
    expect(messages[5]).to.contain('between');
    expect(messages[6]).to.contain('in');
    expect(messages[7]).to.contain('no operator');
    expect(recording.calls).to.have.length(0);
  });
});
