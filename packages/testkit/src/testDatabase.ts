import { randomBytes } from 'node:crypto';
import { createConnection, type Connection } from 'mysql2/promise';
import { LOCAL_MYSQL_URL, testMysqlUrl } from './testMysql.js';

const DEFAULT_PREFIX = 'shameless_test';
const MAX_IDENTIFIER_LENGTH = 64;
// Restricting names to this alphabet means they never need more than backtick quoting and never
// depend on the server's identifier or filename encoding rules.
const SAFE_IDENTIFIER = /^[A-Za-z0-9_]+$/;

/**
 * `MYSQL_URL` if set, else the local default server, never a container: for tests about the local
 * server itself. Others create their databases with `createTestDatabases` or use `testMysqlUrl`.
 */
export function mysqlUrlFromEnv(): string {
  // || rather than ??: an empty MYSQL_URL (as in `MYSQL_URL= pnpm test`) means unset.
  return process.env.MYSQL_URL || LOCAL_MYSQL_URL;
}

export interface TestDatabaseOptions {
  /** Server to create the databases on (any database in its path is ignored); `testMysqlUrl()` by default. */
  baseUrl?: string;
  /** Start of every database name; letters, digits and `_` only. */
  prefix?: string;
}

export interface TestDatabases {
  /** One `mysql://…/<name>` URL per database, in the same order as `names`. */
  readonly urls: string[];
  readonly names: string[];
  /** Drops every database; safe to call more than once. */
  drop(): Promise<void>;
}

/**
 * Creates `count` empty databases with names unique to this process and call, so that test files
 * running in parallel (or a crashed earlier run) never share state.
 */
export async function createTestDatabases(
  count: number,
  options: TestDatabaseOptions = {},
): Promise<TestDatabases> {
  if (!Number.isInteger(count) || count < 1) {
    throw new RangeError(`count must be a positive integer, got ${count}`);
  }
  const baseUrl = options.baseUrl ?? (await testMysqlUrl());
  const names = uniqueDatabaseNames(count, options.prefix ?? DEFAULT_PREFIX);
  const serverUrl = urlForDatabase(baseUrl, undefined);

  const connection = await createConnection(serverUrl);
  try {
    for (const [index, name] of names.entries()) {
      try {
        await connection.query('CREATE DATABASE ??', [name]);
      } catch (error) {
        // Leave nothing behind when only some of the databases could be created.
        await dropDatabases(connection, names.slice(0, index));
        throw error;
      }
    }
  } finally {
    await connection.end();
  }

  return {
    names,
    urls: names.map((name) => urlForDatabase(baseUrl, name)),
    drop: async () => {
      const dropConnection = await createConnection(serverUrl);
      try {
        await dropDatabases(dropConnection, names);
      } finally {
        await dropConnection.end();
      }
    },
  };
}

function uniqueDatabaseNames(count: number, prefix: string): string[] {
  if (!SAFE_IDENTIFIER.test(prefix)) {
    throw new Error(
      `invalid database name prefix ${JSON.stringify(prefix)}: use letters, digits, _`,
    );
  }
  const runId = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const names = Array.from({ length: count }, (_, index) => `${prefix}_${runId}_${index}`);
  for (const name of names) {
    if (name.length > MAX_IDENTIFIER_LENGTH) {
      throw new Error(`database name ${name} is longer than ${MAX_IDENTIFIER_LENGTH} characters`);
    }
  }
  return names;
}

async function dropDatabases(connection: Connection, names: string[]): Promise<void> {
  for (const name of names) {
    await connection.query('DROP DATABASE IF EXISTS ??', [name]);
  }
}

function urlForDatabase(baseUrl: string, database: string | undefined): string {
  const url = new URL(baseUrl);
  url.pathname = database === undefined ? '' : `/${database}`;
  return url.toString();
}
