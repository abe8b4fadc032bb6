// The method catalogue, typed off the generated service definition, and the one place that
// invokes the generated grpc-js StoreClient methods.

import {
  type CallOptions,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ClientUnaryCall,
  type Metadata,
  type ServiceError,
  status as Status,
  type StatusObject,
} from '@grpc/grpc-js';
import type { StoreClient, StoreService } from '@shameless/proto';

type Methods = typeof StoreService;

/**
 * The lowerCamel names of the Store's unary methods: `defineModel`, `put`, `getCell`,
 * `getCells`, `writeCells`, ... Callers mark each call's policy: reads (`getCell`, `getCells`)
 * retryable and hedgeable, writes (`writeCell`, `writeCells`) retryable only, since each write
 * carries a requestId.
 */
export type UnaryMethodName = {
  [K in keyof Methods]: Methods[K]['requestStream'] extends false
    ? Methods[K]['responseStream'] extends false
      ? K
      : never
    : never;
}[keyof Methods];

/** The lowerCamel names of the Store's server-streaming methods: `where`, `each`. */
export type StreamMethodName = {
  [K in keyof Methods]: Methods[K]['requestStream'] extends false
    ? Methods[K]['responseStream'] extends true
      ? K
      : never
    : never;
}[keyof Methods];

/** The lowerCamel names of the Store's bidirectional streaming methods: `consume`. */
export type BidiMethodName = {
  [K in keyof Methods]: Methods[K]['requestStream'] extends true
    ? Methods[K]['responseStream'] extends true
      ? K
      : never
    : never;
}[keyof Methods];

/** The generated request type of a method (`RequestOf<'put'>` is `PutRequest`). */
export type RequestOf<M extends keyof Methods> = Parameters<Methods[M]['requestSerialize']>[0];

/** The generated response type of a method (`ResponseOf<'put'>` is `PutResponse`). */
export type ResponseOf<M extends keyof Methods> = ReturnType<Methods[M]['responseDeserialize']>;

type UnaryInvoker<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response?: Res) => void,
) => ClientUnaryCall;

type StreamInvoker<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
) => ClientReadableStream<Res>;

/** A started unary call: its outcome and a way to cancel it. */
export interface UnaryCallHandle<Res> {
  readonly result: Promise<Res>;
  cancel(): void;
}

/**
 * Starts one unary call of `method` on `client`. The promise rejects with the raw grpc-js
 * error (the caller maps it); `cancel()` cancels the call (the promise then rejects with
 * CANCELLED).
 */
export function startUnaryCall<M extends UnaryMethodName>(
  client: StoreClient,
  method: M,
  request: RequestOf<M>,
  metadata: Metadata,
  options: Partial<CallOptions>,
  onTrailers?: (trailers: Readonly<Record<string, string>>) => void,
): UnaryCallHandle<ResponseOf<M>> {
  // The overloads of the generated methods do not survive indexing by a generic name.
  const invoke = client[method] as unknown as UnaryInvoker<RequestOf<M>, ResponseOf<M>>;
  let call: ClientUnaryCall | undefined;
  const result = new Promise<ResponseOf<M>>((resolve, reject) => {
    call = invoke.call(client, request, metadata, options, (error, response) => {
      if (error !== null) reject(error);
      else resolve(response as ResponseOf<M>);
    });
  });
  if (onTrailers) {
    // grpc-js emits the status right after the callback, before the answer's awaiters resume.
    call!.on('status', (status: StatusObject) => {
      if (status.code === Status.OK) onTrailers(textEntries(status.metadata));
    });
  }
  return {
    result,
    cancel: () => call?.cancel(),
  };
}

/** Starts one server-streaming call of `method` on `client`. */
export function startServerStream<M extends StreamMethodName>(
  client: StoreClient,
  method: M,
  request: RequestOf<M>,
  metadata: Metadata,
  options: Partial<CallOptions>,
): ClientReadableStream<ResponseOf<M>> {
  const invoke = client[method] as unknown as StreamInvoker<RequestOf<M>, ResponseOf<M>>;
  return invoke.call(client, request, metadata, options);
}

type BidiInvoker<Req, Res> = (
  metadata: Metadata,
  options: Partial<CallOptions>,
) => ClientDuplexStream<Req, Res>;

/** Starts one bidirectional streaming call of `method` on `client`. */
export function startBidiStream<M extends BidiMethodName>(
  client: StoreClient,
  method: M,
  metadata: Metadata,
  options: Partial<CallOptions>,
): ClientDuplexStream<RequestOf<M>, ResponseOf<M>> {
  const invoke = client[method] as unknown as BidiInvoker<RequestOf<M>, ResponseOf<M>>;
  return invoke.call(client, metadata, options);
}

/** Converts a deadline on a {@link Clock} scale into the wall-clock deadline grpc-js wants. */
export function grpcDeadline(remainingMs: number): number {
  if (!Number.isFinite(remainingMs)) return Number.POSITIVE_INFINITY;
  return Date.now() + Math.max(0, remainingMs);
}

/** Metadata's text entries. */
export function textEntries(metadata: Metadata): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) {
    if (typeof value === 'string') entries[key] = value;
  }
  return entries;
}
