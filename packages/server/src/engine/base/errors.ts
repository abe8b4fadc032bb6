// The engine's errors. They say what went wrong in terms of the request, never in terms of
// SQL, so that the gRPC layer can pass their messages to clients as they are.

export abstract class EngineError extends Error {
  abstract readonly kind:
    | 'invalid_argument'
    | 'not_found'
    | 'failed_precondition'
    | 'conflict'
    | 'already_exists'
    | 'resource_exhausted'
    | 'unavailable'
    | 'deadline_exceeded'
    | 'cancelled'
    | 'internal';
}

/** A request field is missing or malformed. `field` is the request field's name. */
export class InvalidArgumentError extends EngineError {
  readonly kind = 'invalid_argument';
  constructor(
    readonly field: string,
    /** What is wrong with the field; the message is `<field>: <reason>`. */
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

export class NotFoundError extends EngineError {
  readonly kind = 'not_found';
}

/** The request is well-formed but conflicts with the store's state (e.g. a model redefinition). */
export class FailedPreconditionError extends EngineError {
  readonly kind = 'failed_precondition';
}

/** An optimistic-concurrency check failed: the caller should re-read and decide again. */
export class ConflictError extends EngineError {
  readonly kind = 'conflict';
}

/** A create would take values that a unique index holds for another record. */
export class AlreadyExistsError extends EngineError {
  readonly kind = 'already_exists';
}

/** A bounded resource is full (e.g. a partition's write queue): retry after a backoff. */
export class ResourceExhaustedError extends EngineError {
  readonly kind = 'resource_exhausted';
}

/** An answer that would take more bytes than the server sends in one message. */
export class AnswerTooLargeError extends ResourceExhaustedError {}

/** A partition could not be reached, or asked us to try again; retrying may succeed. */
export class UnavailableError extends EngineError {
  readonly kind = 'unavailable';
  constructor(
    readonly partition: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The call's deadline passed while a statement ran for it; the statement was stopped. */
export class DeadlineExceededError extends EngineError {
  readonly kind = 'deadline_exceeded';
}

/** Every call the work served has gone (cancelled); what was not sent for it never will be. */
export class CancelledError extends EngineError {
  readonly kind = 'cancelled';
}

/** Anything unexpected. The message is generic; the cause is for the server's log only. */
export class InternalError extends EngineError {
  readonly kind = 'internal';
}

/**
 * A statement found a content or index table missing (MySQL's ER_NO_SUCH_TABLE): the fence of a
 * shard move, whose cut-over renames the shard's tables away at their old place, then publishes
 * the new partition map. The engine reads the map and runs the operation again where the
 * shard now is (engine.ts); it reaches a client only as the UNAVAILABLE that says a move is in
 * progress, or, in a store that never moved a shard, as the failure it was (`cause`).
 */
export class ShardMovedError extends EngineError {
  readonly kind = 'unavailable';
  constructor(
    readonly partition: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
