// Typed errors of the transport. Every failure that leaves the transport is a ShamelessError;
// the gRPC status -> class mapping and the "is it worth retrying" decision live here and
// nowhere else.

import { status as Status, type Metadata } from '@grpc/grpc-js';

/** Options shared by every {@link ShamelessError} constructor. */
export interface ShamelessErrorOptions {
  /** The server's status details (the text the server sent); defaults to the message. */
  details?: string;
  /** The underlying error (a grpc-js `ServiceError`, an abort reason, ...). */
  cause?: unknown;
  /** Trailing metadata the server sent with the status, when there was any. */
  metadata?: Metadata;
  /** Overrides the class default of {@link ShamelessError.retryable}. */
  retryable?: boolean;
}

/**
 * The base of every error the Shameless client raises for a failed call.
 *
 * `code` is the gRPC status number (`status.NOT_FOUND` = 5, ...), `codeName` its name, and
 * `retryable` tells whether sending the same request again may succeed (a transient failure).
 * The transport has already retried retryable failures as far as its policy and budget allow
 * by the time an error reaches the caller.
 */
export class ShamelessError extends Error {
  override name = 'ShamelessError';
  /** The gRPC status code. */
  readonly code: number;
  /** The gRPC status name, e.g. `"NOT_FOUND"`. */
  readonly codeName: string;
  /** True when the failure is transient: the same request may succeed if sent again. */
  readonly retryable: boolean;
  /** The status details sent by the server (or produced by grpc-js / the transport). */
  readonly details: string;
  /** Trailing metadata sent with the status, if any. */
  readonly metadata: Metadata | undefined;

  constructor(code: number, message: string, options: ShamelessErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.codeName = statusName(code);
    this.details = options.details ?? message;
    this.metadata = options.metadata;
    this.retryable = options.retryable ?? isTransientStatus(code);
  }
}

/** NOT_FOUND: the model, index, cell or version does not exist. */
export class NotFoundError extends ShamelessError {
  override name = 'NotFoundError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.NOT_FOUND, message, options);
  }
}

/**
 * ABORTED: an optimistic-concurrency check (`expectedRefKey`) failed. Re-read the cell and
 * decide again; sending the same write again would fail the same way, so it is not retryable.
 */
export class ConflictError extends ShamelessError {
  override name = 'ConflictError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.ABORTED, message, options);
  }
}

/** INVALID_ARGUMENT: a request field is missing or malformed; the message names it. */
export class InvalidArgumentError extends ShamelessError {
  override name = 'InvalidArgumentError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.INVALID_ARGUMENT, message, options);
  }
}

/**
 * ALREADY_EXISTS: a create whose values of a unique index (a secondary index the Ruby gem
 * created) belong to another record; the message names the index and the values. Nothing was
 * written, and sending the same put again fails the same way.
 */
export class AlreadyExistsError extends ShamelessError {
  override name = 'AlreadyExistsError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.ALREADY_EXISTS, message, options);
  }
}

/** FAILED_PRECONDITION: e.g. a model redefinition that conflicts with the stored one. */
export class FailedPreconditionError extends ShamelessError {
  override name = 'FailedPreconditionError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.FAILED_PRECONDITION, message, options);
  }
}

/** UNAVAILABLE: no server could be reached, or a server could not reach a partition. */
export class UnavailableError extends ShamelessError {
  override name = 'UnavailableError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.UNAVAILABLE, message, options);
  }
}

/** DEADLINE_EXCEEDED: the call's deadline (covering every attempt) passed. */
export class DeadlineExceededError extends ShamelessError {
  override name = 'DeadlineExceededError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.DEADLINE_EXCEEDED, message, options);
  }
}

/** CANCELLED: the caller aborted the call (AbortSignal), or the transport was closed. */
export class CancelledError extends ShamelessError {
  override name = 'CancelledError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.CANCELLED, message, options);
  }
}

/** RESOURCE_EXHAUSTED: the server is overloaded or a limit was hit; transient. */
export class ResourceExhaustedError extends ShamelessError {
  override name = 'ResourceExhaustedError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.RESOURCE_EXHAUSTED, message, options);
  }
}

/** PERMISSION_DENIED: the caller is known but not allowed to do this. */
export class PermissionDeniedError extends ShamelessError {
  override name = 'PermissionDeniedError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.PERMISSION_DENIED, message, options);
  }
}

/** UNAUTHENTICATED: missing or invalid credentials (e.g. the `authorization` metadata). */
export class UnauthenticatedError extends ShamelessError {
  override name = 'UnauthenticatedError';
  constructor(message: string, options?: ShamelessErrorOptions) {
    super(Status.UNAUTHENTICATED, message, options);
  }
}

/**
 * Every other status (INTERNAL, UNKNOWN, UNIMPLEMENTED, DATA_LOSS, ...) and errors that did not
 * come from gRPC at all. `code` keeps the original status (UNKNOWN for non-gRPC errors).
 */
export class InternalError extends ShamelessError {
  override name = 'InternalError';
  constructor(message: string, options?: ShamelessErrorOptions, code: number = Status.INTERNAL) {
    super(code, message, options);
  }
}

