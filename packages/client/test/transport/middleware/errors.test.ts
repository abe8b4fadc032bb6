import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import {
  CancelledError,
  DeadlineExceededError,
  PermissionDeniedError,
  UnauthenticatedError,
  UnavailableError,
} from '../../../src/transport/call/errors.js';
import { CallCancellation } from '../../../src/transport/call/cancellation.js';
import { errorLayer } from '../../../src/transport/middleware/errors.js';
import { READ, failing, failure, run, scriptedNext, describeForms } from './support.js';

const serviceError = (code: number, details: string) =>
  Object.assign(new Error(`${code} ${details}`), { code, details });

describeForms('error layer', () => {
  it('maps a gRPC status to its typed error; credentials failures are not retryable', async () => {
    const cases = [
      [status.UNAVAILABLE, UnavailableError, true],
      [status.UNAUTHENTICATED, UnauthenticatedError, false],
      [status.PERMISSION_DENIED, PermissionDeniedError, false],
    ] as const;
    for (const [code, ErrorClass, retryable] of cases) {
      const error = await failure(
        run(
          errorLayer,
          scriptedNext(() => failing(serviceError(code, 'no'))),
        ),
      );
      expect(error).to.be.instanceOf(ErrorClass);
      expect((error as UnavailableError).retryable).to.equal(retryable);
    }
  });

  it('a CANCELLED this client did not cause is a lost connection', async () => {
    const next = scriptedNext(() => failing(serviceError(status.CANCELLED, 'reset')));
    expect(await failure(run(errorLayer, next))).to.be.instanceOf(UnavailableError);
  });

  it('a CancelledError the SDK raised below it (the transport is closed) stays one', async () => {
    const closed = new CancelledError('getCell: the transport is closed');
    const error = await failure(
      run(
        errorLayer,
        scriptedNext(() => failing(closed)),
      ),
    );
    expect(error).to.equal(closed);
    expect((error as CancelledError).retryable).to.equal(false);
  });

  it("an attempt this client cancelled fails with its cancellation's reason", async () => {
    const cancellation = new CallCancellation();
    cancellation.abort(new DeadlineExceededError('getCell: deadline of 5 ms exceeded'));
    const next = scriptedNext(() => failing(serviceError(status.CANCELLED, 'Cancelled on client')));
    const error = await failure(run(errorLayer, next, { ...READ, cancellation }));
    expect(error).to.be.instanceOf(DeadlineExceededError);
    expect(error).to.not.be.instanceOf(CancelledError);
  });
});
