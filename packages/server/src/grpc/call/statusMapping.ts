// Engine errors to gRPC statuses, in one place. Messages of engine errors are written for
// clients; anything else is logged here and answered with a generic INTERNAL, so no SQL text,
// stack trace or credential ever reaches a client. What each code means to a caller is the
// table at the top of proto/shameless/v1/store.proto; this is where the server keeps it:
// - INVALID_ARGUMENT: InvalidArgumentError (field checks, caps, cell size, malformed messages:
//   requestDecoding.ts), before any SQL.
// - RESOURCE_EXHAUSTED: ResourceExhaustedError (a write queue, a GetCells answer over the
//   largest message: latestCells.ts) or a StatusError of a layer
//   (admission.ts, with the grpc-retry-pushback-ms trailer).
// - UNAVAILABLE: UnavailableError, made only from connection-level driver errors and lock
//   contention (sqlErrors.ts); a statement error that is not one (packet too large) is INTERNAL.
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { EngineError, InvalidArgumentError } from '../../engine/base/errors.js';
import type { Logger } from '../../engine/base/logger.js';
import { StatusError } from './statusError.js';

/**
 * The most bytes of a status message. It travels in the trailers (grpc-message), which
 * clients cap at a few KiB (gRPC C-core's default is 8 KiB; grpc-js fails on about 64) and
 * which percent-encoding makes up to three times longer: a message echoing a long field of
 * the request (a 100 KB model name) would never reach the client, which would wait for its
 * deadline instead of its status.
 */
const MAX_DETAILS_BYTES = 2048;

const STATUS_OF_KIND: Record<EngineError['kind'], status> = {
  invalid_argument: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  failed_precondition: status.FAILED_PRECONDITION,
  conflict: status.ABORTED,
  already_exists: status.ALREADY_EXISTS,
  resource_exhausted: status.RESOURCE_EXHAUSTED,
  unavailable: status.UNAVAILABLE,
  deadline_exceeded: status.DEADLINE_EXCEEDED,
  cancelled: status.CANCELLED,
  internal: status.INTERNAL,
};

/** The status a call answered with this error ends with, for layers that count or log outcomes. */
export function statusOfError(error: unknown): status {
  if (error instanceof StatusError) return error.code;
  if (error instanceof EngineError) return statusOf(error);
  return status.INTERNAL;
}

/** The status of an engine error: of a call, or of one write of a batch (WriteError.code). */
export function statusOf(error: EngineError): status {
  return STATUS_OF_KIND[error.kind];
}

export function toServiceError(
  error: unknown,
  method: string,
  logger: Logger,
): Partial<ServiceError> {
  if (error instanceof StatusError) {
    return {
      code: error.code,
      details: error.details,
      ...(error.trailer ? { metadata: error.trailer } : {}),
    };
  }
  if (error instanceof EngineError && error.kind !== 'internal') {
    const metadata = new Metadata();
    if (error instanceof InvalidArgumentError) metadata.set('shameless-field', error.field);
    if (error.kind === 'unavailable') {
      logger.warn('partition unavailable', {
        method,
        message: error.message,
        cause: String(error.cause),
      });
    }
    return { code: statusOf(error), details: withinStatusBytes(error.message), metadata };
  }
  logger.error('internal error', {
    method,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    cause: error instanceof Error && error.cause ? String(error.cause) : undefined,
  });
  return { code: status.INTERNAL, details: 'internal error; the server log has the details' };
}

/** The message, cut at a character to MAX_DETAILS_BYTES, saying how much was left out. */
function withinStatusBytes(message: string): string {
  const bytes = Buffer.byteLength(message);
  if (bytes <= MAX_DETAILS_BYTES) return message;
  // Room for the note on what was cut.
  const room = MAX_DETAILS_BYTES - 64;
  let kept = '';
  let keptBytes = 0;
  for (const char of message) {
    const size = Buffer.byteLength(char);
    if (keptBytes + size > room) break;
    kept += char;
    keptBytes += size;
  }
  return `${kept}… (${bytes - keptBytes} more bytes)`;
}
