// A grpc-js method that carries raw bytes both ways (no protobuf): the bench's own servers, the
// echo and the gem-shaped service, whose messages the bench frames itself.
import type * as grpc from '@grpc/grpc-js';

const identity = (bytes: Buffer) => bytes;

/** The method at `path`, a stream each way when `streams`, else a unary call. */
export function rawBytesMethod(
  path: string,
  streams: boolean,
): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: streams,
    responseStream: streams,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}
