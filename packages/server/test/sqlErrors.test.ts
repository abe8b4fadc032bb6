// Which MySQL failures the engine repeats, retries or maps: decided from driver error codes in
// one place (sqlErrors.ts).
import { expect } from 'chai';
import { UnavailableError } from '../src/engine/errors.js';
import {
  duplicateKeyName,
  isAlreadyAltered,
  isDeadlock,
  isLockContention,
  translateSqlError,
} from '../src/engine/sqlErrors.js';

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
});