/**
 * Whether a status is transient: the same request may succeed when sent again.
 *
 * - UNAVAILABLE, RESOURCE_EXHAUSTED: yes (but see {@link isMessageTooLarge}: a message over a
 *   size limit is RESOURCE_EXHAUSTED too, and {@link errorForStatus} marks it not retryable).
 * - ABORTED: no. gRPC calls ABORTED retryable in general, but this server only answers ABORTED
 *   for a failed optimistic-concurrency check, which fails again unless the caller re-reads.
 * - DEADLINE_EXCEEDED: no. There are no per-attempt timeouts: an attempt's deadline is the
 *   call's overall deadline, so when it passes no time is left for another attempt.
 * - Everything else: no.
 */
export function isTransientStatus(code: number): boolean {
  return code === Status.UNAVAILABLE || code === Status.RESOURCE_EXHAUSTED;
}

/**
 * Whether an error says a message was over a size limit (grpc-js answers RESOURCE_EXHAUSTED,
 * "Received message larger than max ...", on whichever side the limit is). Sending the same
 * request again gets the same answer, so it is not transient; a batch that gets it can still be
 * sent in smaller parts.
 */
export function isMessageTooLarge(code: number, details: string): boolean {
  return code === Status.RESOURCE_EXHAUSTED && /message .*larger than/i.test(details);
}

/** The name of a gRPC status code (`14` -> `"UNAVAILABLE"`). */
export function statusName(code: number): string {
  return Status[code] ?? `STATUS_${code}`;
}

type ErrorClass = new (message: string, options?: ShamelessErrorOptions) => ShamelessError;

const CLASS_BY_STATUS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [Status.NOT_FOUND, NotFoundError],
  [Status.ABORTED, ConflictError],
  [Status.INVALID_ARGUMENT, InvalidArgumentError],
  [Status.FAILED_PRECONDITION, FailedPreconditionError],
  [Status.UNAVAILABLE, UnavailableError],
  [Status.DEADLINE_EXCEEDED, DeadlineExceededError],
  [Status.CANCELLED, CancelledError],
  [Status.RESOURCE_EXHAUSTED, ResourceExhaustedError],
  [Status.ALREADY_EXISTS, AlreadyExistsError],
  [Status.PERMISSION_DENIED, PermissionDeniedError],
  [Status.UNAUTHENTICATED, UnauthenticatedError],
]);

/** Builds the typed error for a gRPC status. */
export function errorForStatus(
  code: number,
  details: string,
  options: Omit<ShamelessErrorOptions, 'details'> = {},
): ShamelessError {
  const message = details === '' ? statusName(code) : details;
  const settings = {
    retryable: isMessageTooLarge(code, details) ? false : undefined,
    ...options,
    details,
  };
  const ErrorCtor = CLASS_BY_STATUS.get(code);
  if (ErrorCtor !== undefined) return new ErrorCtor(message, settings);
  return new InternalError(message, settings, code);
}

interface ServiceErrorLike {
  code: number;
  details?: unknown;
  message?: unknown;
  metadata?: unknown;
}

function isServiceErrorLike(err: unknown): err is ServiceErrorLike {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && Number.isInteger(code) && code > 0 && code <= 16;
}

function isAbortError(err: unknown): boolean {
  return (
    typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError'
  );
}

/**
 * Converts anything thrown by grpc-js (a `ServiceError`), an abort, or any other value into a
 * {@link ShamelessError}. A ShamelessError is returned unchanged.
 */
export function toShamelessError(err: unknown): ShamelessError {
  if (err instanceof ShamelessError) return err;
  if (isServiceErrorLike(err)) {
    const details =
      typeof err.details === 'string'
        ? err.details
        : typeof err.message === 'string'
          ? err.message
          : '';
    const metadata = isMetadata(err.metadata) ? err.metadata : undefined;
    return errorForStatus(err.code, details, { cause: err, metadata });
  }
  if (isAbortError(err)) {
    return new CancelledError('the call was aborted', { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new InternalError(message, { cause: err }, Status.UNKNOWN);
}

/**
 * Whatever an attempt threw, as a {@link ShamelessError}. A CANCELLED that grpc-js reported
 * (a status from the wire) and the client did not cause is a lost connection: grpc-js reports a
 * stream the server reset (as a server does to calls still running when its shutdown grace
 * period ends) as CANCELLED. The request may or may not have run, exactly as when a connection
 * drops, so it becomes an UnavailableError: retried when the call is safe to repeat. An error
 * the SDK raised itself is kept as it is: a CancelledError because the transport is closed is
 * final, and retrying it would only spend the budget and the backoff on the same refusal.
 */
export function asConnectionLoss(raw: unknown): ShamelessError {
  const error = toShamelessError(raw);
  const fromTheWire = isServiceErrorLike(raw) && !(raw instanceof ShamelessError);
  if (!fromTheWire || !(error instanceof CancelledError)) return error;
  return new UnavailableError(`the server cancelled the call: ${error.message}`, {
    cause: error,
    details: error.details,
    metadata: error.metadata,
  });
}

function isMetadata(value: unknown): value is Metadata {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getMap?: unknown }).getMap === 'function'
  );
}
