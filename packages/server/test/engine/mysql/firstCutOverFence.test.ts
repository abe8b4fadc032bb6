// The fence at a store's first cut-over: the mover renames the shard's tables away before it
// publishes the map's version 1, so for a moment the store is at version 0 with a table gone.
// A call meeting that is a shard being moved (it waits, then answers UNAVAILABLE: retry), not
// the missing table of a store that never moved, which stays the failure it is (INTERNAL).
import { expect } from 'chai';
import { type ServiceError, status } from '@grpc/grpc-js';
import { WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import { contentShard } from '../../../src/engine/model/sharding.js';
import { storeTableName } from '../../../src/engine/model/tableNames.js';
import { createShardMovesTableSql } from '../../../src/engine/mysql/sql/shardMoves.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';

const SHARDS = 4;

describe('fence at version 0: a first cut-over between its renames and its publish', function () {
  this.timeout(30_000);
  let store: StoreFixture;
  let sql: mysql.Connection;
  let uuid: string;
  let content: string;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    const put = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 1,
        room_type: 'double',
        check_in_date: '2026-01-01',
        gateway: 'g',
        discount_type: 'd',
      }),
      requestId: requestId(),
    });
    uuid = put.uuid;
    content = `test_rate_${String(contentShard(uuid, SHARDS)).padStart(6, '0')}`;
    sql = await mysql.createConnection(store.partitionUrls[0]!);
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  const write = () =>
    store.api
      .writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ n: 1 }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      })
      .then(
        () => undefined,
        (error: ServiceError) => error,
      );

  it('without a move under way, a missing table is the failure it is; with one, the shard is being moved', async () => {
    await sql.query(`ALTER TABLE \`${content}\` RENAME TO \`${content}_away\``);
    try {
      const plain = await write();
      expect(plain?.code, plain?.message).to.equal(status.INTERNAL);

      const moves = storeTableName('test', 'shard_moves');
      await sql.query(createShardMovesTableSql(moves));
      await sql.query(
        `INSERT INTO \`${moves}\` (shard, source, target, target_location, phase, content_cursor, created_at, updated_at)
         VALUES (?, 0, 1, 'mysql://elsewhere/db', 'verified', '{}', NOW(6), NOW(6))`,
        [contentShard(uuid, SHARDS)],
      );
      const moving = await write();
      expect(moving?.code, moving?.message).to.equal(status.UNAVAILABLE);
      expect(moving!.details).to.match(/being moved to another partition; retry/);
    } finally {
      await sql.query(`ALTER TABLE \`${content}_away\` RENAME TO \`${content}\``);
    }
    expect(await write()).to.equal(undefined);
  });
});
