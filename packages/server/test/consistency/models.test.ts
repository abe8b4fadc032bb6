// Found while spreading clients over two servers (§4.1): a model (or a cell) defined through one
// server must be usable through any other server as soon as DefineModel has answered. A server
// that reloaded its definitions less than 250 ms earlier answers NOT_FOUND instead
// (ModelRegistry.get/requireCell only reload when the last reload is 250 ms old).
import { expect } from 'chai';
import { pack } from '../support/storeFixture.js';
import { ProcessCluster, RATE, codeName, grpcCode, newRequestId } from './support.js';

describe('consistency: definitions are visible on every server once defined', function () {
  this.timeout(60_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.create(1);
    await Promise.all([cluster.start(0), cluster.start(1)]);
  });
  after(() => cluster?.close());

  const outcome = (call: Promise<unknown>) =>
    call.then(
      () => 'OK',
      (error: unknown) =>
        `${codeName(grpcCode(error))}: ${(error as { details?: string }).details}`,
    );

  it('a model defined through server 0 is usable through server 1 right away', async () => {
    // Server 1 has just loaded the definitions (any request that reads them does that).
    await cluster.api(1).describeStore({});
    await cluster.api(0).defineModel({ model: RATE });
    const put = await outcome(
      cluster.api(1).put({
        model: 'rate',
        values: pack({ hotel_id: 1, room_type: 'r', check_in_date: 'd', gateway: 'g' }),
        requestId: newRequestId('model'),
      }),
    );
    expect(put).to.equal('OK');
  });

  it('a cell added through server 0 is writable through server 1 right away', async () => {
    await cluster.api(0).defineModel({ model: RATE });
    const { uuid } = await cluster.api(0).put({
      model: 'rate',
      values: pack({ hotel_id: 2, room_type: 'r', check_in_date: 'd', gateway: 'g' }),
      requestId: newRequestId('cell'),
    });
    await cluster.api(1).describeStore({});
    await cluster.api(0).defineModel({ model: { ...RATE, cells: [...RATE.cells, 'extra'] } });
    const write = await outcome(
      cluster.api(1).writeCell({
        model: 'rate',
        uuid,
        cell: 'extra',
        body: pack({ x: 1 }),
        mode: 0,
        requestId: newRequestId('cell'),
      }),
    );
    expect(write).to.equal('OK');
  });
});
