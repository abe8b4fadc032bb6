// The narrow slice of a MySQL driver the engine depends on (as kysely's dialects do), and its
// mysql2 implementation. Everything else in the engine sees only these interfaces.
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { type CallScope, UNBOUNDED, isAbandoned } from '../base/callScope.js';
import { DeadlineWatch } from '../base/deadlineWatch.js';
import { type GtidPosition, parsePosition } from '../base/gtidPosition.js';
import { type MysqlTls, TLS_PARAMETERS, sslOptionsOf, tlsOfParameters } from './mysqlTls.js';
import { formatQuery } from './queryText.js';
import {
  type PreparedReadCounts,
  type PreparedStatement,
  PreparedReads,
  bindsExactly,
  isForgottenStatement,
  repeatableLimitMs,
} from './preparedReads.js';
import { isServerStatementTimeout } from './sqlErrors.js';

/**
 * A value bound to a `?`. An array expands to a list (`IN (?)` with ['a', 'b'] is
 * `IN ('a', 'b')`), and an array of arrays to a list of tuples (`('a', 1), ('b', 2)`), as
 * multi-row VALUES and row-constructor IN lists need.
 */
export type SqlValue =
  string | number | bigint | boolean | Date | Buffer | null | readonly SqlValue[];

/** Rows of a SELECT, or the header of a write, as mysql2 returns them. */
export interface WriteResult {
  /** A string for an id past 2^53 (`supportBigNumbers`). */
  insertId: number | string;
  affectedRows: number;
}
export type Row = Record<string, unknown>;

/**
 * SQL that the server itself stops after a time: given the milliseconds the statement may run
 * (undefined: unbounded), its text. The time is decided when the statement is sent, after any
 * wait for a connection.
 */
export type ServerBoundedSql = (serverTimeLimitMs: number | undefined) => string;

export interface SqlSession {
  /** Runs one statement, or several separated by `;` (their results come as an array). */
  query<T = Row[]>(
    sql: string | ServerBoundedSql,
    values?: readonly SqlValue[],
    options?: QueryOptions,
  ): Promise<T>;
}

export interface QueryOptions {
  /**
   * The text is one statement that may run prepared (Statement.preparable): on a session that
   * only reads, once its connection has sent the same text before (preparedReads.ts).
   */
  readonly preparable?: boolean;
}

export interface SqlConnection extends SqlSession {
  /** Returns the connection to its pool. */
  release(): void;
  /** Closes the connection for good (after an error that may have left it mid-transaction). */
  destroy(): void;
}

/** A pool's statements on behalf of one call (callScope.ts): each ends by the call's deadline. */
export interface ScopedPool extends SqlSession {
  /**
   * A session for statements that only read: a read whose calls have all gone (isAbandoned) is
   * not sent. Writes never go this way: every statement of a write is sent, so that it commits
   * all or nothing.
   */
  readonly reads: SqlSession;
  /** A connection whose statements serve the call too. */
  getConnection(): Promise<SqlConnection>;
}

/**
 * A pool of connections to one server. Its own statements serve no call (setting up, probes,
 * tests: bounded by the statement timeout alone); `for` gives a call's.
 */
export interface MysqlPool extends ScopedPool {
  /** The pool's statements on behalf of the call of `scope`. */
  for(scope: CallScope): ScopedPool;
  /** How busy the pool is now, for metrics. */
  usage(): PoolUsage;
  end(): Promise<void>;
}

export interface PoolUsage {
  /** The most connections the pool opens. */
  readonly limit: number;
  /** Connections open now, busy or idle. */
  readonly open: number;
  /** Connections running a query or held by a transaction. */
  readonly inUse: number;
  /** Requests waiting for a connection (all are in use). */
  readonly waiting: number;
  /** What its preparable reads did since it opened; absent when none may run prepared. */
  readonly preparedReads?: PreparedReadCounts;
}

/** The queues mysql2's pool keeps (not in its typings): read only, for usage(). */
interface PoolQueues {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
}

function usageOf(pool: mysql.Pool, limit: number): PoolUsage {
  const queues = pool as unknown as PoolQueues;
  const open = queues._allConnections?.length ?? 0;
  return {
    limit,
    open,
    inUse: open - (queues._freeConnections?.length ?? 0),
    waiting: queues._connectionQueue?.length ?? 0,
  };
}

