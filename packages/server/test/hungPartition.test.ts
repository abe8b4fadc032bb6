// A partition whose network hangs, through the testkit's TCP proxy: a statement waits no longer
// than the statement timeout, the call answers UNAVAILABLE instead of waiting for the caller's
// deadline, the other partition keeps serving, and once the network is back the destroyed
// connections have been replaced.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import {
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startTcpProxy,
} from '@shameless/testkit';
import { rejection } from './support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from './support/storeFixture.js';

describe('a hung partition', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let proxy: TcpProxy;
  let store: StoreFixture;

  const put = async (hotelId: number) =>
    (
      await store.api.put({
        model: 'rate',
        values: pack({
          hotel_id: hotelId,
          room_type: 'double',
          check_in_date: '2026-01-01',
          gateway: 'pegasus',
          discount_type: 'geo',
        }),
        requestId: requestId(),
      })
    ).uuid;

  before(async () => {
    databases = await createTestDatabases(2);
    const second = new URL(databases.urls[1]!);
    proxy = await startTcpProxy({ target: { host: second.hostname, port: Number(second.port) } });
    second.host = proxy.address;
    store = await startStoreFixture({
      shardsCount: 4,
      partitionUrls: [databases.urls[0]!, second.toString()],
      statementTimeoutMs: 1000,
    });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(async () => {
    await store?.close();
    await proxy?.close();
    await databases?.drop();
  });

  it('answers UNAVAILABLE within the statement timeout, not the deadline, and recovers', async () => {
    const onFirst = await put(1);
    const onSecond = await put(2);
    const getBase = (uuid: string) => store.api.getCell({ model: 'rate', uuid, cell: '' });

    proxy.setFaults({ blackhole: true });
    const error = await rejection(getBase(onSecond));
    // The call's deadline is 15 s away: UNAVAILABLE came from the statement timeout.
    expect(error.code, error.details).to.equal(status.UNAVAILABLE);
    expect(error.details).to.contain('partition 1');
    expect((await getBase(onFirst)).cell?.uuid).to.equal(onFirst);

    proxy.setFaults({});
    proxy.resetAll();
    expect((await getBase(onSecond)).cell?.uuid).to.equal(onSecond);
  });
});
