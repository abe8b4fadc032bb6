// Why a call's signal aborts when the server shuts down, so that the layers that end or count
// the call can tell that from a caller's cancel. A stream that shutdown cuts short ends
// UNAVAILABLE: an OK would pass a log read or a Where page cut short for a whole one, and a
// follow stream for the end of the log; UNAVAILABLE has the client read on from the last
// cursor or page token it received, on another server.
import { type ServiceError, status } from '@grpc/grpc-js';

/** The reason the server's shutdown aborts the signals of the streams still open. */
export const SERVER_SHUTDOWN = Symbol('the server is shutting down');

/** Whether `signal` was aborted by the server's shutdown (not by the caller, nor a deadline). */
export function abortedByShutdown(signal: Pick<AbortSignal, 'aborted' | 'reason'>): boolean {
  return signal.aborted && signal.reason === SERVER_SHUTDOWN;
}

/** The status of a stream that shutdown cut short. */
export const SHUTDOWN_STATUS: Partial<ServiceError> = {
  code: status.UNAVAILABLE,
  details: 'the server is shutting down; read on from the last cursor or page token received',
};
