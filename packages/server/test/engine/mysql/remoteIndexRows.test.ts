// A create commits its record with the index rows on its own partition, then writes those on
// other partitions (an index sharded on another field). Once the commit is made, those rows are
// written whatever becomes of the call: a caller whose deadline passes in between, and who
// never retries, must not leave a record that its secondary index cannot find.
import { expect } from 'chai';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import { FieldType, type ModelDefinition, type PutResponse } from '@shameless/proto';
import { useProxiedStore } from '../../support/proxiedStore.js';
import { pack, requestId } from '../../support/storeFixture.js';

/** Primary index sharded on hotel_id, secondary on chain_id: 4 shards, 2 per partition. */
const STAY: ModelDefinition = {
  name: 'stay',
  primaryIndex: {
    name: '',
    fields: [{ name: 'hotel_id', type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: 'hotel_id',
  },
  secondaryIndices: [
    {
      name: 'by_chain',
      fields: [{ name: 'chain_id', type: FieldType.FIELD_TYPE_INTEGER }],
      shardOn: 'chain_id',
    },
  ],
  cells: [],
};

async function chainRows(url: string, chainId: number): Promise<string[]> {
  const connection = await mysql.createConnection(url);
  try {
    // chain_id 3 and 7 live in index shard 3, the second partition's.
    const [rows] = await connection.query(
      'SELECT uuid FROM `test_stay_by_chain_index_000003` WHERE chain_id = ?',
      [chainId],
    );
    return (rows as { uuid: string }[]).map((row) => row.uuid);
  } finally {
    await connection.end();
  }
}

describe("a create's index rows on another partition", function () {
  this.timeout(60_000);
  const setup = useProxiedStore({ shardsCount: 4 });
  before(() => setup.store.api.defineModel({ model: STAY }));

  it("are written when the call's deadline passes after the commit", async () => {
    const { store, proxy, directUrls } = setup;
    // Hotel 1's primary-index row, and so the record, live on the first partition.
    const warm = await store.api.put({
      model: 'stay',
      values: pack({ hotel_id: 1, chain_id: 3 }),
      requestId: requestId(),
    });
    expect(await chainRows(directUrls[1]!, 3)).to.deep.equal([warm.uuid]);

    // No connection to the second partition is left open, and a new one answers slowly: its
    // row can only be written after the call's deadline.
    proxy.resetAll();
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.setFaults({ delayServerToClient: { probability: 1, ms: 400 } });
    const error = await new Promise<ServiceError>((resolve, reject) =>
      store.api.client.put(
        { model: 'stay', values: pack({ hotel_id: 5, chain_id: 7 }), requestId: requestId() },
        new Metadata(),
        { deadline: Date.now() + 200 },
        (callError: ServiceError | null, response: PutResponse) =>
          callError ? resolve(callError) : reject(new Error(`answered ${response.uuid}`)),
      ),
    );
    expect(error.code).to.equal(status.DEADLINE_EXCEEDED);
    proxy.setFaults({});

    let rows: string[] = [];
    for (const waitUntil = Date.now() + 10_000; rows.length === 0 && Date.now() < waitUntil;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      rows = await chainRows(directUrls[1]!, 7);
    }
    expect(rows, 'the by_chain row of the committed record').to.have.length(1);
    const [uuid] = rows;
    // The record it names was committed on the first partition.
    const found = await store.api.getCell({ model: 'stay', uuid: uuid!, cell: '' });
    expect(found.cell?.uuid).to.equal(uuid);
  });
});
