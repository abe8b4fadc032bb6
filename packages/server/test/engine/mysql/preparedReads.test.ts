// Point reads whose text repeats run as prepared statements (preparedReads.ts): sent as text the
// first time, prepared the second, run by their handle after. Checked on a real MariaDB by its
// own counters of the connection's commands: what is prepared and closed, that the rows are the
// ones the text answers (exact integers, times, bytes), that a statement the server will not
// prepare still answers, that the server still stops a prepared read at its deadline, and that
// one on a hung connection (the testkit's TCP proxy) ends at the statement timeout.
import { expect } from 'chai';
import { type TestDatabases, createTestDatabases, startTcpProxy } from '@shameless/testkit';
import { type CallScope, UNBOUNDED, deadlineScope } from '../../../src/engine/base/callScope.js';
import { DeadlineExceededError, UnavailableError } from '../../../src/engine/base/errors.js';
import type { Row } from '../../../src/engine/mysql/mysqlPool.js';
import type { Partition } from '../../../src/engine/mysql/partitions.js';
import { oneConnectionPartition } from '../../support/oneConnectionPartition.js';
import {
  MAX_PREPARED_TEXT_LENGTH,
  addCounts,
  bindsExactly,
  repeatableLimitMs,
} from '../../../src/engine/mysql/preparedReads.js';
import { readCell } from '../../../src/engine/mysql/sql/contentReads.js';
import { createContentTableSql } from '../../../src/engine/mysql/sql/contentDdl.js';
import {
  type Statement,
  preparableStatement,
  statement,
} from '../../../src/engine/mysql/sql/statement.js';

describe('prepared reads (pure)', () => {
  it('rounds a time limit up to two significant digits, never down', () => {
    expect(repeatableLimitMs(1234.2)).to.equal(1300);
    expect(repeatableLimitMs(29_987)).to.equal(30_000);
    expect(repeatableLimitMs(30_000)).to.equal(30_000);
    expect(repeatableLimitMs(299.5)).to.equal(300);
    expect(repeatableLimitMs(7.2)).to.equal(8);
    expect(repeatableLimitMs(0.3)).to.equal(1);
    for (const ms of [11, 99.1, 101, 999, 1001, 4321, 86_400_001]) {
      const rounded = repeatableLimitMs(ms);
      expect(rounded, `${ms}`)
        .to.be.at.least(ms)
        .and.at.most(ms * 1.1);
    }
  });

  it("adds up several pools' counts (a Galera partition's nodes)", () => {
    const one = { byHandle: 5, asText: 2, prepared: 1, refused: 0 };
    const other = { byHandle: 1, asText: 7, prepared: 2, refused: 3 };
    expect(addCounts([one, other])).to.deep.equal({
      byHandle: 6,
      asText: 9,
      prepared: 3,
      refused: 3,
    });
    expect(addCounts([])).to.deep.equal({ byHandle: 0, asText: 0, prepared: 0, refused: 0 });
  });

  it('binds strings, null and exact integers; leaves other values to the text', () => {
    expect(bindsExactly(['a', null, 0, -7, Number.MAX_SAFE_INTEGER])).to.equal(true);
    for (const value of [0.5, 2 ** 53, 10n, Buffer.from('x'), new Date(0), true, ['a']]) {
      expect(bindsExactly(['a', value]), String(value)).to.equal(false);
    }
  });
});

