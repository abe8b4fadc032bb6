// Which MySQL failures the engine repeats, retries or maps: decided from driver error codes in
// one place (sqlErrors.ts).
import { expect } from 'chai';
import { DeadlineExceededError, UnavailableError } from '../../../src/engine/base/errors.js';
import {
  duplicateKeyName,
  isAlreadyAltered,
  isDeadlock,
  isConnectionError,
  isConnectionLost,
  isLockContention,
  isServerStatementTimeout,
  translateSqlError,
} from '../../../src/engine/mysql/sqlErrors.js';

/** An error shaped as mysql2 reports a server error. */
const driverError = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('SQL errors (pure)', () => {
  it('tells lock contention, also once translated to UNAVAILABLE, from other failures', () => {
    const deadlock = driverError('ER_LOCK_DEADLOCK');
    const timeout = driverError('ER_LOCK_WAIT_TIMEOUT');
    expect(isDeadlock(deadlock)).to.equal(true);
    expect(isLockContention(deadlock)).to.equal(true);
    expect(isLockContention(timeout)).to.equal(true);
    const translated = translateSqlError(deadlock, 0);
    expect(translated).to.be.instanceOf(UnavailableError);
    expect(isLockContention(translated)).to.equal(true);
    expect(isLockContention(driverError('ER_DUP_ENTRY'))).to.equal(false);
    expect(isLockContention(new UnavailableError(0, 'partition 0 is unavailable'))).to.equal(false);
  });

  it('names the key of a duplicate entry, and knows an ALTER another server made first', () => {
    expect(
      duplicateKeyName(
        driverError(
          'ER_DUP_ENTRY',
          "Duplicate entry 'a-b-c' for key 't_000001.uuid_column_request_id'",
        ),
      ),
    ).to.equal('uuid_column_request_id');
    expect(duplicateKeyName(driverError('ER_NO_SUCH_TABLE'))).to.equal(undefined);
    expect(isAlreadyAltered(driverError('ER_DUP_FIELDNAME'))).to.equal(true);
    expect(isAlreadyAltered(driverError('ER_DUP_KEYNAME'))).to.equal(true);
    expect(isAlreadyAltered(driverError('ER_BAD_FIELD_ERROR'))).to.equal(false);
  });

  it('tells a connection lost under a statement from one that could not be opened', () => {
    const fatal = (code: string, message = code) =>
      Object.assign(driverError(code, message), { fatal: true });
    for (const lost of [
      fatal('EPIPE', 'This socket has been ended by the other party'),
      fatal('ECONNRESET', 'read ECONNRESET'),
      fatal('PROTOCOL_CONNECTION_LOST'),
      new Error("Can't add new command when connection is in closed state"),
    ]) {
      expect(isConnectionLost(lost), lost.message).to.equal(true);
    }
    expect(isConnectionLost(fatal('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'))).to.equal(
      false,
    );
    expect(isConnectionLost(driverError('ER_DUP_ENTRY'))).to.equal(false);
  });

  it('maps a statement the server stopped: DEADLINE_EXCEEDED at the deadline, else UNAVAILABLE', () => {
    const mariaDb = Object.assign(new Error('max_statement_time exceeded'), { errno: 1969 });
    const mySql = Object.assign(driverError('ER_QUERY_TIMEOUT'), { errno: 3024 });
    for (const stopped of [mariaDb, mySql]) {
      expect(isServerStatementTimeout(stopped)).to.equal(true);
      // The server aborted the statement, not the connection.
      expect(isConnectionError(stopped)).to.equal(false);
      expect(translateSqlError(stopped, 2)).to.be.instanceOf(UnavailableError);
      expect(
        translateSqlError(Object.assign(stopped, { callDeadlinePassed: true }), 2),
      ).to.be.instanceOf(DeadlineExceededError);
    }
    expect(isServerStatementTimeout(driverError('ER_LOCK_WAIT_TIMEOUT'))).to.equal(false);
  });
});
