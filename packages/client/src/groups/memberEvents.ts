// What a member tells its user as it goes: shards assigned, revoked, released and lost, cells
// that failed or were parked, reconnections, and its end. Ids and cursors are the wire's
// bigints here; the model layer hands them out as its other ids (`ExactInteger`).

import type { ShamelessError } from '../transport/index.js';

/** An event of a member, with ids of type `Id`. */
export type MemberEventOf<Id> =
  /** The server took the member in (on each stream: after a reconnection too). */
  | {
      readonly type: 'joined';
      readonly memberId: string;
      readonly sessionTimeoutMs: number;
      readonly heartbeatIntervalMs: number;
    }
  /** The member owns the shard from now on; its cells after `cursor` follow. */
  | { readonly type: 'assigned'; readonly shard: number; readonly cursor: Id }
  /** Another member should have the shard: its started cells finish, then it is released. */
  | { readonly type: 'revoked'; readonly shard: number }
  /** The shard was handed over (ShardReleased sent). */
  | { readonly type: 'released'; readonly shard: number }
  /**
   * The shard was taken without a hand-over (the session was silent too long, the stream
   * ended, another member owns it now): its cells still running count for nothing.
   */
  | { readonly type: 'lost'; readonly shard: number; readonly reason: string }
  /** The handler threw: the cell is delivered again after a backoff, or parked. */
  | {
      readonly type: 'failed';
      readonly shard: number;
      readonly id: Id;
      readonly attempt: number;
      readonly error: unknown;
    }
  /** A cell of the member's shards was parked (by the server after its last delivery, or by `park`). */
  | {
      readonly type: 'parked';
      readonly shard: number;
      readonly id: Id;
      readonly attempts: number;
      readonly error: string;
    }
  /** The stream ended with `error`; the member joins again (same member id) after `delayMs`. */
  | {
      readonly type: 'reconnecting';
      readonly error: ShamelessError;
      /** 1 for the first attempt after a stream that had joined, counting up while none joins. */
      readonly attempt: number;
      readonly delayMs: number;
    }
  /**
   * The member left the group (`close`). `handedOver`: GroupLeft arrived, so the server
   * committed what was acknowledged and handed the shards over (nothing handled comes again).
   * Otherwise the stream ended first (`error`) or none was open: the server let the shards go
   * as a crash's, and cells handled but not yet acknowledged may come again to their next owner.
   */
  | { readonly type: 'left'; readonly handedOver: boolean; readonly error?: ShamelessError }
  /** The member stopped for good: `error` when a failure that joining again cannot mend ended it. */
  | { readonly type: 'stopped'; readonly error?: ShamelessError };

/** A member's event as the groups layer raises it: ids as bigints. */
export type MemberEvent = MemberEventOf<bigint>;
