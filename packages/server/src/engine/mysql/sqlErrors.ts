// Which MySQL failures mean "this partition is unavailable, try again" and which are ours to
// handle (duplicate keys). Driver error codes are read here and nowhere else.
import {
  CancelledError,
  DeadlineExceededError,
  InternalError,
  ShardMovedError,
  UnavailableError,
} from '../base/errors.js';

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
  fatal?: boolean;
  /** Set by mysqlPool.ts when the statement was stopped at its call's deadline. */
  callDeadlinePassed?: boolean;
  /** Set by mysqlPool.ts when a read was not sent since every call it served had gone. */
  callCancelled?: boolean;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_NORMAL_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
  'POOL_CLOSED',
]);
// Deadlocks and lock waits are transient by nature; the write was rolled back.
const TRANSIENT_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

function asDriverError(error: unknown): DriverError | undefined {
  return typeof error === 'object' && error !== null ? (error as DriverError) : undefined;
}

/**
 * A statement larger than the server's max_allowed_packet. The server drops the connection
 * after it, but the partition is not down: retrying would only break another connection.
 * Requests are sized against max_allowed_packet before any SQL (limits.ts), so this is a bug.
 */
function isPacketTooLarge(error: unknown): boolean {
  const driverError = asDriverError(error);
  return driverError?.code === 'ER_NET_PACKET_TOO_LARGE' || driverError?.errno === 1153;
}

/**
 * The server stopped a statement at the time limit it was sent with (MariaDB 1969
 * ER_STATEMENT_TIMEOUT, MySQL 3024 ER_QUERY_TIMEOUT); the connection is still usable.
 */
export function isServerStatementTimeout(error: unknown): boolean {
  const driverError = asDriverError(error);
  return (
    driverError?.errno === 1969 ||
    driverError?.errno === 3024 ||
    driverError?.code === 'ER_STATEMENT_TIMEOUT' ||
    driverError?.code === 'ER_QUERY_TIMEOUT'
  );
}

/**
 * A Galera node that takes no queries (not Synced, or cut off from the Primary component)
 * answers every statement with 1047 ER_UNKNOWN_COM_ERROR, "WSREP has not yet prepared node for
 * application use": its connections are of no use until it rejoins.
 */
function isGaleraNodeNotReady(error: DriverError): boolean {
  return error.errno === 1047 && /WSREP/i.test(error.message ?? '');
}

/** True when the error says the connection itself (or its server) is unusable. */
export function isConnectionError(error: unknown): boolean {
  const driverError = asDriverError(error);
  if (!driverError) return false;
  if (isPacketTooLarge(error) || isGaleraNodeNotReady(driverError)) return true;
  return (
    (driverError.code !== undefined && CONNECTION_CODES.has(driverError.code)) ||
    driverError.fatal === true ||
    /Pool is closed|connection is in closed state|Can't add new command when connection is in closed state/i.test(
      driverError.message ?? '',
    )
  );
}

