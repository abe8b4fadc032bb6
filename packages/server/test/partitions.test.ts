// Stores with several partitions: every row lands in the table and partition FindShard names,
// checked in MySQL itself; a partition that is down fails only the requests that need it.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import type { MariaDbServer } from '@shameless/testkit';
import { Operator, SortOrder } from '@shameless/proto';
import { collect, rejection } from './support/grpcCalls.js';
import { int } from './support/indexValues.js';
import {
  RATE_MODEL,
  type StoreFixture,
  type TwoServerStore,
  pack,
  requestId,
  startStoreFixture,
  startTwoServerStore,
} from './support/storeFixture.js';

async function rowsIn(url: string, table: string, where: string, values: unknown[]) {
  const connection = await mysql.createConnection(url);
  try {
    const [rows] = await connection.query(`SELECT * FROM \`${table}\` WHERE ${where}`, values);
    return rows as Record<string, unknown>[];
  } finally {
    await connection.end();
  }
}

async function tablesIn(url: string): Promise<string[]> {
  const connection = await mysql.createConnection(url);
  try {
    const [rows] = await connection.query('SHOW TABLES');
    return (rows as Record<string, string>[]).map((row) => Object.values(row)[0]!);
  } finally {
    await connection.end();
  }
}

const rate = (hotelId: number) => ({
  hotel_id: hotelId,
  room_type: 'r',
  check_in_date: 'd',
  gateway: 'g',
  discount_type: 't',
});

describe('Partitions: two databases on one server', function () {
  let store: StoreFixture;
  before(async () => {
    store = await startStoreFixture({ shardsCount: 8, partitionCount: 2 });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());

  it('creates each shard only on its own partition', async () => {
    const [first, second] = await Promise.all(store.partitionUrls.map(tablesIn));
    expect(first).to.include('test_rate_000003').and.not.include('test_rate_000004');
    expect(second).to.include('test_rate_000004').and.not.include('test_rate_000003');
    expect(second).to.include('test_rate_secondary_index_000007');
  });

  it('puts every row where FindShard says', async () => {
    for (let hotelId = -6; hotelId < 10; hotelId++) {
      const put = await store.api.put({
        model: 'rate',
        values: pack(rate(hotelId)),
        requestId: requestId(),
      });
      const indexPlace = await store.api.findShard({
        key: { $case: 'value', value: BigInt(hotelId) },
      });
      const contentPlace = await store.api.findShard({ key: { $case: 'uuid', uuid: put.uuid } });
      expect(put.base!.shard).to.equal(contentPlace.shard);
      const pad = (shard: number) => String(shard).padStart(6, '0');
      for (const [i, url] of store.partitionUrls.entries()) {
        const content = await rowsIn(url, `test_rate_${pad(contentPlace.shard)}`, 'uuid = ?', [
          put.uuid,
        ]).catch(() => []);
        expect(content.length, `content on partition ${i}`).to.equal(
          i === contentPlace.partition ? 1 : 0,
        );
        for (const index of ['primary', 'secondary']) {
          const rows = await rowsIn(
            url,
            `test_rate_${index}_index_${pad(indexPlace.shard)}`,
            'uuid = ?',
            [put.uuid],
          ).catch(() => []);
          expect(rows.length, `${index} index on partition ${i}`).to.equal(
            i === indexPlace.partition ? 1 : 0,
          );
          if (rows.length) expect(rows[0]).to.include({ hotel_id: hotelId, uuid: put.uuid });
        }
      }
    }
  });
});

describe('Partitions: two MariaDB servers, one of them down', function () {
  this.timeout(90_000);
  let second: MariaDbServer;
  let store: StoreFixture;
  let servers: TwoServerStore;

  before(async () => {
    servers = await startTwoServerStore();
    ({ store, second } = servers);
  });
  after(async () => {
    await servers?.close();
  });

  it('answers UNAVAILABLE for requests that need the down partition and serves the others', async () => {
    // hotel 1 -> index shard 1 (partition 0); hotel 3 -> shard 3 (partition 1)
    const onFirst = await store.api.put({
      model: 'rate',
      values: pack(rate(1)),
      requestId: requestId(),
    });
    const onSecond = await store.api.put({
      model: 'rate',
      values: pack(rate(3)),
      requestId: requestId(),
    });
    const contentPartition = (uuid: string) =>
      store.api.findShard({ key: { $case: 'uuid', uuid } });

    await second.kill();
    const where = (hotelId: number) =>
      collect(
        store.api.client.where({
          model: 'rate',
          index: '',
          cells: [],
          order: SortOrder.SORT_ORDER_ASC,
          limit: 0,
          pageToken: '',
          conditions: [
            {
              field: 'hotel_id',
              op: Operator.OPERATOR_EQ,
              values: [int(hotelId)],
            },
          ],
        }),
      );
    const down = await rejection(where(3));
    expect(down.code).to.equal(status.UNAVAILABLE);
    expect(down.details).to.match(/partition 1 is unavailable/);
    expect(down.details).not.to.match(/mysql:|root|ECONN/);

    const firstRecordPartition = (await contentPartition(onFirst.uuid)).partition;
    const cell = store.api.getCell({
      model: 'rate',
      uuid: onFirst.uuid,
      cell: 'base',
      refKey: undefined,
    });
    if (firstRecordPartition === 0) {
      expect((await cell).cell?.uuid).to.equal(onFirst.uuid);
    } else {
      expect((await rejection(cell)).code).to.equal(status.UNAVAILABLE);
    }
    const log = await store.api.fetchLatestCells({
      model: 'rate',
      shard: 0,
      cursor: 0n,
      limit: 10,
    });
    expect(log.maxId).to.be.greaterThanOrEqual(0);
    expect(
      (
        await rejection(
          store.api.fetchLatestCells({ model: 'rate', shard: 2, cursor: 0n, limit: 10 }),
        )
      ).code,
    ).to.equal(status.UNAVAILABLE);

    await second.start();
    const back = await where(3);
    expect(back.flatMap((m) => m.records).map((r) => r.uuid)).to.deep.equal([onSecond.uuid]);
  });
});
