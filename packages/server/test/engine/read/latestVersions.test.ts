// The latest version of cells, read straight from content tables on the real MariaDB: a
// table's one or two cells by a dive each, more by one keyed query. Both must answer the
// highest ref_key of each cell asked for, whatever its number of versions, and nothing for a
// cell without one.
import { expect } from 'chai';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import {
  type MysqlPool,
  type Row,
  createMysqlPool,
  parseMysqlUrl,
} from '../../../src/engine/mysql/mysqlPool.js';
import { createContentTableSql } from '../../../src/engine/mysql/sql/contentDdl.js';
import { type LatestKey, readLatestCells } from '../../../src/engine/mysql/sql/contentReads.js';
import { directReader } from '../../../src/engine/mysql/sql/statement.js';

const OURS = 'latest_ours';
/**
 * A content table as the gem's Sequel makes it, no request_id, in a character set of its own
 * (the database's default where the gem ran, often latin1 on older servers).
 */
const GEMS = 'latest_gems';

/** Versions 0..count-1 of each cell, bodies naming their version. */
const VERSIONS: ReadonlyArray<{ uuid: string; cell: string; count: number }> = [
  { uuid: 'a', cell: 'base', count: 1 },
  { uuid: 'a', cell: 'meta', count: 30 },
  { uuid: 'b', cell: 'base', count: 12 },
  { uuid: 'c', cell: 'base', count: 3 },
  // Differs from 'base' only by case: our tables compare bytes.
  { uuid: 'c', cell: 'Base', count: 5 },
];

const bodyOf = (uuid: string, cell: string, refKey: number) =>
  Buffer.from(`${uuid}/${cell}@${refKey}`);