// How a connection open until then fails once its server is gone (as against one that could not
// be opened: ECONNREFUSED, a name not found).
const CONNECTION_LOST_CODES = new Set(['EPIPE', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST']);

/**
 * True when a connection that was open failed because its server went away or closed it: in
 * the socket's words (EPIPE, ECONNRESET), mysql2's (PROTOCOL_CONNECTION_LOST), or with no code
 * at all ("Can't add new command when connection is in closed state"), whichever the death of
 * the server happens to produce.
 */
export function isConnectionLost(error: unknown): boolean {
  if (!isConnectionError(error)) return false;
  const code = asDriverError(error)?.code;
  return code === undefined || CONNECTION_LOST_CODES.has(code);
}

// The server refused the user, its password or its grants: waiting does not change that.
const ACCESS_CODES = new Set([
  'ER_ACCESS_DENIED_ERROR',
  'ER_ACCESS_DENIED_NO_PASSWORD_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_NOT_SUPPORTED_AUTH_MODE',
]);

/** True when MySQL refused the credentials or the user's rights to the database. */
export function isAccessDenied(error: unknown): boolean {
  const code = asDriverError(error)?.code;
  return code !== undefined && ACCESS_CODES.has(code);
}

/**
 * True when a connection failed on TLS (the server's certificate not trusted or not naming the
 * host, a server without TLS): waiting does not change that either.
 */
export function isTlsFailure(error: unknown): boolean {
  const code = asDriverError(error)?.code;
  return code !== undefined && /^(HANDSHAKE_SSL_|HANDSHAKE_NO_SSL|ERR_TLS_|ERR_SSL_)/.test(code);
}

/** The unique key a duplicate-entry error names, or undefined for any other error. */
export function duplicateKeyName(error: unknown): string | undefined {
  const driverError = asDriverError(error);
  if (driverError?.code !== 'ER_DUP_ENTRY') return undefined;
  return /for key '(?:[^'.]*\.)?([^']+)'/.exec(driverError.message ?? '')?.[1] ?? '';
}

/** True when an ALTER adds a column or key that is already there (another server added it). */
export function isAlreadyAltered(error: unknown): boolean {
  const code = asDriverError(error)?.code;
  return code === 'ER_DUP_FIELDNAME' || code === 'ER_DUP_KEYNAME';
}

/**
 * True when the error (or the error it was translated from) says that concurrent transactions
 * got in each other's way: a deadlock or a lock wait that timed out. Repeating the work may
 * succeed.
 */
export function isLockContention(error: unknown): boolean {
  const code = asDriverError(error)?.code;
  if (code !== undefined && TRANSIENT_CODES.has(code)) return true;
  const cause = error instanceof Error ? error.cause : undefined;
  return cause !== undefined && cause !== error && isLockContention(cause);
}

/** True when InnoDB chose this transaction as a deadlock victim and rolled it back. */
export function isDeadlock(error: unknown): boolean {
  return asDriverError(error)?.code === 'ER_LOCK_DEADLOCK';
}

/** A statement stopped because its call has gone or its deadline passed: no one waits for it. */
export function isCallerGone(error: unknown): boolean {
  const driverError = asDriverError(error);
  return driverError?.callDeadlinePassed === true || driverError?.callCancelled === true;
}

/** ER_NO_SUCH_TABLE: a statement named a table that is not there. */
export function isNoSuchTable(error: unknown): boolean {
  const driverError = asDriverError(error);
  return driverError?.errno === 1146 || driverError?.code === 'ER_NO_SUCH_TABLE';
}

/**
 * Maps partition-level failures to UnavailableError, and a missing table to ShardMovedError
 * (the fence of a shard move); returns anything else unchanged.
 */
export function translateSqlError(error: unknown, partition: number): unknown {
  if (isNoSuchTable(error)) {
    return new ShardMovedError(
      partition,
      `partition ${partition} lacks a table the call needs: its shard moved away, or is moving; retry`,
      { cause: error },
    );
  }
  if (asDriverError(error)?.callDeadlinePassed) {
    return new DeadlineExceededError(
      `the call's deadline passed before partition ${partition} answered; its statement was stopped or not sent`,
      { cause: error },
    );
  }
  if (asDriverError(error)?.callCancelled) {
    return new CancelledError(
      `every call a read of partition ${partition} served was cancelled; it was not sent`,
      { cause: error },
    );
  }
  if (isServerStatementTimeout(error)) {
    return new UnavailableError(
      partition,
      `partition ${partition} did not answer within the statement timeout; its statement was stopped, retry later`,
      { cause: error },
    );
  }
  if (isPacketTooLarge(error)) {
    return new InternalError(`a statement exceeded partition ${partition}'s max_allowed_packet`, {
      cause: error,
    });
  }
  if (isConnectionError(error)) {
    return new UnavailableError(partition, `partition ${partition} is unavailable; retry later`, {
      cause: error,
    });
  }
  const code = asDriverError(error)?.code;
  if (code !== undefined && TRANSIENT_CODES.has(code)) {
    return new UnavailableError(
      partition,
      `partition ${partition} is busy (lock contention); retry`,
      {
        cause: error,
      },
    );
  }
  return error;
}
