// Reads are stopped by the MySQL server itself at their call's deadline (or the statement
// timeout): MariaDB's max_statement_time, MySQL's MAX_EXECUTION_TIME. The call answers
// DEADLINE_EXCEEDED (or UNAVAILABLE for the statement timeout) and the connection that ran the
// read serves the next one: the server aborted the work, nothing had to be destroyed.
import { expect } from 'chai';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { type CallScope, UNBOUNDED, deadlineScope } from '../../../src/engine/base/callScope.js';
import { DeadlineExceededError, UnavailableError } from '../../../src/engine/base/errors.js';
import type { Row } from '../../../src/engine/mysql/mysqlPool.js';
import type { Partition } from '../../../src/engine/mysql/partitions.js';
import { oneConnectionPartition } from '../../support/oneConnectionPartition.js';
import { readTimeLimitFor } from '../../../src/engine/mysql/sql/readTimeLimit.js';
import { statement } from '../../../src/engine/mysql/sql/statement.js';

describe('read time limits (pure)', () => {
  it('tells the flavour by its version and writes the limit it understands', () => {
    const mariaDb = readTimeLimitFor('10.11.19-MariaDB-0+deb12u1');
    expect(mariaDb?.('SELECT 1', 1234.2)).to.equal(
      'SET STATEMENT max_statement_time=1.235 FOR SELECT 1',
    );
    // 0 would mean "no limit" to MariaDB: the least is a millisecond.
    expect(mariaDb?.('SELECT 1', 0)).to.equal(
      'SET STATEMENT max_statement_time=0.001 FOR SELECT 1',
    );
    const mySql = readTimeLimitFor('8.0.36');
    expect(mySql?.('SELECT `a` FROM `t`', 250)).to.equal(
      'SELECT /*+ MAX_EXECUTION_TIME(250) */ `a` FROM `t`',
    );
    expect(mySql?.('(SELECT 1)\nUNION ALL (SELECT 2)', 5)).to.equal(
      '(SELECT /*+ MAX_EXECUTION_TIME(5) */ 1)\nUNION ALL (SELECT 2)',
    );
    expect(readTimeLimitFor('5.7.8-log')).to.not.equal(undefined);
    expect(readTimeLimitFor('5.7.7')).to.equal(undefined);
    expect(readTimeLimitFor('5.6.51')).to.equal(undefined);
  });
});

describe('read time limits on the real MariaDB', function () {
  this.timeout(30_000);
  let databases: TestDatabases;
  before(async () => {
    databases = await createTestDatabases(1);
  });
  after(async () => {
    await databases?.drop();
  });

  /** A partition with one connection, whose reads the server stops itself. */
  const onePartition = (statementTimeoutMs?: number): Promise<Partition> =>
    oneConnectionPartition(databases.urls[0]!, { statementTimeoutMs });

  const connectionId = async (partition: Partition): Promise<number> => {
    const [rows] = (await partition.read(UNBOUNDED, (reader) =>
      reader.read([statement('SELECT CONNECTION_ID() AS `id`')]),
    )) as Row[][];
    return Number(rows![0]!.id);
  };

  const failure = (work: Promise<unknown>): Promise<unknown> =>
    work.then(
      (answer) => {
        throw new Error(`answered ${JSON.stringify(answer)}`);
      },
      (error: unknown) => error,
    );

  /** Reads through the partition's reader for the call of `scope`, as the engine does. */
  const read = (partition: Partition, sql: string, scope: CallScope = UNBOUNDED) =>
    partition.read(scope, (reader) => reader.read([statement(sql)]));

  /**
   * Runs `stopped` (reads the server must stop) on a one-connection partition, and answers
   * their failures, once it checked that the connection serves the next read.
   */
  async function stoppedOnSameConnection(
    statementTimeoutMs: number | undefined,
    stopped: (partition: Partition) => Promise<unknown>[],
  ): Promise<unknown[]> {
    const partition = await onePartition(statementTimeoutMs);
    try {
      const before = await connectionId(partition);
      const errors = await Promise.all(stopped(partition).map(failure));
      expect(partition.poolUsage().open).to.equal(1);
      expect(await connectionId(partition)).to.equal(before);
      return errors;
    } finally {
      await partition.end();
    }
  }

  it("stops a read at its call's deadline with DEADLINE_EXCEEDED; the connection serves on", async () => {
    const [error] = await stoppedOnSameConnection(undefined, (partition) => [
      read(partition, 'SELECT SLEEP(20) AS `slept`', deadlineScope(Date.now() + 300)),
    ]);
    expect(error).to.be.instanceOf(DeadlineExceededError);
    expect((error as Error).message).to.contain('deadline');
  });

  it('stops every read of a shared round trip; each caller gets DEADLINE_EXCEEDED', async () => {
    const deadline = Date.now() + 300;
    const errors = await stoppedOnSameConnection(undefined, (partition) => [
      read(partition, 'SELECT SLEEP(20) AS `slept`', deadlineScope(deadline)),
      read(partition, 'SELECT 1 AS `one` FROM DUAL WHERE SLEEP(20) = 0', deadlineScope(deadline)),
    ]);
    expect(errors).to.have.length(2);
    for (const error of errors) expect(error).to.be.instanceOf(DeadlineExceededError);
  });

  it('stops a read at the statement timeout with UNAVAILABLE; the connection serves on', async () => {
    const [error] = await stoppedOnSameConnection(300, (partition) => [
      read(partition, 'SELECT SLEEP(20) AS `slept`'),
    ]);
    expect(error).to.be.instanceOf(UnavailableError);
    expect((error as Error).message).to.contain('statement timeout');
  });

  it('leaves reads within their deadline alone', async () => {
    const partition = await onePartition(5000);
    try {
      const [rows] = (await partition.read(deadlineScope(Date.now() + 5000), (reader) =>
        reader.read([statement('(SELECT ? AS `n`) UNION ALL (SELECT SLEEP(0.05))', [7])]),
      )) as Row[][];
      expect(rows!.map((row) => Number(row.n))).to.deep.equal([7, 0]);
    } finally {
      await partition.end();
    }
  });
});
