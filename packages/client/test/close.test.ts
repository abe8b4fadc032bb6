// Closing a store against a real server and MariaDB: what becomes of the calls it still holds
// and of the calls made after. A TCP proxy holds the server's answers back, so that a call is
// still out (or still waiting to be sent) when the store closes.

import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTcpProxy, type TcpProxy } from '@shameless/testkit';
import { CancelledError, connect } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { rejection, startStoreFixture, type StoreFixture } from './support/storeFixture.js';
import { within } from './transport/support/servers.js';

const FOLLOW_THEN_CLOSE = join(
  dirname(fileURLToPath(import.meta.url)),
  'support/followThenClose.js',
);
const CALLS_WITHOUT_CLOSE = join(
  dirname(fileURLToPath(import.meta.url)),
  'support/callsWithoutClose.js',
);

describe('closing a store', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let proxy: TcpProxy;
  let uuids: string[];

  before(async () => {
    fixture = await startStoreFixture();
    const Rate = await fixture.store.defineModel(RATE_SCHEMA);
    uuids = [];
    for (const room of ['one', 'two']) {
      uuids.push((await Rate.put(rateValues(1, room, '2026-12-01'))).uuid);
    }
    const [host, port] = fixture.address.split(':') as [string, string];
    proxy = await startTcpProxy({ target: { host, port: Number(port) } });
  });
  afterEach(() => proxy.setFaults({}));
  after(async () => {
    await proxy?.close();
    await fixture?.close();
  });

  it('a call still waiting to be sent fails with CancelledError, not retried, costing no budget', async () => {
    const store = await connect({ endpoints: [proxy.address] });
    const Rate = await store.defineModel(RATE_SCHEMA);
    proxy.setFaults({ delayServerToClient: { probability: 1, ms: 250 } });
    const before = store.transport.stats();
    const inFlight = Rate.find(uuids[0]!);
    await sleep(50);
    // Made while a GetCell of its kind is out: held until that call answers, unsent.
    const held = rejection(Rate.find(uuids[1]!));
    await sleep(20);
    await store.close();

    expect((await inFlight)?.uuid, 'a call already out is answered').to.equal(uuids[0]);
    const error = await held;
    expect(error).to.be.instanceOf(CancelledError);
    expect(error.message).to.match(/the transport is closed/);
    const after = store.transport.stats();
    expect(after.heldCalls - before.heldCalls, 'the call was held').to.equal(1);
    expect(after.retries - before.retries).to.equal(0);
    expect(after.budgetTokens).to.be.at.least(before.budgetTokens);
  });

  it('a follow stream (each with follow) ends with CancelledError; new cells no longer reach it', async () => {
    const reader = await fixture.connectAnother();
    const Rate = await reader.defineModel(RATE_SCHEMA);
    const seen: string[] = [];
    let firstCell!: () => void;
    const cameIn = new Promise<void>((resolve) => (firstCell = resolve));
    const following = (async () => {
      for await (const cell of Rate.each({ follow: true })) {
        seen.push(cell.uuid);
        firstCell();
      }
    })();
    await within(cameIn, 5000, 'the first cell');
    await reader.close();

    const error = await rejection(within(following, 5000, 'the follow loop to end'));
    expect(error).to.be.instanceOf(CancelledError);
    expect(error.message).to.equal('each: the transport is closed');
    const count = seen.length;
    const Writer = await fixture.store.defineModel(RATE_SCHEMA);
    await Writer.put(rateValues(1, 'after the close', '2026-12-01'));
    expect(seen).to.have.length(count);
  });

  it('a process that follows a log exits by itself once it closes its store', async () => {
    // A stream left open would keep its channel, and so the process, alive: killed at the
    // timeout, the child fails the test.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [FOLLOW_THEN_CLOSE, fixture.address],
      { timeout: 15_000 },
    );
    expect(stdout).to.include('the loop threw CancelledError: each: the transport is closed');
  });

  it('a process that never closes its store exits by itself once its Pipeline stream is idle', async () => {
    // An open Pipeline stream keeps its channel alive, as a follow stream does: killed at the
    // timeout, the child fails the test.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CALLS_WITHOUT_CLOSE, fixture.address],
      { timeout: 15_000 },
    );
    expect(stdout).to.equal('found never closed; 4 of 4 attempts pipelined\n');
  });
});
