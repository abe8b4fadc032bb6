// Requests are decoded here rather than by grpc-js alone: a request that is not a valid message
// reaches the handler as a MalformedRequest (grpc-js would answer INTERNAL on its own), and the
// size on the wire of every request is remembered for the layers that count bytes in flight.
import type { ServiceDefinition } from '@grpc/grpc-js';

const MALFORMED = Symbol('malformed request');

/** What the handler gets instead of a request whose bytes did not decode. */
export interface MalformedRequest {
  readonly [MALFORMED]: string;
}

const wireBytes = new WeakMap<object, number>();

/** The service definition with each method's request decoding made tolerant and measured. */
export function withTolerantDecoding<T extends ServiceDefinition>(definition: T): T {
  const methods = Object.entries(definition).map(([name, method]) => [
    name,
    {
      ...method,
      requestDeserialize: (bytes: Buffer): unknown => {
        let request: unknown;
        try {
          request = method.requestDeserialize(bytes);
        } catch (error) {
          request = { [MALFORMED]: error instanceof Error ? error.message : String(error) };
        }
        if (typeof request === 'object' && request !== null) wireBytes.set(request, bytes.length);
        return request;
      },
    },
  ]);
  return Object.fromEntries(methods) as T;
}

/** Why the request did not decode, or undefined for a request that did. */
export function malformation(request: unknown): string | undefined {
  return typeof request === 'object' && request !== null && MALFORMED in request
    ? (request as MalformedRequest)[MALFORMED]
    : undefined;
}

/** Counts `request` as `bytes` on the wire: a call's request that came inside another message. */
export function recordWireBytes(request: object, bytes: number): void {
  wireBytes.set(request, bytes);
}

/** The request's size on the wire; 0 for a request that did not come through this decoding. */
export function requestWireBytes(request: unknown): number {
  return typeof request === 'object' && request !== null ? (wireBytes.get(request) ?? 0) : 0;
}