describe('prepared reads on the real MariaDB', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  before(async () => {
    databases = await createTestDatabases(1);
  });
  after(async () => {
    await databases?.drop();
  });

  /**
   * Runs `test` on a partition of one connection, its reads stopped by the server, keeping
   * `perConnection` statements prepared; given the connection's counters before it ran.
   */
  async function onOnePartition(
    perConnection: number,
    test: (partition: Partition, before: Record<string, number>) => Promise<void>,
  ): Promise<void> {
    const partition = await oneConnectionPartition(databases.urls[0]!, {
      preparedReadsPerConnection: perConnection,
    });
    try {
      await test(partition, await commands(partition));
    } finally {
      await partition.end();
    }
  }

  const read = (partition: Partition, one: Statement, scope: CallScope = UNBOUNDED) =>
    partition.read(scope, async (reader) => ((await reader.read([one])) as Row[][])[0]!);

  /** The connection's own counters of prepared-statement commands (MariaDB's session status). */
  async function commands(partition: Partition): Promise<Record<string, number>> {
    const rows = await read(
      partition,
      statement(
        `SELECT LOWER(VARIABLE_NAME) AS \`name\`, VARIABLE_VALUE AS \`value\`
           FROM information_schema.SESSION_STATUS
          WHERE VARIABLE_NAME IN ('COM_STMT_PREPARE', 'COM_STMT_EXECUTE', 'COM_STMT_CLOSE')`,
      ),
    );
    return Object.fromEntries(rows.map((row) => [String(row.name), Number(row.value)]));
  }

  it('sends a text first, prepares it the second time, then runs it by its handle', async () => {
    await onOnePartition(4, async (partition, before) => {
      const answers: Row[][] = [];
      for (let i = 0; i < 4; i++) {
        answers.push(await read(partition, preparableStatement('SELECT ? + 1 AS `next`', [i])));
      }
      expect(answers.map((rows) => Number(rows[0]!.next))).to.deep.equal([1, 2, 3, 4]);
      const after = await commands(partition);
      expect(after.com_stmt_prepare! - before.com_stmt_prepare!).to.equal(1);
      expect(after.com_stmt_execute! - before.com_stmt_execute!).to.equal(3);
      expect(partition.poolUsage().preparedReads).to.deep.equal({
        byHandle: 3,
        asText: 1,
        prepared: 1,
        refused: 0,
      });
      // Not marked preparable, or not alone in its round trip: always text.
      await read(partition, statement('SELECT ? + 1 AS `next`', [1]));
      await read(partition, statement('SELECT ? + 1 AS `next`', [1]));
      const twoOfThem = [
        preparableStatement('SELECT ? + 1 AS `next`', [1]),
        preparableStatement('SELECT ? + 2 AS `next`', [1]),
      ];
      for (let i = 0; i < 3; i++) {
        await partition.read(UNBOUNDED, (reader) => reader.read(twoOfThem));
      }
      const textOnly = await commands(partition);
      expect(textOnly.com_stmt_execute).to.equal(after.com_stmt_execute);
      expect(textOnly.com_stmt_prepare).to.equal(after.com_stmt_prepare);
    });
  });

  it('keeps at most its bound of statements on a connection, closing those not used lately', async () => {
    await onOnePartition(2, async (partition, before) => {
      for (const text of ['SELECT ? AS `a`', 'SELECT ? AS `b`', 'SELECT ? AS `c`']) {
        for (let i = 0; i < 3; i++) await read(partition, preparableStatement(text, ['x']));
      }
      const after = await commands(partition);
      expect(after.com_stmt_prepare! - before.com_stmt_prepare!).to.equal(3);
      expect(after.com_stmt_close! - before.com_stmt_close!).to.equal(1);
      // The first was closed: it is a text seen for the first time again, then prepared again.
      await read(partition, preparableStatement('SELECT ? AS `a`', ['x']));
      await read(partition, preparableStatement('SELECT ? AS `a`', ['x']));
      const again = await commands(partition);
      expect(again.com_stmt_prepare! - after.com_stmt_prepare!).to.equal(1);
      expect(again.com_stmt_close! - after.com_stmt_close!).to.equal(1);
      // A text longer than MAX_PREPARED_TEXT_LENGTH never is.
      const long = preparableStatement(
        `SELECT ? AS \`long\` /* ${'-'.repeat(MAX_PREPARED_TEXT_LENGTH)} */`,
        ['x'],
      );
      for (let i = 0; i < 3; i++) await read(partition, long);
      expect((await commands(partition)).com_stmt_prepare).to.equal(again.com_stmt_prepare);
    });
  });

  it('answers the rows the text answers: ids past 2^53, times to the microsecond, bytes', async () => {
    await onOnePartition(4, async (partition) => {
      const table = 'cell_entity_0000';
      const body = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const cell = (refKey?: number) =>
        partition.read(UNBOUNDED, (reader) => readCell(reader, table, 'u1', 'base', refKey));
      await partition.run(UNBOUNDED, (pool) =>
        pool.query(createContentTableSql(table, 'datetime')),
      );
      await partition.run(UNBOUNDED, (pool) =>
        pool.query(
          `INSERT INTO \`${table}\` (\`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, \`body\`, \`created_at\`)
         VALUES (9007199254740993, 'u1', 'base', 0, ?, '2026-11-30 01:02:03.456789'),
                (9007199254740995, 'u1', 'base', 1, NULL, '2026-11-30 01:02:04.000001')`,
          [body],
        ),
      );
      const asText = await cell(0);
      const bound: unknown[] = [];
      for (let i = 0; i < 3; i++) bound.push(await cell(0));
      expect(asText?.id).to.equal('9007199254740993');
      expect((asText?.body as Buffer).equals(body)).to.equal(true);
      for (const row of bound) expect(row).to.deep.equal(asText);
      const latestAsText = await cell();
      const latestBound = [await cell(), await cell()];
      expect(latestAsText?.id).to.equal('9007199254740995');
      expect(latestAsText?.body).to.equal(null);
      for (const row of latestBound) expect(row).to.deep.equal(latestAsText);
      expect((await commands(partition)).com_stmt_execute).to.be.at.least(3);
    });
  });

  it('sends a statement the server will not prepare as text, without trying again', async () => {
    await onOnePartition(4, async (partition, before) => {
      // A character set introducer takes a literal, not a placeholder: MariaDB refuses to
      // prepare this, and the text (the value formatted in) is fine.
      const refused = preparableStatement('SELECT _ascii ? AS `x`', ['q']);
      for (let i = 0; i < 4; i++) expect((await read(partition, refused))[0]!.x).to.equal('q');
      const after = await commands(partition);
      expect(after.com_stmt_prepare! - before.com_stmt_prepare!).to.equal(1);
      expect(after.com_stmt_execute! - before.com_stmt_execute!).to.equal(0);
      expect(partition.poolUsage().preparedReads).to.deep.equal({
        byHandle: 0,
        asText: 4,
        prepared: 0,
        refused: 1,
      });
    });
  });

  it("has a prepared read stopped by the server at its call's deadline; the connection serves on", async () => {
    await onOnePartition(4, async (partition) => {
      const sleep = (seconds: number) =>
        preparableStatement('SELECT SLEEP(?) AS `slept`', [seconds]);
      const connectionId = async () =>
        Number((await read(partition, statement('SELECT CONNECTION_ID() AS `id`')))[0]!.id);
      // About the same deadline, so the same text: its limit rounded up to 1,100 ms each time
      // (from anything between 1,001 and 1,090 ms left).
      const soon = () => deadlineScope(Date.now() + 1090);
      await read(partition, sleep(0), soon());
      await read(partition, sleep(0), soon());
      const before = await commands(partition);
      const id = await connectionId();
      const startedAt = Date.now();
      const error = await read(partition, sleep(20), soon()).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).to.be.instanceOf(DeadlineExceededError);
      expect(Date.now() - startedAt).to.be.below(5000);
      const after = await commands(partition);
      expect(after.com_stmt_execute! - before.com_stmt_execute!).to.equal(1);
      expect(after.com_stmt_prepare).to.equal(before.com_stmt_prepare);
      expect(await connectionId()).to.equal(id);
    });
  });
  it('ends a prepared read on a hung connection at the statement timeout, and replaces the connection', async () => {
    const direct = new URL(databases.urls[0]!);
    const proxy = await startTcpProxy({
      target: { host: direct.hostname, port: Number(direct.port) },
    });
    const proxied = new URL(direct);
    proxied.host = proxy.address;
    const partition = await oneConnectionPartition(proxied.toString(), {
      preparedReadsPerConnection: 4,
      statementTimeoutMs: 500,
    });
    try {
      const one = preparableStatement('SELECT ? AS `x`', ['a']);
      const connectionId = async () =>
        Number((await read(partition, statement('SELECT CONNECTION_ID() AS `id`')))[0]!.id);
      const before = await commands(partition);
      for (let i = 0; i < 3; i++) await read(partition, one);
      expect((await commands(partition)).com_stmt_execute! - before.com_stmt_execute!).to.equal(2);
      const hung = await connectionId();

      proxy.setFaults({ blackhole: true });
      const startedAt = Date.now();
      const error = await read(partition, one).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      const waited = Date.now() - startedAt;
      expect(error).to.be.instanceOf(UnavailableError);
      // The pool's own timer: the limit (500 ms) and the server's grace to say so (250 ms).
      expect(waited).to.be.at.least(700).and.below(3000);

      proxy.setFaults({});
      proxy.resetAll();
      expect((await read(partition, one))[0]!.x).to.equal('a');
      expect(await connectionId()).to.not.equal(hung);
      expect(partition.poolUsage().open).to.equal(1);
    } finally {
      await partition.end();
      await proxy.close();
    }
  });
});
