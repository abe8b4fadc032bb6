// The gem-shaped service must do the gem's reads behind its stream: a find and a point where
// answer the latest body the store holds, and a failed read fails its own caller only. Against
// a real `shameless serve`, MariaDB and the service's own grpc-js server on a loopback port.
import assert from 'node:assert/strict';
import { unpack } from 'msgpackr';
import { type BenchStore, payloadOf, seededRate } from '../src/subjects/benchStore.js';
import {
  type GemServiceClient,
  connectGemService,
  serveGemService,
} from '../src/subjects/gemService.js';
import { BaselineTables } from '../src/subjects/mysqlBaseline.js';
import { getCell, whereOne, type WorkloadContext } from '../src/workloads/workloads.js';
import { openTestBenchStore } from './support/testBenchStore.js';

describe('gem-shaped service', () => {
  let bench: BenchStore;
  let service: { port: number; close(): Promise<void> };
  let client: GemServiceClient;

  before(async () => {
    bench = await openTestBenchStore();
    service = await serveGemService({
      partitionUrl: bench.partitionUrl,
      shardsCount: bench.settings.shardsCount,
      connections: 4,
    });
    client = connectGemService(`127.0.0.1:${service.port}`);
  });

  after(async () => {
    client?.close();
    await service?.close();
    await bench?.close();
  });

  it('answers a find and a point where with the latest body the store holds', async () => {
    const values = seededRate(21, 0);
    const put = await bench.rate.put({ ...values, net_price: 10, payload: 'one' });
    await bench.rate.record(put.uuid).base.update({ net_price: 11 });
    const latest = { ...values, net_price: 11, payload: 'one' };

    assert.deepEqual(unpack(await client.read({ op: 'find', uuid: put.uuid })), latest);
    assert.deepEqual(unpack(await client.read({ op: 'where', values })), latest);
  });

  it('fails only the read that failed, with its reason, and answers the others', async () => {
    const put = await bench.rate.put({ ...seededRate(22, 0), payload: 'kept' });
    const missing = '00000000-0000-4000-8000-000000000000';
    const [failed, unknown, found] = await Promise.allSettled([
      client.read({ op: 'find', uuid: missing }),
      client.read({ op: 'where', values: seededRate(22, 1) }),
      client.read({ op: 'find', uuid: put.uuid }),
    ]);
    assert.equal(failed.status, 'rejected');
    assert.match(String(failed.reason), new RegExp(`no base cell for .*${missing}`));
    assert.equal(unknown.status, 'rejected');
    assert.match(String(unknown.reason), /no base cell for .*day-00001/);
    assert.equal(found.status, 'fulfilled');
    assert.equal((unpack(found.value) as { payload: string }).payload, 'kept');
  });

  it("runs the read workloads' gem reads on the records they are given", async () => {
    const record = await bench.rate.put({ ...seededRate(23, 0), ...payloadOf(256) });
    const context: WorkloadContext = {
      rate: bench.rate,
      tables: new BaselineTables('rate', bench.settings.shardsCount),
      seeded: { bodyBytes: 256, hotels: [23], perHotel: 1, uuids: [record.uuid] },
      bodyBytes: 256,
      shardsCount: bench.settings.shardsCount,
    };
    await getCell.gemService!(context, client)(0);
    assert.equal(await whereOne.gemService!(context, client)(0), 1);
    const other = { ...context, seeded: { ...context.seeded, hotels: [24] } };
    await assert.rejects(whereOne.gemService!(other, client)(0), /no base cell/);
  });
});
