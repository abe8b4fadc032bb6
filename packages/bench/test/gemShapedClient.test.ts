// The gem-shaped baseline must do the gem's work, not merely send statements that succeed: what
// it writes into the server's tables is a record the server serves (as a store written by the
// gem is), its update appends the merged next version, and its reads return what the server
// holds. Against a real `shameless serve` and MariaDB.
import assert from 'node:assert/strict';
import { type BenchStore, payloadOf, seededRate } from '../src/subjects/benchStore.js';
import {
  type GemShapedClient,
  gemCreate,
  gemLatestBase,
  gemLookup,
  gemUpdate,
  openGemShapedClient,
} from '../src/subjects/gemShapedClient.js';
import { BaselineTables } from '../src/subjects/mysqlBaseline.js';
import {
  getCell,
  putCreate,
  putUpdate,
  whereOne,
  type WorkloadContext,
} from '../src/workloads/workloads.js';
import { openTestBenchStore } from './support/testBenchStore.js';

const PRIMARY = {
  name: 'primary',
  shardOn: 'hotel_id',
  fields: [
    { name: 'hotel_id', type: 'integer' as const },
    { name: 'room_type', type: 'string' as const },
    { name: 'check_in_date', type: 'string' as const },
  ],
};
const SECONDARY = {
  name: 'secondary',
  shardOn: 'hotel_id',
  fields: [
    { name: 'hotel_id', type: 'integer' as const },
    { name: 'gateway', type: 'string' as const },
    { name: 'discount_type', type: 'string' as const },
  ],
};

describe('gem-shaped client', () => {
  let bench: BenchStore;
  let client: GemShapedClient;
  let tables: BaselineTables;

  before(async () => {
    bench = await openTestBenchStore();
    client = openGemShapedClient(bench.partitionUrl, 2);
    tables = new BaselineTables('rate', bench.settings.shardsCount);
  });

  after(async () => {
    await client?.end();
    await bench?.close();
  });

  it('creates a record the server serves: base version 0 with every value, found by each index', async () => {
    const values = { ...seededRate(7, 1), net_price: 120.5, payload: 'gem' };
    const uuid = await gemCreate(await client.session(0), tables, [PRIMARY, SECONDARY], values);

    const [byPrimary] = await bench.rate
      .where({ hotel_id: 7, room_type: 'double', check_in_date: values.check_in_date })
      .toArray();
    assert.equal(byPrimary?.uuid, uuid);
    assert.equal(byPrimary.base.refKey, 0);
    assert.deepEqual({ ...byPrimary.base.body }, values);
    const bySecondary = await bench.rate
      .index('secondary')
      .where({ hotel_id: 7, gateway: 'pegasus', discount_type: 'geo' })
      .toArray();
    assert.deepEqual(
      bySecondary.map((record) => record.uuid),
      [uuid],
    );
  });

  it('updates as the gem does: the next version, the latest body merged with the changes', async () => {
    const values = seededRate(8, 1);
    const put = await bench.rate.put({ ...values, net_price: 100, payload: 'first' });
    await gemUpdate(await client.session(1), tables, PRIMARY, values, { net_price: 99.5 });

    const base = await bench.rate.record(put.uuid).base.reload();
    assert.equal(base.refKey, 1);
    assert.deepEqual({ ...base.body }, { ...values, net_price: 99.5, payload: 'first' });

    const session = await client.session(1);
    assert.equal(await gemLookup(session, tables, PRIMARY, values), put.uuid);
    const latest = await gemLatestBase(session, tables, put.uuid);
    assert.equal(Number(latest?.ref_key), 1);
    assert.equal(await gemLookup(session, tables, PRIMARY, seededRate(8, 2)), undefined);
  });

  it('the workloads run against the seeded records and report what they read', async () => {
    const seeded = { bodyBytes: 256, hotels: [9], perHotel: 1, uuids: [] as string[] };
    const record = await bench.rate.put({ ...seededRate(9, 0), ...payloadOf(256) });
    seeded.uuids.push(record.uuid);
    const context: WorkloadContext = {
      rate: bench.rate,
      tables,
      seeded,
      bodyBytes: 256,
      shardsCount: bench.settings.shardsCount,
    };
    assert.equal(await whereOne.gem!(context, client)(0), 1);
    await getCell.gem!(context, client)(0);
    await putUpdate.gem!(context, client)(1);
    await putCreate.gem!(context, client)(1);
    assert.equal((await bench.rate.record(record.uuid).base.reload()).refKey, 1);
  });

  it('keeps one connection per worker, and refuses a worker it was not sized for', async () => {
    const connectionOf = async (worker: number) => {
      const session = await client.session(worker);
      const rows = await session.query<{ id: number }[]>('SELECT CONNECTION_ID() AS id');
      return rows[0]!.id;
    };
    assert.equal(await connectionOf(0), await connectionOf(0));
    assert.notEqual(await connectionOf(0), await connectionOf(1));
    assert.throws(() => client.session(2), /worker 2 is not one of the client's 2/);
  });
});
