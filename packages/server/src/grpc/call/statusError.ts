// An error a middleware layer (not the engine) answers a call with, carrying its gRPC status.
import type { Metadata, status } from '@grpc/grpc-js';

export class StatusError extends Error {
  constructor(
    readonly code: status,
    /** Written for the client: it is sent as the status's details. */
    readonly details: string,
    /** Trailers sent with the status (e.g. grpc-retry-pushback-ms). */
    readonly trailer?: Metadata,
  ) {
    super(details);
    this.name = 'StatusError';
  }
}
