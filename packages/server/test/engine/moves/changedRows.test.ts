// The cut-over's read of the changed index keys' rows (readChangedRows: joined to the captured
// changes in SQL, in the lock's round trip), against the same keys read as the chunked catch-up
// reads them (readRowsByKeys, the keys bound from the changes' JSON): the same rows, with keys
// past 2^53 and 2^63, microseconds in a key, and keys a case-insensitive collation holds equal.
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { expect } from 'chai';
import {
  type MysqlPool,
  type Row,
  createMysqlPool,
  parseMysqlUrl,
} from '../../../src/engine/mysql/mysqlPool.js';
import {
  UNLOCK_TABLES,
  bindKey,
  createChangeTriggersSql,
  createMoveChangesTableSql,
  lockTablesSql,
  readChangedRows,
  readChanges,
  readRowsByKeys,
  readTableShapes,
  toCapturedChange,
} from '../../../src/engine/mysql/sql/shardMoves.js';
import { runTogether, statement } from '../../../src/engine/mysql/sql/statement.js';

describe('the changed index rows, read with the captured changes (cut-over)', () => {
  let databases: TestDatabases | undefined;
  let pool: MysqlPool | undefined;
  before(async () => {
    databases = await createTestDatabases(1);
    pool = createMysqlPool(parseMysqlUrl(databases.urls[0]!), {
      connectionLimit: 2,
      connectTimeoutMs: 2000,
    });
  });
  after(async () => {
    await pool?.end();
    await databases?.drop();
  });

  it('reads the rows of the changed keys that readRowsByKeys reads, each once', async () => {
    const sql = pool!;
    await sql.query(
      `CREATE TABLE idx (hid BIGINT UNSIGNED NOT NULL, name VARCHAR(40) COLLATE utf8mb4_general_ci NOT NULL,
        at DATETIME(6) NOT NULL, uuid VARCHAR(36) NOT NULL, PRIMARY KEY (hid, name, at)) DEFAULT CHARSET=utf8mb4`,
    );
    // A row from before the capture, untouched since: no changed key names it.
    await sql.query(`INSERT INTO idx VALUES (1, 'before', '2026-11-28 00:00:00', 'u0')`);
    await sql.query(createMoveChangesTableSql('changes'));
    const shape = (await readTableShapes(sql, ['idx'])).get('idx')!;
    for (const trigger of createChangeTriggersSql(shape, 'changes')) await sql.query(trigger);
    await sql.query(
      `INSERT INTO idx VALUES
        (18446744073709551615, 'Abc', '2026-11-29 01:02:03.123456', 'u1'),
        (9007199254740993, 'x', '2026-11-29 01:02:03.000001', 'u2'),
        (9007199254740992, 'x', '2026-11-29 01:02:03.000001', 'u3'),
        (7, 'gone', '2026-11-29 00:00:00', 'u4'),
        (8, 'Case', '2026-01-01 00:00:00', 'u5')`,
    );
    await sql.query('DELETE FROM idx WHERE hid IN (7, 8)');
    await sql.query(`INSERT INTO idx VALUES (8, 'CASE', '2026-01-01 00:00:00', 'u6')`);

    const connection = await sql.getConnection();
    try {
      const [, changed = [], changes = []] = (await runTogether(connection, [
        statement(lockTablesSql(['idx', 'changes'])),
        readChangedRows(shape, 'changes', 2000),
        readChanges('changes', ['idx'], 2000),
      ])) as Row[][];
      const keys = changes.map((row) => bindKey(shape, toCapturedChange(row).key));
      const [byKeys = []] = (await runTogether(connection, [
        readRowsByKeys(shape, keys),
        statement(UNLOCK_TABLES),
      ])) as Row[][];
      const byUuid = (rows: Row[]) =>
        [...rows].sort((a, b) => String(a.uuid).localeCompare(String(b.uuid)));
      expect(changes).to.have.length(8);
      expect(byUuid(changed)).to.deep.equal(byUuid(byKeys));
      expect(byUuid(changed).map((row) => [String(row.hid), row.at, row.uuid])).to.deep.equal([
        ['18446744073709551615', '2026-11-29 01:02:03.123456', 'u1'],
        ['9007199254740993', '2026-11-29 01:02:03.000001', 'u2'],
        ['9007199254740992', '2026-11-29 01:02:03.000001', 'u3'],
        ['8', '2026-01-01 00:00:00.000000', 'u6'],
      ]);
    } finally {
      connection.release();
    }
  });
});
