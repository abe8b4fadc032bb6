// The shard moves workload end to end, small: a shard's copy beside `mariadb-dump | mariadb`, then
// shards 1–4 moved under writes through two servers. Against real parts: the test MariaDB, a
// second `mariadbd` the test kit starts, two `shameless serve` processes and MoveShards.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mysqlUrlFromEnv } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { serverConnection } from '../src/subjects/benchStore.js';
import { type MovesResult, runMovesWorkload } from '../src/workloads/shardMoveCopy.js';
import { silentProgress } from './support/silentProgress.js';

describe('the shard moves workload', function () {
  this.timeout(180_000);
  const database = `shameless_test_moves_${process.pid}_${randomBytes(3).toString('hex')}`;
  let result: MovesResult;

  before(async () => {
    result = await runMovesWorkload(
      {
        mysqlUrl: mysqlUrlFromEnv(),
        database,
        shardsCount: 16,
        poolSize: 4,
        coalesce: true,
        pipeline: true,
      },
      { cells: 2000, bodyBytes: 1024 },
      silentProgress,
    );
  });

  it('times the mover’s copy and mariadb-dump’s of the same shard', () => {
    assert.ok(result.copyMs > 0 && result.copyCellsPerSecond > 0, JSON.stringify(result));
    assert.ok(result.dumpMs > 0 && result.dumpCellsPerSecond > 0, JSON.stringify(result));
    assert.ok(result.moveMs >= result.copyMs, 'the whole move includes its copy');
  });

  it('moves shards 1–4 under writes: a hold for each, writes to both kinds of shard, none refused', () => {
    const held = result.underWrites;
    assert.ok(held, 'the cut-overs ran (16 shards)');
    assert.deepEqual(
      held.holds.map(({ shard }) => shard),
      [1, 2, 3, 4],
    );
    for (const { shard, holdMs } of held.holds) assert.ok(holdMs > 0, `shard ${shard} held 0 ms`);
    assert.equal(held.holdP99Ms, Math.max(...held.holds.map(({ holdMs }) => holdMs)));
    assert.deepEqual(held.staying, [5, 6, 7, 8]);
    assert.equal(held.moved.refused + held.stayed.refused, 0, held.firstRefusal);
    assert.ok(held.moved.count > 0, 'writes to the shards moved were due while the move ran');
    assert.ok(held.stayed.count > 0, 'writes to the shards that stayed were due while it ran');
  });

  it('drops its databases when it is done', async () => {
    const admin = await mysql.createConnection(serverConnection(mysqlUrlFromEnv()));
    try {
      const [rows] = await admin.query<mysql.RowDataPacket[]>('SHOW DATABASES LIKE ?', [
        `${database}%`,
      ]);
      assert.deepEqual(rows, []);
    } finally {
      await admin.end();
    }
  });
});