export interface MysqlLocation {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** A Unix socket to connect through instead of host:port (a server on the same machine). */
  socketPath?: string;
  /** TLS to the server (`ssl-mode`, `ssl-ca`, ... in the URL); plaintext when absent. */
  tls?: MysqlTls;
}

const URL_PARAMETERS: readonly string[] = ['socket', ...TLS_PARAMETERS];

const DATABASE_NAME = /^[A-Za-z0-9_]{1,64}$/;

/**
 * Parses `mysql://user:password@host:port/database`, optionally with `?socket=/path` to reach
 * a server on the same machine through its Unix socket (no TCP stack: cheaper per query), and
 * with `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key` for TLS (mysqlTls.ts).
 */
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
  const unknown = [...parsed.searchParams.keys()].filter((key) => !URL_PARAMETERS.includes(key));
  if (unknown.length > 0) {
    throw new Error(
      `unknown parameter ${unknown.join(', ')} in ${redactUrl(url)}; known: ${URL_PARAMETERS.join(', ')}`,
    );
  }
  let tls: MysqlTls | undefined;
  try {
    tls = tlsOfParameters(parsed.searchParams);
  } catch (error) {
    throw new Error(`${(error as Error).message}, in ${redactUrl(url)}`);
  }
  const socketPath = parsed.searchParams.get('socket');
  return {
    host: parsed.hostname || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username) || 'root',
    password: decodeURIComponent(parsed.password),
    database,
    ...(socketPath ? { socketPath } : {}),
    ...(tls ? { tls } : {}),
  };
}

/**
 * How mysql2 reaches the location's server: address, credentials and TLS (its files read now;
 * an Error names the parameter and the file it could not use).
 */
export function serverConnection(location: MysqlLocation): mysql.ConnectionOptions {
  return {
    host: location.host,
    port: location.port,
    user: location.user,
    password: location.password,
    ...(location.socketPath ? { socketPath: location.socketPath } : {}),
    ...(location.tls ? { ssl: sslOptionsOf(location.tls) } : {}),
  };
}

/**
 * The URL without its password, for messages and logs, even when it is not a valid URL: a
 * password holding an unescaped `/`, `@` or `?` runs to the last `@`, so everything from the
 * first `:` of the user info to there is hidden.
 */
export function redactUrl(url: string): string {
  const schemeEnd = url.indexOf('//');
  const userInfoStart = schemeEnd < 0 ? 0 : schemeEnd + 2;
  const userInfoEnd = url.lastIndexOf('@');
  if (userInfoEnd < userInfoStart) return url;
  const colon = url.indexOf(':', userInfoStart);
  if (colon < 0 || colon > userInfoEnd) return url;
  return `${url.slice(0, colon)}:***${url.slice(userInfoEnd)}`;
}

/**
 * The URL without its user info (user and password), for answers to clients: where the
 * database is, not who the server is there. As redactUrl, everything to the last `@` goes.
 */
export function urlWithoutUser(url: string): string {
  const schemeEnd = url.indexOf('//');
  const userInfoStart = schemeEnd < 0 ? 0 : schemeEnd + 2;
  const userInfoEnd = url.lastIndexOf('@');
  if (userInfoEnd < userInfoStart) return url;
  return `${url.slice(0, userInfoStart)}${url.slice(userInfoEnd + 1)}`;
}

export interface PoolOptions {
  connectionLimit: number;
  connectTimeoutMs: number;
  /**
   * The longest a statement may wait for its answer: after it (or after the deadline of the
   * call it serves, if sooner) the connection is destroyed (it may be hung) and the pool opens
   * a new one. Unbounded when left out.
   */
  statementTimeoutMs?: number;
  /**
   * Told the GTID of every commit made through the pool, with the scope of the call that made
   * it (for read-your-writes on replicas). Every connection then asks MariaDB to answer each
   * commit's GTID (session_track_system_variables=last_gtid); a connection that cannot is
   * closed before it runs anything, so no commit goes untold.
   */
  onCommit?: (scope: CallScope, position: GtidPosition) => void;
  /**
   * Statements every new connection runs before anything its first borrower sends (a Galera
   * node's causal reads); one that fails closes the connection.
   */
  sessionStatements?: readonly string[];
  /**
   * Statements each connection keeps prepared for reads whose text repeats (preparedReads.ts);
   * 0 or left out: every read goes as text.
   */
  preparedReadsPerConnection?: number;
}

