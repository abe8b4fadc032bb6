// The protocol floor must answer a GetCell as the store's server does, through the same bare
// Pipeline client: the same body, bytes for bytes, and a failure for a cell with no version.
// Against a real `shameless serve`, MariaDB and the floor's own grpc-js server on a loopback port.
import assert from 'node:assert/strict';
import { unpack } from 'msgpackr';
import { type BenchStore, payloadOf, seededRate } from '../src/subjects/benchStore.js';
import { BaselineTables } from '../src/subjects/mysqlBaseline.js';
import {
  type ProtocolFloorClient,
  connectProtocolFloor,
  serveProtocolFloor,
} from '../src/subjects/protocolFloor.js';
import { getCell, type WorkloadContext } from '../src/workloads/workloads.js';
import { openTestBenchStore } from './support/testBenchStore.js';

describe('protocol floor', () => {
  let bench: BenchStore;
  let floor: { port: number; close(): Promise<void> };
  let client: ProtocolFloorClient;
  let store: ProtocolFloorClient;

  before(async () => {
    bench = await openTestBenchStore();
    floor = await serveProtocolFloor({
      partitionUrl: bench.partitionUrl,
      shardsCount: bench.settings.shardsCount,
      connections: 4,
      readLimitMs: 30_000,
    });
    client = connectProtocolFloor(`127.0.0.1:${floor.port}`);
    store = connectProtocolFloor(bench.server.address);
  });

  after(async () => {
    client?.close();
    store?.close();
    await floor?.close();
    await bench?.close();
  });

  it("answers a GetCell with the latest body, as the store's server answers it to the same client", async () => {
    const values = seededRate(31, 0);
    const put = await bench.rate.put({ ...values, net_price: 10, payload: 'one' });
    await bench.rate.record(put.uuid).base.update({ net_price: 11 });

    const fromFloor = await client.getCell(put.uuid);
    assert.deepEqual(unpack(fromFloor), { ...values, net_price: 11, payload: 'one' });
    const fromStore = await store.getCell(put.uuid);
    assert.equal(fromFloor.toString('hex'), fromStore.toString('hex'));
  });

  it('fails a GetCell of a record with no version, and answers the calls beside it', async () => {
    const put = await bench.rate.put({ ...seededRate(32, 0), payload: 'kept' });
    const missing = '00000000-0000-4000-8000-000000000000';
    const [failed, found] = await Promise.allSettled([
      client.getCell(missing),
      client.getCell(put.uuid),
    ]);
    assert.equal(failed.status, 'rejected');
    assert.match(String(failed.reason), new RegExp(`no version of ${missing}/base`));
    assert.equal(found.status, 'fulfilled');
    assert.equal((unpack(found.value) as { payload: string }).payload, 'kept');
  });

  it("runs the GetCell workload's floor read on the records it is given", async () => {
    const record = await bench.rate.put({ ...seededRate(33, 0), ...payloadOf(256) });
    const context: WorkloadContext = {
      rate: bench.rate,
      tables: new BaselineTables('rate', bench.settings.shardsCount),
      seeded: { bodyBytes: 256, hotels: [33], perHotel: 1, uuids: [record.uuid] },
      bodyBytes: 256,
      shardsCount: bench.settings.shardsCount,
    };
    await getCell.protocolFloor!(context, client)(0);
    const other = {
      ...context,
      seeded: { ...context.seeded, uuids: ['00000000-0000-4000-8000-000000000001'] },
    };
    await assert.rejects(getCell.protocolFloor!(other, client)(0), /no version of/);
  });
});
