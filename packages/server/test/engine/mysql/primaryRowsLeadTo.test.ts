// The condition a one-round-trip write puts on its first checked INSERT: every primary-index row
// its appends were reached through still leads to their record. Evaluated by the real MariaDB,
// over two primary tables, with the cases a group brings: rows of several tables, one row
// checked twice, an integer past 2^53, a row gone and a row leading elsewhere.
import { expect } from 'chai';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import type { IndexSpec } from '../../../src/engine/model/model.js';
import {
  type PrimaryRowCheck,
  createIndexTableSql,
  primaryRowsLeadTo,
} from '../../../src/engine/mysql/sql/indexTable.js';

const PRIMARY: IndexSpec = {
  name: 'primary',
  fields: [
    { name: 'hotel_id', type: 'integer' },
    { name: 'room_type', type: 'string' },
  ],
  shardOn: 'hotel_id',
};
const TABLES = ['rate_primary_index_000000', 'rate_primary_index_000001'];
const BIG = 2n ** 53n + 1n;

describe('primaryRowsLeadTo on the real MariaDB', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  let sql: mysql.Connection;

  before(async () => {
    databases = await createTestDatabases(1);
    sql = await mysql.createConnection({ uri: databases.urls[0]!, supportBigNumbers: true });
    for (const table of TABLES) await sql.query(createIndexTableSql(table, PRIMARY, true));
    await sql.query(`INSERT INTO \`${TABLES[0]}\` VALUES (1, 'a', 'u1'), (2, 'a', 'u2')`);
    await sql.query(`INSERT INTO \`${TABLES[1]}\` VALUES (?, 'b', 'u3')`, [BIG]);
  });
  after(async () => {
    await sql?.end();
    await databases?.drop();
  });

  const check = (table: number, hotel: number | bigint, room: string, uuid: string) =>
    ({ lookup: { table: TABLES[table]!, index: PRIMARY, values: [hotel, room] }, uuid }) as const;
  const holds = async (checks: readonly PrimaryRowCheck[]) => {
    const condition = primaryRowsLeadTo(checks);
    const [rows] = await sql.query(`SELECT ${condition.sql} AS \`holds\``, [...condition.values]);
    return Number((rows as { holds: number }[])[0]!.holds) === 1;
  };

  it('holds when every row leads to its record, over several tables', async () => {
    expect(await holds([check(0, 1, 'a', 'u1')])).to.equal(true);
    expect(
      await holds([check(0, 1, 'a', 'u1'), check(0, 2, 'a', 'u2'), check(1, BIG, 'b', 'u3')]),
    ).to.equal(true);
  });

  it('holds when one row is checked twice', async () => {
    expect(
      await holds([check(0, 2, 'a', 'u2'), check(1, BIG, 'b', 'u3'), check(0, 2, 'a', 'u2')]),
    ).to.equal(true);
  });

  it('fails when any row is missing or leads to another record', async () => {
    expect(await holds([check(0, 1, 'a', 'u1'), check(0, 3, 'a', 'u1')]), 'no such row').to.equal(
      false,
    );
    expect(await holds([check(0, 1, 'a', 'u1'), check(0, 2, 'a', 'u1')]), 'leads to u2').to.equal(
      false,
    );
    expect(
      await holds([check(0, 1, 'a', 'u1'), check(1, BIG - 1n, 'b', 'u3')]),
      'one below 2^53 + 1',
    ).to.equal(false);
  });
});
