// What a middleware layer may know about a call besides its request: which RPC, who called, with
// what metadata, until when, and whether the caller has gone away or the server is stopping.
import type { Metadata } from '@grpc/grpc-js';
import type { CommitSink, ReadConsistency } from '../../engine/base/consistency.js';
import type { CallCancellation } from './cancellation.js';

export type CallKind = 'unary' | 'serverStream' | 'bidiStream';

export interface CallContext {
  /** The RPC's name as the proto spells it, e.g. `GetCell`. */
  readonly method: string;
  readonly kind: CallKind;
  /** Request metadata (headers). */
  readonly metadata: Metadata;
  /** The caller's address, as grpc-js reports it (`ipv4:127.0.0.1:51234`). */
  readonly peer: string;
  /** Milliseconds since the epoch by which the caller wants an answer; Infinity when none. */
  readonly deadline: number;
  /** Cancelled when the caller cancels or its deadline passes, or when the server shuts down. */
  readonly cancellation: CallCancellation;
  /**
   * Whether the call lasts as long as its client keeps it rather than for one answer's work
   * (Each: a log read to its end, or followed until cancelled). Admission counts such calls
   * apart, so that clients holding them open never leave short calls without room.
   */
  readonly longLived: boolean;
  /**
   * Bytes the call may hold besides the message in hand, however slowly its client reads: a
   * server stream's messages not yet sent and, for Each, the cells read ahead. 0 for a unary
   * call, whose one message is all it holds.
   */
  readonly bufferBytes: number;
  /**
   * Response trailers (sent with an OK status, as nice-grpc's context.trailer): layers add
   * theirs before the call's last message, the session token of a write for one.
   */
  readonly trailer: Metadata;
  /** How fresh the call's reads must be (the engine's CallScope); strong when left out. */
  readonly consistency?: ReadConsistency;
  /** Where the call's commits are gathered (the engine's CallScope), for its session token. */
  readonly commits?: CommitSink;
}
