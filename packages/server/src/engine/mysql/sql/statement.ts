// A statement with its values, as the SQL modules build it. Whoever composes a round trip runs
// several together: one transaction's statements on content and index tables travel as one
// multi-statement query, and each SQL module still owns the text for its kind of table.
import type { QueryOptions, SqlSession, SqlValue } from '../mysqlPool.js';
import type { ReadTimeLimit } from './readTimeLimit.js';

export interface Statement {
  readonly sql: string;
  readonly values: readonly SqlValue[];
  /**
   * A read that may run as a prepared statement when sent alone and its text repeats
   * (preparedReads.ts): its SQL module vouches that the text binds its values as it formats
   * them (no `LIMIT ?`, no character set introducer before a `?`).
   */
  readonly preparable?: boolean;
}

export function statement(sql: string, values: readonly SqlValue[] = []): Statement {
  return { sql, values };
}

/** A {@link statement} that may run prepared (see Statement.preparable). */
export function preparableStatement(sql: string, values: readonly SqlValue[]): Statement {
  return { sql, values, preparable: true };
}

export const START_TRANSACTION = statement('START TRANSACTION');
export const COMMIT = statement('COMMIT');
export const ROLLBACK = statement('ROLLBACK');
/** Where a transaction can go back to and still hold the locks it took before. */
export const SAVEPOINT = statement('SAVEPOINT `locked`');
export const ROLLBACK_TO_SAVEPOINT = statement('ROLLBACK TO SAVEPOINT `locked`');

/**
 * One statement answering the rows of every SELECT given, in order (UNION ALL): one parse and
 * one result set for what would otherwise be many. The SELECTs must answer the same columns.
 */
export function unionAll(selects: readonly Statement[]): Statement {
  if (selects.length === 1) return selects[0]!;
  const sql = selects.map(({ sql }) => `(${sql})`).join('\nUNION ALL ');
  return selects.every(({ preparable }) => preparable === true)
    ? preparableStatement(sql, valuesOf(selects))
    : statement(sql, valuesOf(selects));
}

/**
 * The values of the statements, in order, for the one query that runs them. A loop, not
 * flatMap, which V8 runs about ten times slower (sixteen SELECTs of three values: 6 µs against
 * 1.5; a large write's 6,000 values: 550 µs against 40), and every round trip passes here.
 */
function valuesOf(statements: readonly Statement[]): SqlValue[] {
  const values: SqlValue[] = [];
  for (const { values: own } of statements) for (const value of own) values.push(value);
  return values;
}

/**
 * Runs read statements and answers one result per statement, as runTogether does. The reads
 * take this rather than a session, so that a partition can carry many callers' reads in one
 * round trip (readCoalescer.ts).
 */
export interface StatementReader {
  read(statements: readonly Statement[]): Promise<unknown[]>;
}

/** Reads on a session without coalescing: one round trip per caller. */
export function directReader(session: SqlSession): StatementReader {
  return { read: (statements) => runTogether(session, statements) };
}

const PREPARABLE: QueryOptions = { preparable: true };

/**
 * Runs the statements in one round trip and answers one result per statement, in order: the
 * rows of a SELECT, the header (insertId, affectedRows) of anything else. mysql2 answers a
 * single statement's result as it is and several as a list; this evens that out. With a
 * `readTimeLimit` (reads only: every statement a SELECT), the server stops each statement
 * itself once the call's deadline (or the statement timeout) is reached.
 */
export async function runTogether(
  session: SqlSession,
  statements: readonly Statement[],
  readTimeLimit?: ReadTimeLimit,
): Promise<unknown[]> {
  if (statements.length === 0) return [];
  const text = (limitMs: number | undefined) =>
    statements
      .map(({ sql }) =>
        readTimeLimit === undefined || limitMs === undefined ? sql : readTimeLimit(sql, limitMs),
      )
      .join(';\n');
  const results = await session.query<unknown[]>(
    readTimeLimit === undefined ? text(undefined) : text,
    valuesOf(statements),
    statements.length === 1 && statements[0]!.preparable === true ? PREPARABLE : undefined,
  );
  return statements.length === 1 ? [results] : results;
}
