import { expect } from 'chai';
import { Metadata, status } from '@grpc/grpc-js';
import {
  CancelledError,
  ConflictError,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  ShamelessError,
  UnauthenticatedError,
  UnavailableError,
  isMessageTooLarge,
  isTransientStatus,
  toShamelessError,
} from '../../src/transport/call/errors.js';

function serviceError(code: status, details: string, metadata = new Metadata()) {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), {
    code,
    details,
    metadata,
  });
}

describe('transport errors', () => {
  const cases: [status, new (...args: never[]) => ShamelessError, boolean][] = [
    [status.NOT_FOUND, NotFoundError, false],
    [status.ABORTED, ConflictError, false],
    [status.INVALID_ARGUMENT, InvalidArgumentError, false],
    [status.FAILED_PRECONDITION, FailedPreconditionError, false],
    [status.UNAVAILABLE, UnavailableError, true],
    [status.DEADLINE_EXCEEDED, DeadlineExceededError, false],
    [status.CANCELLED, CancelledError, false],
    [status.RESOURCE_EXHAUSTED, ResourceExhaustedError, true],
    [status.PERMISSION_DENIED, PermissionDeniedError, false],
    [status.UNAUTHENTICATED, UnauthenticatedError, false],
    [status.INTERNAL, InternalError, false],
    [status.UNKNOWN, InternalError, false],
    [status.UNIMPLEMENTED, InternalError, false],
    [status.DATA_LOSS, InternalError, false],
  ];

  for (const [code, ErrorClass, retryable] of cases) {
    it(`maps ${status[code]} to ${ErrorClass.name} (retryable: ${retryable})`, () => {
      const raw = serviceError(code, 'what happened');
      const err = toShamelessError(raw);
      expect(err).to.be.instanceOf(ErrorClass);
      expect(err).to.be.instanceOf(ShamelessError);
      expect(err).to.be.instanceOf(Error);
      expect(err.code).to.equal(code);
      expect(err.codeName).to.equal(status[code]);
      expect(err.retryable).to.equal(retryable);
      expect(err.details).to.equal('what happened');
      expect(err.message).to.equal('what happened');
      expect(err.cause).to.equal(raw);
      expect(err.metadata).to.equal(raw.metadata);
      expect(err.name).to.equal(ErrorClass.name);
      expect(isTransientStatus(code)).to.equal(retryable);
    });
  }

  it('ABORTED from this server is a conflict, never retried', () => {
    const err = toShamelessError(serviceError(status.ABORTED, 'expected ref_key 3, latest is 4'));
    expect(err).to.be.instanceOf(ConflictError);
    expect(err.retryable).to.equal(false);
  });

  it('RESOURCE_EXHAUSTED for a message over a size limit is not retried: it would be the same', () => {
    // What grpc-js answers when an answer is over the client's limit, when a message is over
    // the server's, and when a request is over the client's own send limit.
    for (const details of [
      'Received message larger than max (70000 vs 65536)',
      'Sent message larger than max (70000 vs. 65536)',
      'Attempted to send message with a size larger than 65536',
    ]) {
      const err = toShamelessError(serviceError(status.RESOURCE_EXHAUSTED, details));
      expect(err, details).to.be.instanceOf(ResourceExhaustedError);
      expect(err.retryable, details).to.equal(false);
      expect(isMessageTooLarge(err.code, err.details), details).to.equal(true);
    }
    const overloaded = toShamelessError(serviceError(status.RESOURCE_EXHAUSTED, 'server busy'));
    expect(overloaded.retryable).to.equal(true);
    expect(isMessageTooLarge(overloaded.code, overloaded.details)).to.equal(false);
  });

  it('returns a ShamelessError unchanged', () => {
    const err = new NotFoundError('no such cell');
    expect(toShamelessError(err)).to.equal(err);
  });

  it('maps an AbortError to CancelledError', () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    const err = toShamelessError(abort);
    expect(err).to.be.instanceOf(CancelledError);
    expect(err.cause).to.equal(abort);
  });

  it('maps any other value to InternalError with code UNKNOWN', () => {
    const plain = new TypeError('boom');
    const err = toShamelessError(plain);
    expect(err).to.be.instanceOf(InternalError);
    expect(err.code).to.equal(status.UNKNOWN);
    expect(err.message).to.equal('boom');
    expect(err.retryable).to.equal(false);
    expect(toShamelessError('text').message).to.equal('text');
  });

  it('names the status when the server sent no details', () => {
    const err = toShamelessError(serviceError(status.UNAVAILABLE, ''));
    expect(err.message).to.equal('UNAVAILABLE');
  });

  it('lets a constructor override retryable', () => {
    expect(new UnavailableError('x', { retryable: false }).retryable).to.equal(false);
    expect(new UnavailableError('x').retryable).to.equal(true);
  });
});
