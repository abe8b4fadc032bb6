// The text the store's pool sends for a query with values (queryText.ts): the very string mysql2's
// own formatting makes, whatever the values (bodies of every byte, strings with quotes, NULs,
// Latin-1 and beyond, the text of a mark itself, integers past 2^53, dates), and rows written
// through it read back exactly from the real MariaDB by a connection that formats nothing.
import { expect } from 'chai';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import mysql, { type SqlValue } from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import {
  type MysqlPool,
  createMysqlPool,
  parseMysqlUrl,
} from '../../../src/engine/mysql/mysqlPool.js';
import { formatQuery } from '../../../src/engine/mysql/queryText.js';

const EVERY_BYTE = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7 + 3) % 256));
const NULS = Buffer.alloc(300);
const SHORT = Buffer.from([0, 39, 92, 255]);
const INSERT = 'INSERT INTO `t` (`id`, `name`, `body`, `at`) VALUES ?';

const mysql2Text = (sql: string, values: SqlValue[]) => mysql.format(sql, values, false, 'Z');

describe('a query’s text (queryText.ts)', () => {
  const cases: ReadonlyArray<[string, string, SqlValue[]]> = [
    [
      'multi-row VALUES with bodies long and short',
      INSERT,
      [
        [
          [1, 'plain', EVERY_BYTE, new Date(Date.UTC(2026, 10, 27, 1, 2, 3, 456))],
          [2, "quote ' backslash \\ nul \0 newline \n", NULS, null],
          [3n, 'short body', SHORT, new Date(0)],
        ],
      ],
    ],
    [
      'placeholders at the top level, and a list',
      'SELECT ? AS a, ? AS b, ? AS c FROM t WHERE id IN (?) AND flag = ?',
      [EVERY_BYTE, 2n ** 63n - 1n, 'café', [1, 'x', EVERY_BYTE], true],
    ],
    ['a string holding a mark’s text', INSERT, [[[1, '\u00000\u0000', EVERY_BYTE, null]]]],
    ['a character beyond Latin-1', INSERT, [[[1, 'snow ☃ and 𝄞', EVERY_BYTE, null]]]],
    ['a NUL in the statement itself', "SELECT '\0', ?, ?", [EVERY_BYTE, NULS]],
    ['a ? inside a quoted string and a comment', "SELECT '?', /* ? */ ?", [EVERY_BYTE]],
    ['no values', 'SELECT 1', []],
  ];
  for (const [what, sql, values] of cases) {
    it(`is mysql2’s text: ${what}`, () => {
      expect(formatQuery(sql, values, 'Z')).to.equal(mysql2Text(sql, values));
    });
  }

  it('writes each long body once, as hex', () => {
    const text = formatQuery('SELECT ?, ?', [EVERY_BYTE, NULS], 'Z');
    expect(text).to.equal(`SELECT X'${EVERY_BYTE.toString('hex')}', X'${NULS.toString('hex')}'`);
  });
});

describe('rows written through the pool’s text (real MariaDB)', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  let pool: MysqlPool;
  let plain: mysqlPromise.Connection;

  before(async () => {
    databases = await createTestDatabases(1);
    pool = createMysqlPool(parseMysqlUrl(databases.urls[0]!), {
      connectionLimit: 1,
      connectTimeoutMs: 2000,
    });
    plain = await mysqlPromise.createConnection({
      uri: databases.urls[0]!,
      supportBigNumbers: true,
      bigNumberStrings: true,
      charset: 'utf8mb4_bin',
    });
    await pool.query(
      'CREATE TABLE `t` (`id` BIGINT PRIMARY KEY, `name` VARCHAR(64), `body` MEDIUMBLOB) ' +
        'CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
    );
  });
  after(async () => {
    await pool?.end();
    await plain?.end();
    await databases?.drop();
  });

  it('reads back every byte and character as written', async () => {
    const rows: Array<[bigint, string, Buffer]> = [
      [2n ** 53n + 1n, 'café', EVERY_BYTE],
      [2n, "quote ' nul \0", NULS],
      [3n, 'snow ☃ and 𝄞', EVERY_BYTE],
      [4n, 'short', SHORT],
    ];
    await pool.query('INSERT INTO `t` (`id`, `name`, `body`) VALUES ?', [rows]);
    const [read] = await plain.query<mysqlPromise.RowDataPacket[]>(
      'SELECT `id`, `name`, `body` FROM `t` ORDER BY `id`',
    );
    const expected = [...rows].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    expect(read.map((row) => [row.id, row.name, row.body])).to.deep.equal(
      expected.map(([id, name, body]) => [String(id), name, body]),
    );
  });
});
