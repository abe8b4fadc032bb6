// Found while racing creates (§4.1). Put's create path (putOperation.ts) holds one pooled
// connection for GET_LOCK on the primary values, and then needs a second connection from the
// same partition pool for the base cell (CellWriter.append), the index rows, or the update path
// of a create that lost the race. Once every connection of the pool is held by such a create,
// none of them can get its second connection:
// - creates of the SAME new values: the lock holder waits for a connection that the lock's
//   waiters hold; the waiters give up after GET_LOCK's 10 s and answer UNAVAILABLE;
// - creates of DISTINCT new values: each holds its own lock and waits for a second connection
//   forever (mysql2's pool has no acquire timeout), so the server stops answering every
//   request that needs that partition, for good.
// The server runs with the default pool size (16).
import { expect } from 'chai';
import { pack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  RATE,
  callWithDeadline,
  codeName,
  grpcCode,
  newRequestId,
  range,
} from './support.js';

const POOL_SIZE = 16;

describe('consistency: concurrent creates and the connection pool', function () {
  this.timeout(60_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.create(4);
    await cluster.start(0, ['--pool-size', String(POOL_SIZE)]);
    await cluster.api(0).defineModel({ model: RATE });
  });
  after(() => cluster?.close());

  const put = (hotelId: number, deadlineMs: number) => {
    const api = cluster.api(0);
    return callWithDeadline(
      api,
      api.client.put,
      {
        model: 'rate',
        values: pack({ hotel_id: hotelId, room_type: 'r', check_in_date: 'd', gateway: 'g' }),
        requestId: newRequestId('pool'),
      },
      deadlineMs,
    ).then(
      () => 'OK',
      (error: unknown) => codeName(grpcCode(error)),
    );
  };

  it(`${POOL_SIZE + 8} concurrent Puts of the same new values on one server (pool ${POOL_SIZE}) all succeed`, async () => {
    // The deadline outlasts GET_LOCK's 10 s wait, so a stalled create answers for itself.
    const outcomes = await Promise.all(range(POOL_SIZE + 8).map(() => put(100, 15_000)));
    console.log(
      `      ${outcomes.length} concurrent Puts of one new tuple (pool ${POOL_SIZE}): ${JSON.stringify(countBy(outcomes))}`,
    );
    expect(outcomes).to.deep.equal(Array(outcomes.length).fill('OK'));
  });

  it(`${POOL_SIZE * 3} concurrent creates of distinct values on one server (pool ${POOL_SIZE}) all complete, and the server keeps serving`, async () => {
    const outcomes = await Promise.all(range(POOL_SIZE * 3).map((i) => put(500 + i, 5000)));
    const afterwards = await put(999, 5000);
    console.log(
      `      ${outcomes.length} concurrent creates of distinct tuples (pool ${POOL_SIZE}): ${JSON.stringify(countBy(outcomes))}; a create afterwards: ${afterwards}`,
    );
    expect(outcomes).to.deep.equal(Array(outcomes.length).fill('OK'));
    expect(afterwards).to.equal('OK');
  });
});

function countBy(items: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}