const TRACK_COMMITS = "SET SESSION session_track_system_variables = 'last_gtid'";

export function createMysqlPool(location: MysqlLocation, options: PoolOptions): MysqlPool {
  // The callback API, wrapped here: mysql2's promise wrapper builds an Error for every query
  // to keep the caller's stack, a measurable share of a small query's cost.
  const pool = mysql.createPool({
    ...serverConnection(location),
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
    // The same text as mysql2's own formatting, a large write's built several times faster.
    queryFormat: formatQuery,
    // mysql2's own cache of prepared statements never closes one before preparedReads does.
    maxPreparedStatements: (options.preparedReadsPerConnection ?? 0) + 1,
  });
  const prepared =
    (options.preparedReadsPerConnection ?? 0) > 0
      ? new PreparedReads(options.preparedReadsPerConnection!)
      : undefined;
  const timeout = options.statementTimeoutMs;
  const onCommit = options.onCommit;
  const setUp = [...(onCommit ? [TRACK_COMMITS] : []), ...(options.sessionStatements ?? [])];
  if (setUp.length > 0) {
    // Queued on a new connection before anything its first borrower sends.
    pool.on('connection', (connection) => {
      for (const sql of setUp) {
        connection.query(sql, (error) => {
          if (error) connection.destroy();
        });
      }
    });
  }
  // Connections handed out and not yet released or destroyed. mysql2's pool.end() queues a
  // QUIT behind each one's statement, and a connection destroyed after that (its statement
  // timed out) never sends it, nor leaves a closed pool: end() would wait forever. So end()
  // first waits for these to come back, then ends a pool of idle connections.
  const checkedOut = new Set<mysql.PoolConnection>();
  let allReturned: (() => void) | undefined;
  let ending: Promise<void> | undefined;
  const returned = (connection: mysql.PoolConnection) => {
    checkedOut.delete(connection);
    if (checkedOut.size === 0) allReturned?.();
  };
  const getConnection = async (scope: CallScope, read = false): Promise<SqlConnection> => {
    if (ending) throw Object.assign(new Error('Pool is closed.'), { code: 'POOL_CLOSED' });
    const connection = await new Promise<mysql.PoolConnection>((resolve, reject) =>
      pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))),
    );
    checkedOut.add(connection);
    let destroyed = false;
    // Idempotent: a failed transaction's clean-up may destroy the connection, and then the
    // partition that lent it too.
    const destroy = () => {
      if (destroyed) return;
      destroyed = true;
      connection.destroy();
      returned(connection);
    };
    return {
      query: (sql, values, queryOptions) =>
        runQuery(
          connection,
          scope,
          sql,
          values,
          timeout,
          destroy,
          read,
          read ? undefined : onCommit,
          read && queryOptions?.preparable ? prepared : undefined,
        ),
      release: () => {
        if (destroyed) return;
        connection.release();
        returned(connection);
      },
      destroy,
    };
  };
  // As mysql2's pool.query, but a connection whose statement timed out is destroyed, not
  // returned to the pool: it may be hung, or answer the abandoned statement later.
  const query = async <T>(
    scope: CallScope,
    sql: string | ServerBoundedSql,
    values: readonly SqlValue[] | undefined,
    read: boolean,
    queryOptions?: QueryOptions,
  ): Promise<T> => {
    const connection = await getConnection(scope, read);
    try {
      return await connection.query<T>(sql, values, queryOptions);
    } finally {
      connection.release();
    }
  };
  const scoped = (scope: CallScope): ScopedPool => ({
    query: (sql, values) => query(scope, sql, values, false),
    reads: { query: (sql, values, queryOptions) => query(scope, sql, values, true, queryOptions) },
    getConnection: () => getConnection(scope),
  });
  return {
    ...scoped(UNBOUNDED),
    for: scoped,
    usage: () => {
      const usage = usageOf(pool, options.connectionLimit);
      return prepared ? { ...usage, preparedReads: prepared.counts() } : usage;
    },
    end: () =>
      (ending ??= (async () => {
        // Every statement out ends: by its answer, or by its deadline or the statement timeout.
        if (checkedOut.size > 0) await new Promise<void>((resolve) => (allReturned = resolve));
        await new Promise<void>((resolve, reject) =>
          pool.end((error) => (error ? reject(error) : resolve())),
        );
      })()),
  };
}

