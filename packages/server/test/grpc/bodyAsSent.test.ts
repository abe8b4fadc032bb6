// omit_body_as_sent, through a real gRPC server on loopback, over a real MariaDB: a write's
// answer leaves the version's body out only when it is the body the request sent, byte for byte
// (a replace, a put that created or changed nothing, a merge that changed nothing), and sends it
// whenever it differs (a merge that changed it, a replay of a request id sent with another body)
// or when the request did not ask.
import { expect } from 'chai';
import { WriteMode, encodeMessagePack, type Cell, type WriteCellRequest } from '@shameless/proto';
import {
  RATE_MODEL,
  type StoreFixture,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';

// Every map header in its smallest format, as the server's merge writes one.
const pack = encodeMessagePack;

describe('omit_body_as_sent: a write answered without the body it sent', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let hotel = 0;

  before(async () => {
    store = await startStoreFixture({ shardsCount: 4 });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(async () => {
    await store?.close();
  });

  const rateValues = (extra: Record<string, unknown> = {}) => {
    hotel += 1;
    return pack({
      hotel_id: hotel,
      room_type: 'r',
      check_in_date: 'd',
      gateway: 'g',
      discount_type: 'x',
      ...extra,
    });
  };

  const latest = async (uuid: string, cell: string): Promise<Cell> => {
    const answer = await store.api.getCell({ model: 'rate', uuid, cell, refKey: undefined });
    return answer.cell!;
  };

  const writeOf = (uuid: string, body: Buffer, extra: Partial<WriteCellRequest> = {}) => ({
    model: 'rate',
    uuid,
    cell: 'meta',
    body,
    mode: WriteMode.WRITE_MODE_REPLACE,
    requestId: requestId(),
    omitBodyAsSent: true,
    ...extra,
  });

  it('leaves out a put’s base body that is its values, and sends one it merged', async () => {
    const values = rateValues({ price: 2 ** 40 });
    const created = await store.api.put({
      model: 'rate',
      values,
      requestId: requestId(),
      omitBodyAsSent: true,
    });
    expect(created.created).to.equal(true);
    expect(created.bodyOmitted).to.equal(true);
    expect(created.base!.body.length).to.equal(0);
    expect(created.base!.refKey).to.equal(0);
    expect((await latest(created.uuid, 'base')).body.equals(values)).to.equal(true);

    // The same index values with fewer keys: the stored body keeps price, so it is not these.
    const fewer = pack({
      hotel_id: hotel,
      room_type: 'r',
      check_in_date: 'd',
      gateway: 'g',
      discount_type: 'x',
    });
    const updated = await store.api.put({
      model: 'rate',
      values: fewer,
      requestId: requestId(),
      omitBodyAsSent: true,
    });
    expect(updated.created).to.equal(false);
    expect(updated.bodyOmitted).to.equal(false);
    expect(updated.base!.refKey).to.equal(1);
    expect(updated.base!.body.equals(values)).to.equal(true);
    expect((await latest(created.uuid, 'base')).body.equals(values)).to.equal(true);
  });

  it('sends the body when the request does not ask, whatever it is', async () => {
    const values = rateValues();
    const put = await store.api.put({ model: 'rate', values, requestId: requestId() });
    expect(put.bodyOmitted).to.equal(false);
    expect(put.base!.body.equals(values)).to.equal(true);

    const body = pack({ note: 'kept' });
    const written = await store.api.writeCell(writeOf(put.uuid, body, { omitBodyAsSent: false }));
    expect(written.bodyOmitted).to.equal(false);
    expect(written.cell!.body.equals(body)).to.equal(true);
  });

  it('leaves out a replaced body; sends a merged one, or a replay’s stored one, that differs', async () => {
    const { uuid } = await store.api.put({
      model: 'rate',
      values: rateValues(),
      requestId: requestId(),
    });
    const first = pack({ a: 1, b: 'two' });
    const replaced = await store.api.writeCell(writeOf(uuid, first));
    expect(replaced.bodyOmitted).to.equal(true);
    expect(replaced.cell!.body.length).to.equal(0);
    expect(replaced.cell!.refKey).to.equal(0);

    // A merge of one key onto { a, b }: the version is { a: 1, b: 'three' }, not what was sent.
    const merged = await store.api.writeCell(
      writeOf(uuid, pack({ b: 'three' }), { mode: WriteMode.WRITE_MODE_MERGE }),
    );
    expect(merged.bodyOmitted).to.equal(false);
    expect(merged.cell!.body.equals(pack({ a: 1, b: 'three' }))).to.equal(true);

    // A merge of every key, in place, with the same values: the version is the body sent.
    const same = pack({ a: 1, b: 'three' });
    const unchanged = await store.api.writeCell(
      writeOf(uuid, same, { mode: WriteMode.WRITE_MODE_MERGE }),
    );
    expect(unchanged.bodyOmitted).to.equal(true);
    expect(unchanged.cell!.refKey).to.equal(2);
    expect((await latest(uuid, 'meta')).body.equals(same)).to.equal(true);

    // A request id sent again with another body answers the version it made: that body.
    const again = writeOf(uuid, pack({ first: true }));
    expect((await store.api.writeCell(again)).bodyOmitted).to.equal(true);
    const replay = await store.api.writeCell({ ...again, body: pack({ second: true }) });
    expect(replay.replayed).to.equal(true);
    expect(replay.bodyOmitted).to.equal(false);
    expect(replay.cell!.body.equals(pack({ first: true }))).to.equal(true);
  });

  it('decides each write of WriteCells and each put of PutMany on its own', async () => {
    const { uuid } = await store.api.put({
      model: 'rate',
      values: rateValues(),
      requestId: requestId(),
    });
    const base = pack({ n: 1 });
    const response = await store.api.writeCells({
      writes: [
        writeOf(uuid, base),
        writeOf(uuid, pack({ m: 2 }), { mode: WriteMode.WRITE_MODE_MERGE }),
        writeOf(uuid, pack({ k: 3 }), { omitBodyAsSent: undefined }),
      ],
    });
    const written = response.results.map((result) =>
      result.outcome?.$case === 'written' ? result.outcome.written : undefined,
    );
    expect(written.map((w) => w?.bodyOmitted)).to.deep.equal([true, false, false]);
    expect(written[0]!.cell!.body.length).to.equal(0);
    expect(written[1]!.cell!.body.equals(pack({ n: 1, m: 2 }))).to.equal(true);
    expect(written[2]!.cell!.body.equals(pack({ k: 3 }))).to.equal(true);

    const values = [rateValues(), rateValues()];
    const puts = await store.api.putMany({
      puts: [
        { model: 'rate', values: values[0]!, requestId: requestId(), omitBodyAsSent: true },
        { model: 'rate', values: values[1]!, requestId: requestId() },
      ],
    });
    const put = puts.results.map((result) =>
      result.outcome?.$case === 'put' ? result.outcome.put : undefined,
    );
    expect(put.map((p) => p?.bodyOmitted)).to.deep.equal([true, false]);
    expect(put[0]!.base!.body.length).to.equal(0);
    expect(put[1]!.base!.body.equals(values[1]!)).to.equal(true);
  });
});
