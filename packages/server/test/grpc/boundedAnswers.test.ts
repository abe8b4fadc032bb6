// A GetCells answer is bounded by the largest message the server sends: a request whose cells
// add up to more is refused with RESOURCE_EXHAUSTED before their bodies are read, and one under
// the limit answers every cell exactly, large bodies (read after the others, by id) included.
// A WhereMany answer is bounded the same way, refused before it is encoded; so are point Wheres
// of remembered records, whose cells are read with their index row in one statement.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { Operator, WriteMode } from '@shameless/proto';
import { rejection } from '../support/grpcCalls.js';
import { int, str } from '../support/indexValues.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  putRate,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';

const MAX_MESSAGE_BYTES = 1024 * 1024;
const MISSING_UUID = '00000000-0000-4000-8000-000000000000';

describe('answers bounded by bytes', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  /** Records whose meta cell is ~200 KB, and records whose meta cell is ~1 KB. */
  const large: string[] = [];
  const small: string[] = [];
  const bodies = new Map<string, Buffer>();

  before(async () => {
    // One shard: every cell is in one table, which is then read with one keyed query.
    store = await startStoreFixture({ shardsCount: 1, maxMessageBytes: MAX_MESSAGE_BYTES });
    await store.api.defineModel({ model: RATE_MODEL });
    const writeMeta = async (hotelId: number, bytes: number) => {
      const uuid = await putRate(store.api, hotelId);
      const body = pack({ note: String(hotelId % 10).repeat(bytes) });
      await store.api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body,
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      });
      bodies.set(uuid, body);
      return uuid;
    };
    for (let i = 0; i < 8; i++) large.push(await writeMeta(i, 200_000));
    for (let i = 0; i < 12; i++) small.push(await writeMeta(100 + i, 1000));
  });
  after(async () => {
    await store?.close();
  });

  const getMeta = (uuids: readonly string[]) =>
    store.api.getCells({ model: 'rate', keys: uuids.map((uuid) => ({ uuid, cell: 'meta' })) });

  it('refuses an answer over the largest message with RESOURCE_EXHAUSTED saying what to do', async () => {
    const error = await rejection(getMeta([...large, ...small]));
    expect(error.code, error.details).to.equal(status.RESOURCE_EXHAUSTED);
    expect(error.details).to.contain(`the answer would exceed ${MAX_MESSAGE_BYTES} bytes`);
    expect(error.details).to.contain('ask for fewer keys (GetCells) or read them one at a time');
    // The SDK's test for a message over a size limit, which it does not retry.
    expect(error.details).to.match(/message .*larger than/i);
    // A smaller request still works.
    const answer = await getMeta(large.slice(0, 2));
    expect(answer.results.map((result) => result.cell?.uuid)).to.deep.equal(large.slice(0, 2));
  });

  it('refuses a WhereMany answer over the largest message, in the words the SDK halves on', async () => {
    // Each query finds one record, hotel i's, with its ~200 KB meta cell.
    const pagesOf = (hotels: readonly number[]) =>
      store.api.whereMany(
        hotels.map((hotelId) => ({
          conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(hotelId)] }],
          cells: ['meta'],
        })),
      );
    const error = await rejection(pagesOf([0, 1, 2, 3, 4, 5, 6]));
    expect(error.code, error.details).to.equal(status.RESOURCE_EXHAUSTED);
    expect(error.details).to.contain(`the answer would exceed ${MAX_MESSAGE_BYTES} bytes`);
    expect(error.details).to.contain('ask for fewer queries or smaller pages (WhereMany)');
    expect(error.details).to.match(/message .*larger than/i);
    const { pages } = await pagesOf([2, 3]);
    expect(pages.map((page) => page.records.map((record) => record.uuid))).to.deep.equal([
      [large[2]],
      [large[3]],
    ]);
    expect(
      Buffer.from(pages[1]!.records[0]!.cells[0]!.body).equals(bodies.get(large[3]!)!),
    ).to.equal(true);
  });

  it('answers every cell exactly under the limit, bodies past their share read afterwards', async () => {
    // 16 keys: each one's share (~64 KB) is less than a large body, so those come by id.
    const uuids = [...large.slice(0, 4), ...small, large[0]!];
    const keys = [...uuids, MISSING_UUID].map((uuid) => ({ uuid, cell: 'meta' }));
    const answer = await store.api.getCells({ model: 'rate', keys });
    expect(answer.results).to.have.length(keys.length);
    uuids.forEach((uuid, i) => {
      const cell = answer.results[i]?.cell;
      expect(cell?.uuid).to.equal(uuid);
      expect(cell?.name).to.equal('meta');
      expect(Buffer.from(cell!.body).equals(bodies.get(uuid)!), `body of ${uuid}`).to.equal(true);
    });
    expect(answer.results[uuids.length]?.cell).to.equal(undefined);
  });

  it('bounds point Wheres read through their index rows: refused over, bodies past their share read afterwards', async () => {
    // Every field of the primary index: the server created these records and remembers them.
    const pointsOf = (hotels: readonly number[]) =>
      store.api.whereMany(
        hotels.map((hotelId) => ({
          conditions: [
            { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(hotelId)] },
            { field: 'room_type', op: Operator.OPERATOR_EQ, values: [str('double')] },
            { field: 'check_in_date', op: Operator.OPERATOR_EQ, values: [str('2026-01-01')] },
          ],
          cells: ['base', 'meta'],
        })),
      );
    const hits = store.engine.primaryKeyCacheStats().hits;
    // Seven pages: each one's share (~150 KB) is less than its ~200 KB meta cell.
    const error = await rejection(pointsOf([0, 1, 2, 3, 4, 5, 6]));
    expect(error.code, error.details).to.equal(status.RESOURCE_EXHAUSTED);
    expect(error.details).to.contain(`the answer would exceed ${MAX_MESSAGE_BYTES} bytes`);
    // Four pages of a large record and a small one: each cell's share (~130 KB) leaves the large
    // bodies to be read by id, and the answer fits.
    const { pages } = await pointsOf([2, 3, 100, 4]);
    expect(store.engine.primaryKeyCacheStats().hits - hits, 'answered as remembered').to.equal(11);
    const expected = [large[2]!, large[3]!, small[0]!, large[4]!];
    expect(pages.map((page) => page.records.map((record) => record.uuid))).to.deep.equal(
      expected.map((uuid) => [uuid]),
    );
    pages.forEach((page, i) => {
      const [base, meta] = page.records[0]!.cells;
      expect(base?.name).to.equal('base');
      expect(meta?.name).to.equal('meta');
      expect(
        Buffer.from(meta!.body).equals(bodies.get(expected[i]!)!),
        `meta of page ${i}`,
      ).to.equal(true);
    });
  });

  it('answers a few keys, each read with its cell, exactly', async () => {
    const uuids = [large[5]!, small[3]!];
    const answer = await getMeta(uuids);
    uuids.forEach((uuid, i) => {
      expect(Buffer.from(answer.results[i]!.cell!.body).equals(bodies.get(uuid)!)).to.equal(true);
    });
  });
});
