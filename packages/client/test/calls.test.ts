// What the model layer asks of the transport: reads retried and hedged, writes retried with one
// requestId per logical write, per-call deadlines and AbortSignals, against a real server.

import { expect } from 'chai';
import { createServer } from 'node:net';
import type { PutRequest, WriteCellRequest } from '@shameless/proto';
import { CancelledError, connect, type Model } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  rejection,
  startStoreFixture,
  type StoreFixture,
} from './support/storeFixture.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('calls the model layer makes', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let recording: RecordingTransport;
  let Rate: Model<typeof RATE_SCHEMA>;

  before(async () => {
    fixture = await startStoreFixture();
    recording = new RecordingTransport(fixture.store.transport);
    Rate = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
  });
  beforeEach(() => recording.reset());
  after(async () => {
    await fixture?.close();
  });

  it('store.metrics() gives the transport counters as Prometheus text', async () => {
    await Rate.put(rateValues(9, 'metrics', '2026-12-01'));
    const calls = fixture.store.transport.stats().calls;
    const text = fixture.store.metrics({ store: 'test' });
    expect(text).to.include(`shameless_client_calls_total{store="test"} ${calls}\n`);
    expect(text).to.include('# TYPE shameless_client_budget_tokens gauge');
  });

  it('marks reads retryable and hedgeable, and writes retryable only, each with a requestId', async () => {
    const rate = await Rate.put(rateValues(1, '1 bed', '2026-12-01'));
    await rate.update({ net_price: 1 });
    await rate.meta.update({ x: 1 });
    await rate.reload();
    await rate.previous();
    await Rate.fetchLatestCells({ shard: 0 });
    await Rate.findShard(1);

    const reads = ['getCell', 'previous', 'fetchLatestCells', 'findShard'];
    for (const call of recording.calls) {
      const expected = reads.includes(call.method)
        ? { idempotent: true, hedgeable: true }
        : { idempotent: true, hedgeable: false };
      expect(call.options, call.method).to.include(expected);
    }
    const writes = recording.calls
      .filter((call) => call.method === 'put' || call.method === 'writeCell')
      .map((call) => (call.request as PutRequest | WriteCellRequest).requestId);
    expect(writes).to.have.length(3);
    for (const requestId of writes) expect(requestId).to.match(UUID);
    expect(new Set(writes).size, 'one requestId per logical write').to.equal(3);
  });

  it('writes and reads are retried on another endpoint when one is down', async () => {
    const store = await fixture.connectAnother({
      endpoints: [await deadAddress(), fixture.address],
      endpointDownMs: 0, // keep trying the dead endpoint: every other call starts there
      hedge: false,
      budget: { maxTokens: 100 }, // this test is about where retries go, not how many
    });
    const RateHere = await store.defineModel(RATE_SCHEMA);
    const retriesBefore = store.transport.stats().retries;
    const rate = await RateHere.put(rateValues(2, '1 bed', '2026-12-01'));
    for (let i = 1; i <= 4; i++) await rate.update({ net_price: i });
    const found = await RateHere.where({ hotel_id: 2 }).toArray();
    expect(found.map((record) => record.uuid)).to.deep.equal([rate.uuid]);
    const stats = store.transport.stats();
    expect(stats.retries - retriesBefore).to.be.at.least(2);
    expect(stats.failures).to.equal(0);
    expect((await Rate.find(rate.uuid))?.refKey, 'one version per write').to.equal(4);
  });

  it('a caller-chosen requestId makes a repeated put a replay, not a new version', async () => {
    const values = rateValues(3, '1 bed', '2026-12-01', { net_price: 3 });
    const first = await Rate.put(values, { requestId: 'order-3:attempt' });
    const again = await Rate.put(values, { requestId: 'order-3:attempt' });
    expect(again.uuid).to.equal(first.uuid);
    expect(again.refKey).to.equal(0);
    expect(again.base.id).to.equal(first.base.id);
  });

  it('passes per-call deadlines and AbortSignals to the transport', async () => {
    const rate = await Rate.put(rateValues(4, '1 bed', '2026-12-01'));
    await rate.reload({ deadlineMs: 1234 });
    expect(recording.callsOf('getCell')[0]?.options).to.include({ deadlineMs: 1234 });

    const aborted = AbortSignal.abort();
    expect(await rejection(Rate.find(rate.uuid, { signal: aborted }))).to.be.instanceOf(
      CancelledError,
    );
    expect(
      await rejection(Rate.where({ hotel_id: 4 }, { signal: aborted }).toArray()),
    ).to.be.instanceOf(CancelledError);
  });
});

/** An address where nothing listens (a port that was free a moment ago). */
async function deadAddress(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `127.0.0.1:${address.port}`;
}
