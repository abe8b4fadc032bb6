// Closing the engine while statements are out: it waits for each to end (by its answer, or by
// its deadline), then closes, and takes no new work meanwhile. mysql2's own pool.end() queues a
// QUIT behind a statement, and a connection destroyed after that (its statement timed out)
// never sends it: the close used to wait forever.
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startTcpProxy,
} from '@shameless/testkit';
import { UNBOUNDED, deadlineScope } from '../../src/engine/base/callScope.js';
import { EngineError } from '../../src/engine/base/errors.js';
import {
  RATE_MODEL,
  type StoreFixture,
  putRate,
  startStoreFixture,
} from '../support/storeFixture.js';

describe('closing the engine with statements out', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  let proxy: TcpProxy;
  let store: StoreFixture;

  before(async () => {
    databases = await createTestDatabases(1);
    const url = new URL(databases.urls[0]!);
    proxy = await startTcpProxy({ target: { host: url.hostname, port: Number(url.port) } });
    url.host = proxy.address;
    store = await startStoreFixture({ partitionUrls: [url.toString()] });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(async () => {
    await store?.close();
    await proxy?.close();
    await databases?.drop();
  });

  it('waits for a read its deadline abandons, refuses new work, and closes', async () => {
    const uuid = await putRate(store.api, 1);
    // MySQL stops the read at 200 ms; its answer comes 800 ms late, so the client's own timer
    // (the deadline and a 250 ms grace) destroys the connection while the close waits.
    proxy.setFaults({ delayServerToClient: { probability: 1, ms: 800 } });
    const read = store.engine.getCell(deadlineScope(Date.now() + 200), 'rate', uuid, 'base');
    const outcome = read.then(
      () => 'answered',
      (error: unknown) => error,
    );
    await sleep(50);
    const closed = store.engine.close();
    const late = await store.engine.getCell(UNBOUNDED, 'rate', uuid, 'base').then(
      () => 'answered',
      (error: unknown) => error,
    );
    await closed;
    expect(await outcome).to.be.instanceOf(EngineError);
    expect(late).to.be.instanceOf(EngineError);
    expect((late as EngineError).kind).to.equal('unavailable');
    proxy.setFaults({});
  });
});
