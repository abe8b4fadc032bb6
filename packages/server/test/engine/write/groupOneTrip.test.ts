// A group of several callers' writes, at the default limits, goes in the one round trip of a
// write from remembered versions (shardTransaction.ts): its INSERTs fit what a round trip
// carries. A group past that reads its cells under its locks first, a second round trip and a
// second plan; at the former 8 MiB of bodies, concurrent WriteCells of 500 cells formed such
// groups most of the time.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { type CallScope, UNBOUNDED } from '../../../src/engine/base/callScope.js';
import type { Engine } from '../../../src/engine/engine.js';
import type { SqlConnection } from '../../../src/engine/mysql/mysqlPool.js';
import { Partition } from '../../../src/engine/mysql/partitions.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';
import { startObservedEngine } from '../../support/observedEngine.js';

/** A partition that counts the round trips of each transaction on a connection of its own. */
class TripCountingPartition extends Partition {
  readonly transactions: number[] = [];
  override withConnection<T>(
    scope: CallScope,
    work: (connection: SqlConnection) => Promise<T>,
  ): Promise<T> {
    return super.withConnection(scope, async (connection) => {
      let trips = 0;
      try {
        return await work({
          query: (sql, values) => {
            trips += 1;
            return connection.query(sql, values);
          },
          release: () => connection.release(),
          destroy: () => connection.destroy(),
        });
      } finally {
        this.transactions.push(trips);
      }
    });
  }
}

describe('group commit at the default limits', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let engine: Engine;
  let partition: TripCountingPartition;

  before(async () => {
    store = await startStoreFixture();
    await store.api.defineModel({ model: RATE_MODEL });
    ({ engine, partition } = await startObservedEngine(
      store,
      (location, pool) => new TripCountingPartition(0, location, pool),
      { followPollIntervalMs: 100 },
    ));
  });
  after(async () => {
    await engine?.close();
    await store?.close();
  });

  it('writes concurrent calls of 2 MiB in all, each group in one round trip', async () => {
    // Records this engine created: it remembers that their meta cells have no version yet.
    const uuids: string[] = [];
    for (let i = 0; i < 250; i++) {
      const put = await engine.put(
        UNBOUNDED,
        'rate',
        pack({
          hotel_id: i,
          room_type: 'double',
          check_in_date: randomUUID(),
          gateway: 'g',
          discount_type: 'd',
        }),
        requestId(),
      );
      uuids.push(put.uuid);
    }
    const body = pack({ note: 'x'.repeat(2000) });
    const transactionsBefore = partition.transactions.length;
    // Eight calls of 125 writes of 2 KB, made in one turn: they queue together.
    const calls = await Promise.all(
      Array.from({ length: 8 }, (_, call) =>
        engine.writeCells(
          UNBOUNDED,
          uuids.slice(call * 31, call * 31 + 125).map((uuid) => ({
            model: 'rate',
            uuid,
            cell: 'meta',
            body,
            mode: 'replace' as const,
            requestId: requestId(),
          })),
        ),
      ),
    );
    for (const outcome of calls.flat()) expect(outcome.ok, 'every write written').to.equal(true);
    const transactions = partition.transactions.slice(transactionsBefore);
    expect(transactions.length, 'transactions').to.be.within(2, 8);
    expect(transactions, 'round trips of each transaction').to.deep.equal(
      transactions.map(() => 1),
    );
  });
});
