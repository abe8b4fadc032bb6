// The pass that starts each run of a workload reading its records: it reads every record of the
// set (its primary-index row and its latest base cell) and changes nothing. Against a real
// `shameless serve` and MariaDB.
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { type BenchStore, type SeededSet, seedRates } from '../src/subjects/benchStore.js';
import { BaselineTables } from '../src/subjects/mysqlBaseline.js';
import { touchRecords } from '../src/workloads/touchRecords.js';
import { silentProgress } from './support/silentProgress.js';
import { openTestBenchStore } from './support/testBenchStore.js';

describe('the pass over a run’s records', function () {
  this.timeout(60_000);
  let bench: BenchStore;
  let seeded: SeededSet;
  let sql: mysql.Connection;

  before(async () => {
    bench = await openTestBenchStore();
    seeded = await seedRates(
      bench.rate,
      { firstHotel: 1, hotels: 3, perHotel: 10, bodyBytes: 100 },
      silentProgress,
    );
    sql = await mysql.createConnection(bench.partitionUrl);
  });

  after(async () => {
    await sql?.end();
    await bench?.close();
  });

  /** What MariaDB has counted of `name` since it started, every session together. */
  const globalStatus = async (name: string) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>('SHOW GLOBAL STATUS LIKE ?', [name]);
    return Number(rows[0]!.Value);
  };

  /** Rows of the model's content tables: every version of every cell. */
  const versions = async (tables: BaselineTables) => {
    const counts = Array.from(
      { length: tables.shardsCount },
      (_, shard) => `SELECT COUNT(*) AS n FROM \`${tables.content(shard)}\``,
    );
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT SUM(n) AS n FROM (${counts.join(' UNION ALL ')}) AS shards`,
    );
    return Number(rows[0]!.n);
  };

  it('reads each record’s index row and latest base cell, and writes nothing', async () => {
    const tables = new BaselineTables('rate', bench.settings.shardsCount);
    const versionsBefore = await versions(tables);
    const keyReadsBefore = await globalStatus('Handler_read_key');
    await touchRecords(bench.partitionUrl, tables, seeded);
    const keyReads = (await globalStatus('Handler_read_key')) - keyReadsBefore;
    assert.ok(
      keyReads >= 2 * seeded.uuids.length,
      `${keyReads} index reads for ${seeded.uuids.length} records`,
    );
    assert.equal(await versions(tables), versionsBefore, 'nothing written');
  });
});
