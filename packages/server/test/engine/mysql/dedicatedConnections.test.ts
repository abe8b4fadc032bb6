// A partition's dedicated connections (transactions, session locks) go back to the pool with no
// transaction open. A multi-statement stops at its first failing statement, before its COMMIT:
// a connection returned as it was would hand the next caller an open transaction, whose own
// START TRANSACTION would then commit the failed work's half.
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { type Row, createMysqlPool, parseMysqlUrl } from '../../../src/engine/mysql/mysqlPool.js';
import { Partition } from '../../../src/engine/mysql/partitions.js';
import {
  COMMIT,
  START_TRANSACTION,
  runTogether,
  statement,
} from '../../../src/engine/mysql/sql/statement.js';

describe('dedicated connections on the real MariaDB', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  let partition: Partition;
  before(async () => {
    databases = await createTestDatabases(1);
    const location = parseMysqlUrl(databases.urls[0]!);
    // One connection, so that the next caller is given the one the failed work used.
    const pool = createMysqlPool(location, { connectionLimit: 1, connectTimeoutMs: 2000 });
    partition = new Partition(0, location, pool);
    await partition.run(UNBOUNDED, (pool) =>
      pool.query('CREATE TABLE `scratch` (`id` INT PRIMARY KEY)'),
    );
  });
  after(async () => {
    await partition?.end();
    await databases?.drop();
  });

  const connectionId = () =>
    partition.withConnection(UNBOUNDED, async (connection) => {
      const rows = await connection.query<Row[]>('SELECT CONNECTION_ID() AS `id`');
      return Number(rows[0]!.id);
    });

  it('rolls back what failed work left open, and the connection serves the next caller', async () => {
    const before = await connectionId();
    const failed = await partition
      .withConnection(UNBOUNDED, (connection) =>
        runTogether(connection, [
          START_TRANSACTION,
          statement('INSERT INTO `scratch` VALUES (1)'),
          statement('SELECT * FROM `no_such_table`'),
          COMMIT,
        ]),
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failed, 'the failing statement fails the work').to.be.instanceOf(Error);

    await partition.withConnection(UNBOUNDED, (connection) =>
      runTogether(connection, [
        START_TRANSACTION,
        statement('INSERT INTO `scratch` VALUES (2)'),
        COMMIT,
      ]),
    );
    expect(await connectionId(), 'the same connection, not a new one').to.equal(before);

    const outside = await mysql.createConnection(databases.urls[0]!);
    try {
      const [rows] = await outside.query<mysql.RowDataPacket[]>(
        'SELECT `id` FROM `scratch` ORDER BY `id`',
      );
      expect(
        rows.map((row) => row.id as number),
        'only the next caller’s row: the failed work’s INSERT was not committed with it',
      ).to.deep.equal([2]);
    } finally {
      await outside.end();
    }
  });
});
