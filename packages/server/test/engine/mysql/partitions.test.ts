// Stores with several partitions: every row lands in the table and partition FindShard names,
// checked in MySQL itself; a partition that is down fails only the requests that need it.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import mysql from 'mysql2/promise';
import type { MariaDbServer } from '@shameless/testkit';
import { FieldType, type ModelDefinition, Operator, SortOrder } from '@shameless/proto';
import { collect, rejection } from '../../support/grpcCalls.js';
import { int } from '../../support/indexValues.js';
import {
  RATE_MODEL,
  type StoreFixture,
  type TwoServerStore,
  pack,
  requestId,
  startStoreFixture,
  startTwoServerStore,
} from '../../support/storeFixture.js';

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
      // A create chooses its uuid so that its content commits with its primary-index row.
      expect(contentPlace.partition, 'content on the primary index row partition').to.equal(
        indexPlace.partition,
      );
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

describe('Partitions: an index sharded on another field lives on another partition', function () {
  let store: StoreFixture;
  const pad = (shard: number) => String(shard).padStart(6, '0');
  const STAY: ModelDefinition = {
    name: 'stay',
    primaryIndex: {
      name: '',
      fields: [
        { name: 'hotel_id', type: FieldType.FIELD_TYPE_INTEGER },
        { name: 'day', type: FieldType.FIELD_TYPE_STRING },
      ],
      shardOn: 'hotel_id',
    },
    secondaryIndices: [
      {
        name: 'by_chain',
        fields: [
          { name: 'chain_id', type: FieldType.FIELD_TYPE_INTEGER },
          { name: 'code', type: FieldType.FIELD_TYPE_STRING },
        ],
        shardOn: 'chain_id',
      },
    ],
    cells: [],
  };

  before(async () => {
    store = await startStoreFixture({ shardsCount: 8, partitionCount: 2 });
    // The Ruby gem's index tables are unique on their fields: made so before DefineModel, which
    // keeps tables that exist.
    for (const [partition, url] of store.partitionUrls.entries()) {
      const connection = await mysql.createConnection(url);
      for (let shard = 4 * partition; shard < 4 * partition + 4; shard++) {
        await connection.query(
          `CREATE TABLE \`test_stay_by_chain_index_${pad(shard)}\` (
             chain_id INT NOT NULL, code VARCHAR(255) NOT NULL, uuid VARCHAR(36),
             UNIQUE KEY \`gem_unique\` (chain_id, code))`,
        );
      }
      await connection.end();
    }
    await store.api.defineModel({ model: STAY });
  });
  after(() => store?.close());

  const put = (hotel: number, chain: number, code: string) =>
    store.api.put({
      model: 'stay',
      values: pack({ hotel_id: hotel, day: 'mon', chain_id: chain, code }),
      requestId: requestId(),
    });

  it('writes the row there after the commit, and refuses a create it collides with, leaving no index row', async () => {
    // hotels 1 and 2: index shards 1, 2 (partition 0); chain 5: shard 5 (partition 1).
    const first = await put(1, 5, 'x');
    expect(first.created).to.equal(true);
    const byChain = () =>
      rowsIn(store.partitionUrls[1]!, `test_stay_by_chain_index_${pad(5)}`, 'chain_id = 5', []);
    expect((await byChain()).map((row) => row.uuid)).to.deep.equal([first.uuid]);

    const error = await rejection(put(2, 5, 'x'));
    expect(error.code).to.equal(status.ALREADY_EXISTS);
    expect(error.details).to.match(
      /^index by_chain of stay already holds chain_id=5, code="x" for another record/,
    );
    expect(
      await rowsIn(
        store.partitionUrls[0]!,
        `test_stay_primary_index_${pad(2)}`,
        'hotel_id = 2',
        [],
      ),
    ).to.deep.equal([]);
    expect((await byChain()).map((row) => row.uuid)).to.deep.equal([first.uuid]);

    const other = await put(2, 5, 'y');
    expect(other.created).to.equal(true);
    expect((await byChain()).map((row) => row.uuid).sort()).to.deep.equal(
      [first.uuid, other.uuid].sort(),
    );
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