/**
 * How much longer than a server-side limit the client waits before it destroys the connection:
 * time for the server to notice the limit and say so. Without it the client's timer, started
 * first, would always win, and every stopped read would cost a connection.
 */
const SERVER_STOP_GRACE_MS = 250;

/** The longest delay setTimeout takes (about 25 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Why a statement for the call of `scope` is not sent, when it is not: its deadline passed
 * (sent now, a write could commit for a caller already told it failed, and the client's timer
 * would cost the connection), or, for a read, every call it serves has gone (no one would read
 * its answer). Undefined when it may be sent.
 */
export function unsendable(scope: CallScope, read: boolean): Error | undefined {
  if (Date.now() >= scope.deadline) {
    return Object.assign(new Error("the call's deadline passed before the statement was sent"), {
      code: 'CALL_DEADLINE_PASSED',
      callDeadlinePassed: true,
    });
  }
  if (read && isAbandoned(scope)) {
    return Object.assign(new Error('every call the read served had gone before it was sent'), {
      code: 'CALL_CANCELLED',
      callCancelled: true,
    });
  }
  return undefined;
}

function runQuery<T>(
  connection: mysql.PoolConnection,
  scope: CallScope,
  sql: string | ServerBoundedSql,
  values: readonly SqlValue[] | undefined,
  statementTimeoutMs: number | undefined,
  destroy: () => void,
  read: boolean,
  onCommit: PoolOptions['onCommit'],
  prepared: PreparedReads | undefined,
): Promise<T> {
  const notSent = unsendable(scope, read);
  if (notSent) return Promise.reject(notSent);
  const deadline = scope.deadline;
  const untilDeadline = Math.max(1, deadline - Date.now());
  const limit = Math.min(statementTimeoutMs ?? Infinity, untilDeadline);
  const byDeadline = untilDeadline <= (statementTimeoutMs ?? Infinity);
  const preparable = prepared !== undefined && bindsExactly(values ?? []);
  // A prepared read's text carries a limit rounded so that it repeats (preparedReads.ts).
  const serverLimit = preparable && Number.isFinite(limit) ? repeatableLimitMs(limit) : limit;
  // mysql2 times a statement with setTimeout, which fires at once for a delay past 2^31 - 1 ms
  // (about 25 days): a limit that far away is no limit for the timer.
  const bounded = serverLimit + SERVER_STOP_GRACE_MS <= MAX_TIMER_MS;
  let text: string;
  let timeoutMs: number | undefined;
  if (typeof sql === 'string') {
    text = sql;
    timeoutMs = bounded ? limit : undefined;
  } else {
    text = sql(bounded ? serverLimit : undefined);
    timeoutMs = bounded ? serverLimit + SERVER_STOP_GRACE_MS : undefined;
  }
  return new Promise<T>((resolve, reject) => {
    const answer: Answer = (error, rows) => {
      if (!error) {
        if (onCommit) {
          const committed = committedPosition(rows);
          if (committed) onCommit(scope, committed);
        }
        return resolve(rows as T);
      }
      // The server stopped the statement itself: the connection is fine.
      if (isServerStatementTimeout(error)) {
        return reject(byDeadline ? Object.assign(error, { callDeadlinePassed: true }) : error);
      }
      if (error.code !== 'PROTOCOL_SEQUENCE_TIMEOUT') return reject(error);
      // mysql2 gives up on the statement but keeps the connection, which may be hung.
      destroy();
      // The timer ran on the event loop's clock, which lags Date.now() by what the loop's turn
      // had spent when it was armed: a timer set by the deadline may fire a little before it.
      reject(
        byDeadline || Date.now() >= deadline
          ? Object.assign(error, { callDeadlinePassed: true })
          : error,
      );
    };
    if (preparable) runPreparable(connection, prepared, text, values ?? [], timeoutMs, answer);
    else runText(connection, text, values, timeoutMs, answer);
  });
}

type Answer = (error: mysql.QueryError | null, rows: unknown) => void;

function runText(
  connection: mysql.PoolConnection,
  sql: string,
  values: readonly SqlValue[] | undefined,
  timeoutMs: number | undefined,
  answer: Answer,
): void {
  connection.query(
    timeoutMs === undefined ? { sql } : { sql, timeout: timeoutMs },
    values as SqlValue[],
    answer,
  );
}

