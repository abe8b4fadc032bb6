// Issue 11: a body's values keep the exact MessagePack bytes their writer gave them through
// every write path that merges or copies them (a float written by Ruby stays a float, 64-bit
// integers keep their width), and only the keys a write names change.
import { expect } from 'chai';
import { WriteMode } from '@shameless/proto';
import {
  RATE_MODEL,
  type StoreFixture,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';
import { fixint, float64, int64, map, nil, object, str, uint64 } from '../support/msgpackBytes.js';

describe('exact values through every write path', function () {
  let store: StoreFixture;
  let hotel = 7000;

  before(async () => {
    store = await startStoreFixture({ shardsCount: 4 });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());

  /** Index fields, then values whose encodings a decode-and-encode would change. */
  const rateBody = (hotelId: number) => ({
    hotel_id: fixint(hotelId % 100),
    room_type: str('1 bed'),
    check_in_date: str('2026-12-01'),
    gateway: str('pegasus'),
    discount_type: str('geo'),
    net_price: float64(120),
    big: uint64(2n ** 40n),
    huge: uint64(2n ** 53n + 1n),
    top: int64(2n ** 63n - 1n),
    low: int64(-(2n ** 63n)),
    nested: map([fixint(1), float64(2)], [str('deep'), object({ x: float64(3) })]),
  });

  async function create(values: Record<string, Buffer>) {
    const put = await store.api.put({
      model: 'rate',
      values: object(values),
      requestId: requestId(),
    });
    expect(put.created).to.equal(true);
    return put;
  }
  const latest = async (uuid: string, cell = 'base') =>
    (await store.api.getCell({ model: 'rate', uuid, cell, refKey: undefined })).cell!.body;

  it('Put create stores the values as sent', async () => {
    const values = rateBody(hotel++);
    const put = await create(values);
    expect(put.base!.body).to.deep.equal(object(values));
    expect(await latest(put.uuid)).to.deep.equal(object(values));
  });

  it('Put update changes only the keys it names (index fields stay as stored)', async () => {
    const values = rateBody(hotel++);
    const put = await create(values);
    const update = await store.api.put({
      model: 'rate',
      values: object({ ...values, big: fixint(1), added: nil() }),
      requestId: requestId(),
    });
    expect(update.uuid).to.equal(put.uuid);
    const expected = object({ ...values, big: fixint(1), added: nil() });
    expect(update.base!.body).to.deep.equal(expected);
    expect(await latest(put.uuid)).to.deep.equal(expected);
  });

  it('WriteCell merge and replace, and WriteCells merge, keep untouched bytes', async () => {
    const { uuid } = await create(rateBody(hotel++));
    const meta = { price: float64(99), id: int64(2n ** 62n), note: str('kept') };
    const replaced = await store.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: object(meta),
      mode: WriteMode.WRITE_MODE_REPLACE,
      expectedRefKey: undefined,
      requestId: requestId(),
    });
    expect(replaced.cell!.body).to.deep.equal(object(meta));

    const merged = await store.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: object({ note: str('changed') }),
      mode: WriteMode.WRITE_MODE_MERGE,
      expectedRefKey: 0,
      requestId: requestId(),
    });
    expect(merged.cell!.body).to.deep.equal(object({ ...meta, note: str('changed') }));

    const { results } = await store.api.writeCells({
      writes: [
        {
          model: 'rate',
          uuid,
          cell: 'meta',
          body: object({ price: float64(100) }),
          mode: WriteMode.WRITE_MODE_MERGE,
          expectedRefKey: undefined,
          requestId: requestId(),
        },
        {
          model: 'rate',
          uuid,
          cell: 'base',
          body: object({ tag: str('x') }),
          mode: WriteMode.WRITE_MODE_MERGE,
          expectedRefKey: undefined,
          requestId: requestId(),
        },
      ],
    });
    const written = results.map((result) =>
      result.outcome?.$case === 'written' ? result.outcome.written.cell!.body : undefined,
    );
    expect(written[0]).to.deep.equal(
      object({ ...meta, note: str('changed'), price: float64(100) }),
    );
    expect(written[1]).to.deep.equal(object({ ...rateBody(hotel - 1), tag: str('x') }));
    expect(await latest(uuid, 'meta')).to.deep.equal(written[0]);
    expect(await latest(uuid)).to.deep.equal(written[1]);
  });
});