describe('latest versions of cells (content reads)', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  let pool: MysqlPool;

  before(async () => {
    databases = await createTestDatabases(1);
    pool = createMysqlPool(parseMysqlUrl(databases.urls[0]!), {
      connectionLimit: 1,
      connectTimeoutMs: 2000,
    });
    await pool.query(createContentTableSql(OURS, 'datetime'));
    await pool.query(`CREATE TABLE \`${GEMS}\` (
      \`id\` INT AUTO_INCREMENT PRIMARY KEY, \`uuid\` varchar(36) NULL,
      \`column_name\` varchar(255) NOT NULL, \`ref_key\` int NOT NULL, \`body\` mediumblob,
      \`created_at\` datetime NOT NULL,
      UNIQUE KEY \`${GEMS}_uuid_column_name_ref_key_index\` (\`uuid\`, \`column_name\`, \`ref_key\`))
      DEFAULT CHARSET=latin1`);
    for (const table of [OURS, GEMS]) {
      // latin1's default collation does not tell 'Base' from 'base'.
      const versions = table === GEMS ? VERSIONS.filter(({ cell }) => cell !== 'Base') : VERSIONS;
      // Inserted newest first, so that no answer can come from the order of ids.
      const rows = versions.flatMap(({ uuid, cell, count }) =>
        Array.from({ length: count }, (_, refKey) => [
          uuid,
          cell,
          count - 1 - refKey,
          bodyOf(uuid, cell, count - 1 - refKey),
          new Date(Date.UTC(2026, 0, 1, 0, 0, count - 1 - refKey)),
        ]),
      );
      await pool.query(
        `INSERT INTO \`${table}\` (\`uuid\`, \`column_name\`, \`ref_key\`, \`body\`, \`created_at\`) VALUES ?`,
        [rows],
      );
    }
  });
  after(async () => {
    await pool?.end();
    await databases?.drop();
  });

  const latest = async (table: string, keys: readonly LatestKey[], maxBodyBytes?: number) => {
    const [rows = []] = await readLatestCells(directReader(pool), [{ table, keys, maxBodyBytes }]);
    return rows;
  };
  const summary = (rows: readonly Row[]) =>
    rows
      .map((row) => ({
        cell: `${String(row.uuid)}/${String(row.column_name)}`,
        refKey: Number(row.ref_key),
        body: row.body instanceof Buffer ? row.body.toString() : row.body,
      }))
      .sort((x, y) => (x.cell < y.cell ? -1 : x.cell > y.cell ? 1 : 0));

  it('reads a lone cell and each of several cells at its highest ref_key, with its body', async () => {
    expect(
      summary(await latest(OURS, [{ uuid: 'a', cell: 'meta', withBody: true }])),
    ).to.deep.equal([{ cell: 'a/meta', refKey: 29, body: 'a/meta@29' }]);
    const keys = VERSIONS.map(({ uuid, cell }) => ({ uuid, cell, withBody: true }));
    const rows = await latest(OURS, keys);
    expect(summary(rows)).to.deep.equal(
      VERSIONS.map(({ uuid, cell, count }) => ({
        cell: `${uuid}/${cell}`,
        refKey: count - 1,
        body: bodyOf(uuid, cell, count - 1).toString(),
      })).sort((x, y) => (x.cell < y.cell ? -1 : x.cell > y.cell ? 1 : 0)),
    );
    const meta = rows.find((row) => row.column_name === 'meta')!;
    expect(meta.created_at).to.deep.equal(new Date(Date.UTC(2026, 0, 1, 0, 0, 29)));
    expect(Number(meta.body_bytes)).to.equal('a/meta@29'.length);
  });

  it('answers a cell asked for twice once, with its body if either asked for it', async () => {
    const rows = await latest(OURS, [
      { uuid: 'a', cell: 'meta', withBody: false },
      { uuid: 'b', cell: 'base', withBody: true },
      { uuid: 'a', cell: 'meta', withBody: true },
      { uuid: 'b', cell: 'base', withBody: true },
    ]);
    expect(summary(rows)).to.deep.equal([
      { cell: 'a/meta', refKey: 29, body: 'a/meta@29' },
      { cell: 'b/base', refKey: 11, body: 'b/base@11' },
    ]);
  });

  it('answers no row for a cell or a record without versions', async () => {
    const rows = await latest(OURS, [
      { uuid: 'a', cell: 'missing', withBody: true },
      { uuid: 'nobody', cell: 'base', withBody: true },
      { uuid: 'b', cell: 'base', withBody: true },
    ]);
    expect(summary(rows)).to.deep.equal([{ cell: 'b/base', refKey: 11, body: 'b/base@11' }]);
  });

  it('reads only ref_keys for cells whose body is not wanted, beside cells whose body is', async () => {
    const rows = await latest(OURS, [
      { uuid: 'a', cell: 'meta', withBody: false },
      { uuid: 'b', cell: 'base', withBody: false },
      { uuid: 'c', cell: 'base', withBody: true },
    ]);
    expect(summary(rows)).to.deep.equal([
      { cell: 'a/meta', refKey: 29, body: null },
      { cell: 'b/base', refKey: 11, body: null },
      { cell: 'c/base', refKey: 2, body: 'c/base@2' },
    ]);
  });

  it('leaves out bodies over the bound and says how long they are', async () => {
    const rows = await latest(
      OURS,
      [
        { uuid: 'a', cell: 'meta', withBody: true },
        { uuid: 'a', cell: 'base', withBody: true },
        { uuid: 'b', cell: 'base', withBody: true },
      ],
      'a/base@0'.length,
    );
    expect(summary(rows)).to.deep.equal([
      { cell: 'a/base', refKey: 0, body: 'a/base@0' },
      { cell: 'a/meta', refKey: 29, body: null },
      { cell: 'b/base', refKey: 11, body: null },
    ]);
    expect(Number(rows.find((row) => row.column_name === 'meta')!.body_bytes)).to.equal(9);
  });

  it('tells which records exist, by a base cell from version 0 or, as the gem first made them, 1', async () => {
    for (const table of [OURS, GEMS]) {
      await pool.query(
        `INSERT INTO \`${table}\` (\`uuid\`, \`column_name\`, \`ref_key\`, \`body\`, \`created_at\`)
          VALUES ('from-one', 'base', 1, 'x', NOW()), ('from-one', 'base', 2, 'y', NOW())`,
      );
      const existing = async (records: string[]) => {
        const [rows = []] = await readLatestCells(directReader(pool), [
          { table, keys: [], records },
        ]);
        expect(rows.every((row) => row.what === 'exists')).to.equal(true);
        return [...new Set(rows.map((row) => String(row.uuid)))].sort();
      };
      // One record is a dive of its own; several are one set query.
      expect(await existing(['from-one'])).to.deep.equal(['from-one']);
      expect(await existing(['a'])).to.deep.equal(['a']);
      expect(await existing(['nobody'])).to.deep.equal([]);
      expect(await existing(['a', 'from-one', 'nobody', 'b'])).to.deep.equal([
        'a',
        'b',
        'from-one',
      ]);
      expect(await existing(['nobody', 'nobody either'])).to.deep.equal([]);
    }
  });

  it('reads a table made as the gem makes it, in latin1', async () => {
    const keys = ['a', 'b', 'c'].map((uuid) => ({ uuid, cell: 'base', withBody: true }));
    expect(summary(await latest(GEMS, keys))).to.deep.equal([
      { cell: 'a/base', refKey: 0, body: 'a/base@0' },
      { cell: 'b/base', refKey: 11, body: 'b/base@11' },
      { cell: 'c/base', refKey: 2, body: 'c/base@2' },
    ]);
  });
});
