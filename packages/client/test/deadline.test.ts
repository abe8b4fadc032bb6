// A call past its deadline, against a real server and MariaDB behind a TCP proxy that stops
// forwarding: the caller gets the SDK's DeadlineExceededError (the deadline and the attempts
// made), whichever timer saw the deadline first, the SDK's own or grpc-js's (each attempt is
// sent with the call's deadline, and grpc-js times it too).

import { expect } from 'chai';
import { startTcpProxy, type TcpProxy } from '@shameless/testkit';
import { DeadlineExceededError, connect } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { rejection, startStoreFixture, type StoreFixture } from './support/storeFixture.js';

describe('a call past its deadline', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let proxy: TcpProxy;

  before(async () => {
    fixture = await startStoreFixture();
    const [host, port] = fixture.address.split(':') as [string, string];
    proxy = await startTcpProxy({ target: { host, port: Number(port) } });
  });
  after(async () => {
    await proxy?.close();
    await fixture?.close();
  });

  it("fails with the SDK's DeadlineExceededError, naming the deadline and the attempts", async () => {
    // Single calls, so that each caller's deadline races grpc-js's on its own call.
    const store = await connect({ endpoints: [proxy.address], coalesce: false });
    try {
      const Rate = await store.defineModel(RATE_SCHEMA);
      const { uuid } = await Rate.put(rateValues(1, 'one', '2026-12-01'));
      proxy.setFaults({ blackhole: true });
      const errors = await Promise.all(
        Array.from({ length: 20 }, () => rejection(Rate.find(uuid, { deadlineMs: 300 }))),
      );
      for (const error of errors) {
        expect(error).to.be.instanceOf(DeadlineExceededError);
        expect(error.message).to.equal('getCell: deadline of 300 ms exceeded after 1 attempt(s)');
      }
    } finally {
      await store.close();
      proxy.setFaults({});
      proxy.resetAll();
    }
  });
});