/** The limits of every pool's prepared statements, watched with one timer. */
const statementDeadlines = new DeadlineWatch();

/**
 * Runs a read by its prepared statement, prepared first on the text's second sighting, or as
 * text (preparedReads.ts): the same answers and errors as runText, under the same time limit.
 */
function runPreparable(
  connection: mysql.PoolConnection,
  prepared: PreparedReads,
  sql: string,
  values: readonly SqlValue[],
  timeoutMs: number | undefined,
  answer: Answer,
): void {
  const route = prepared.route(connection, sql);
  if (route.via === 'text') return runText(connection, sql, values, timeoutMs, answer);
  // mysql2 times a query, not a prepared statement's execution: the same limit here, whose
  // error runQuery answers as mysql2's own (the connection destroyed). Watched, not a timer of
  // its own: a lone read paid for a timer list made and dropped (deadlineWatch.ts).
  let settled = false;
  const watched =
    timeoutMs === undefined
      ? undefined
      : statementDeadlines.watch(Date.now() + timeoutMs, () =>
          settle(
            Object.assign(new Error('Query inactivity timeout'), {
              code: 'PROTOCOL_SEQUENCE_TIMEOUT',
              fatal: true,
            }) as mysql.QueryError,
            undefined,
          ),
        );
  const settle = (error: mysql.QueryError | null, rows: unknown): void => {
    if (settled) return;
    settled = true;
    if (watched) statementDeadlines.unwatch(watched);
    answer(error, rows);
  };
  const asText = (): void => {
    if (settled) return;
    settled = true;
    if (watched) statementDeadlines.unwatch(watched);
    runText(connection, sql, values, timeoutMs, answer);
  };
  const execute = (statement: PreparedStatement): void => {
    statement.execute(values, (error, rows) => {
      if (error && isForgottenStatement(error)) {
        prepared.forgotten(connection, sql);
        return asText();
      }
      settle(error, rows);
    });
  };
  if (route.via === 'handle') return execute(route.statement);
  connection.prepare(sql, (error, statement) => {
    // The connection failed: the read fails as its text would have.
    if (error?.fatal) return settle(error, undefined);
    if (error) {
      prepared.refused(connection, sql);
      return asText();
    }
    prepared.prepared(connection, sql, statement);
    if (!settled) execute(statement);
  });
}

/** What a statement's answer (a header, rows, or a list of them) says of the GTID it committed. */
interface TrackedHeader {
  stateChanges?: { systemVariables?: { last_gtid?: string } };
}

/** The GTID the answer's last commit was given (the last header that tells one), if any. */
function committedPosition(answer: unknown): GtidPosition | undefined {
  const headers = Array.isArray(answer) ? answer : [answer];
  for (let i = headers.length - 1; i >= 0; i -= 1) {
    const gtid = (headers[i] as TrackedHeader | null)?.stateChanges?.systemVariables?.last_gtid;
    if (gtid) return parsePosition(gtid);
  }
  return undefined;
}

export function createDatabaseSql(database: string): string {
  return `CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`;
}

/** A connection to the location's server, without choosing its database. */
function connectToServer(location: MysqlLocation, connectTimeoutMs: number) {
  return mysqlPromise.createConnection({
    ...serverConnection(location),
    connectTimeout: connectTimeoutMs,
  });
}

/** Creates the database named in the location when it is missing; true when it did. */
export async function ensureDatabase(
  location: MysqlLocation,
  connectTimeoutMs: number,
): Promise<boolean> {
  const connection = await connectToServer(location, connectTimeoutMs);
  try {
    // IF NOT EXISTS on an existing database affects no row (and leaves a warning).
    const [result] = await connection.query<mysqlPromise.ResultSetHeader>(
      createDatabaseSql(location.database),
    );
    return result.affectedRows > 0;
  } finally {
    await connection.end();
  }
}

/** Whether the database named in the location exists; never creates it. */
export async function databaseExists(
  location: MysqlLocation,
  connectTimeoutMs: number,
): Promise<boolean> {
  const connection = await connectToServer(location, connectTimeoutMs);
  try {
    const [rows] = await connection.query<mysqlPromise.RowDataPacket[]>(
      'SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?',
      [location.database],
    );
    return rows.length > 0;
  } finally {
    await connection.end();
  }
}
