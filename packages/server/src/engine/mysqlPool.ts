// The narrow slice of a MySQL driver the engine depends on (as kysely's dialects do), and its
// mysql2 implementation. Everything else in the engine sees only these interfaces.
import mysql from 'mysql2/promise';

/**
 * A value bound to a `?`. An array expands to a list (`IN (?)` with ['a', 'b'] is
 * `IN ('a', 'b')`), and an array of arrays to a list of tuples (`('a', 1), ('b', 2)`), as
 * multi-row VALUES and row-constructor IN lists need.
 */
export type SqlValue =
  string | number | bigint | boolean | Date | Buffer | null | readonly SqlValue[];

/** Rows of a SELECT, or the header of a write, as mysql2 returns them. */
export interface WriteResult {
  insertId: number;
  affectedRows: number;
}
export type Row = Record<string, unknown>;

export interface SqlSession {
  /** Runs one statement, or several separated by `;` (their results come as an array). */
  query<T = Row[]>(sql: string, values?: readonly SqlValue[]): Promise<T>;
}

export interface SqlConnection extends SqlSession {
  /** Returns the connection to its pool. */
  release(): void;
  /** Closes the connection for good (after an error that may have left it mid-transaction). */
  destroy(): void;
}

export interface MysqlPool extends SqlSession {
  getConnection(): Promise<SqlConnection>;
  end(): Promise<void>;
}

export interface MysqlLocation {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

const DATABASE_NAME = /^[A-Za-z0-9_]{1,64}$/;

/** Parses `mysql://user:password@host:port/database`. */
export function parseMysqlUrl(url: string): MysqlLocation {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(
      `not a URL: ${redactUrl(url)}; expected mysql://user:password@host:port/database`,
    );
  }
  if (parsed.protocol !== 'mysql:') {
    throw new Error(`unsupported scheme in ${redactUrl(url)}; expected mysql://`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!DATABASE_NAME.test(database)) {
    throw new Error(
      `database name missing or invalid in ${redactUrl(url)}; expected letters, digits and _ after the last /`,
    );
  }
  return {
    host: parsed.hostname || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username) || 'root',
    password: decodeURIComponent(parsed.password),
    database,
  };
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

export interface PoolOptions {
  connectionLimit: number;
  connectTimeoutMs: number;
}

export function createMysqlPool(location: MysqlLocation, options: PoolOptions): MysqlPool {
  const pool = mysql.createPool({
    host: location.host,
    port: location.port,
    user: location.user,
    password: location.password,
    database: location.database,
    connectionLimit: options.connectionLimit,
    connectTimeout: options.connectTimeoutMs,
    maxIdle: options.connectionLimit,
    enableKeepAlive: true,
    // Several statements in one round trip: a write's lock, read and insert travel together.
    multipleStatements: true,
    // DATETIME values are UTC on the way in and out.
    timezone: 'Z',
    supportBigNumbers: true,
    charset: 'utf8mb4_bin',
  });
  return {
    query: (sql, values) => pool.query(sql, values as SqlValue[]).then(([rows]) => rows as never),
    getConnection: async () => {
      const connection = await pool.getConnection();
      let destroyed = false;
      return {
        query: (sql, values) =>
          connection.query(sql, values as SqlValue[]).then(([rows]) => rows as never),
        release: () => {
          if (!destroyed) connection.release();
        },
        destroy: () => {
          destroyed = true;
          connection.destroy();
        },
      };
    },
    end: () => pool.end(),
  };
}

/** Creates the database named in the location when it is missing. */
export async function ensureDatabase(location: MysqlLocation, connectTimeoutMs: number) {
  const connection = await mysql.createConnection({
    host: location.host,
    port: location.port,
    user: location.user,
    password: location.password,
    connectTimeout: connectTimeoutMs,
  });
  try {
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS \`${location.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
    );
  } finally {
    await connection.end();
  }
}
