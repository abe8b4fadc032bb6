// Messages are encoded through one reused writer. ts-proto's grpc-js definition encodes each
// into a new writer, whose buffer starts at 128 bytes and doubles (a fresh zeroed copy each
// time) until the message fits, then copies the result twice (BinaryWriter.finish, Buffer.from).
// Each of those buffers is memory outside V8's heap, which V8 counts against the headroom it
// leaves a small heap before a full collection: a client putting 16 KB bodies ran a
// mark-compact every 45 ms.
import { BinaryWriter } from '@bufbuild/protobuf/wire';

/** A generated message type: what encodeMessage needs of it. */
export interface MessageEncoder<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
}

/**
 * The most the reused writer's buffer holds on to. It doubles to fit, so a message of more than
 * half this size replaces the writer (and its buffer) afterwards.
 */
const RETAINED_BYTES = 4 << 20;

let writer = new BinaryWriter();

/** `message` as the bytes of `type`: one copy of exactly its length. */
export function encodeMessage<T>(type: MessageEncoder<T>, message: T): Buffer {
  let bytes: Uint8Array;
  try {
    // finish() copies the message out and rewinds the writer, whose buffer stays for the next.
    bytes = type.encode(message, writer).finish();
  } catch (error) {
    // A message that failed half-way must not be the start of the next one.
    writer = new BinaryWriter();
    throw error;
  }
  if (bytes.length > RETAINED_BYTES / 2) writer = new BinaryWriter();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
