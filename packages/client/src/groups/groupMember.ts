// A consumer group member across its streams: it joins on a Consume stream (memberStream.ts)
// and, when that stream fails in a way joining again may mend (the server went away, the
// connection broke or fell silent, the session ended), joins again under the same member id,
// on the next endpoint, after a full-jitter backoff. It keeps what outlives a stream: the
// member id, the durable cursor of each shard the server confirmed, and each shard's latest
// work, whose handlers may still run when the shard comes back. `close` leaves the group
// gracefully; a failure joining again cannot mend (NOT_FOUND, INVALID_ARGUMENT,
// PERMISSION_DENIED, the store closed, ...) stops it for good.

import type { Cell as WireCell } from '@shameless/proto';
import {
  exponentialBackoff,
  sleep,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type ShamelessError,
  type Transport,
} from '../transport/index.js';
import type { MemberEvent } from './memberEvents.js';
import type { MemberSettings } from './memberSettings.js';
import { MemberStream } from './memberStream.js';
import type { Delivery, ShardWork } from './shardWork.js';

/** What a member needs besides its settings. */
export interface GroupMemberParts {
  readonly transport: Pick<Transport, 'bidiStream'>;
  readonly settings: MemberSettings;
  readonly handle: (cell: WireCell, delivery: Delivery) => unknown;
  /** Told each event; what it throws is ignored. */
  readonly onEvent?: (event: MemberEvent) => void;
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
}

/**
 * Whether a Consume stream that ended with `error` is worth joining again: a transient failure
 * (UNAVAILABLE: the server went away, the connection broke or fell silent; RESOURCE_EXHAUSTED),
 * ABORTED (the session ended without this stream: it was silent past its timeout, or the
 * member joined on another stream), DEADLINE_EXCEEDED, INTERNAL and UNKNOWN (a connection
 * reset midway may end so). Anything else says the member itself is wrong (NOT_FOUND,
 * INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED, FAILED_PRECONDITION, UNIMPLEMENTED)
 * or that the store was closed (CANCELLED): joining again would fail the same way.
 */
export function rejoinable(error: ShamelessError): boolean {
  if (error.retryable) return true;
  return ['ABORTED', 'DEADLINE_EXCEEDED', 'INTERNAL', 'UNKNOWN'].includes(error.codeName);
}

export class GroupMember {
  readonly #parts: GroupMemberParts;
  readonly #clock: Clock;
  readonly #backoff: BackoffPolicy;
  /** Each shard's latest work, from any stream. */
  readonly #works = new Map<number, ShardWork>();
  readonly #committed = new Map<number, bigint>();
  /** Aborted by `close`: a backoff under way stops. */
  readonly #closing = new AbortController();
  #stream: MemberStream | undefined;
  /** Settles when the member has stopped for good (rejects with what stopped it). */
  readonly closed: Promise<void>;
  /** Settles (never rejects) when the member has stopped for good. */
  readonly #stopped: Promise<void>;

  constructor(parts: GroupMemberParts) {
    this.#parts = parts;
    this.#clock = parts.clock ?? systemClock;
    this.#backoff = exponentialBackoff(parts.settings.reconnect);
    this.closed = this.#run();
    // Marked handled: a member stopped by an error says so with a 'stopped' event too, and
    // must not take the process down because nobody awaited `closed`.
    this.#stopped = this.closed.catch(() => {});
    const { signal } = parts;
    if (signal?.aborted) void this.close();
    else signal?.addEventListener('abort', () => void this.close(), { once: true });
  }

  get memberId(): string {
    return this.#parts.settings.join.memberId;
  }

  /** The shards this member owns now, in order. */
  get shards(): number[] {
    return this.#stream?.shards ?? [];
  }

  /** Per shard, the cursor the server confirmed durable: no cell at or below it comes again. */
  get committed(): ReadonlyMap<number, bigint> {
    return new Map([...this.#committed].sort(([a], [b]) => a - b));
  }

  /**
   * Leaves the group: starts no more cells, lets the started ones finish and answers them,
   * then sends LeaveGroup; resolves once GroupLeft came or the stream ended, and no handler
   * runs. Never rejects: the `left` event says whether the server confirmed the hand-over.
   */
  close(): Promise<void> {
    if (!this.#closing.signal.aborted) {
      this.#closing.abort();
      void this.#stream?.leave();
    }
    return this.#stopped;
  }

  async #run(): Promise<void> {
    let failures = 0;
    let failure: ShamelessError | undefined;
    // How a close ended: GroupLeft (the server committed and handed over), or the stream's
    // error (the server saw a crash: what was handled and not yet acknowledged may come again).
    let leave: { handedOver: boolean; error?: ShamelessError } = { handedOver: false };
    try {
      while (!this.#closing.signal.aborted) {
        const stream = new MemberStream({
          transport: this.#parts.transport,
          clock: this.#clock,
          join: this.#parts.settings.join,
          perShardInFlight: this.#parts.settings.perShardInFlight,
          handle: this.#parts.handle,
          previousWork: (shard) => this.#works.get(shard),
          started: (work) => this.#works.set(work.shard, work),
          committed: (shard, cursor, assigned) => this.#confirm(shard, cursor, assigned),
          emit: (event) => this.#emit(event),
        });
        this.#stream = stream;
        // A close that came while the stream was being made: it leaves at once after joining.
        if (this.#closing.signal.aborted) void stream.leave();
        const end = await stream.run();
        if (end.left) {
          leave = { handedOver: true };
          break;
        }
        if (this.#closing.signal.aborted) {
          leave = { handedOver: false, error: end.error };
          break;
        }
        if (!rejoinable(end.error)) {
          failure = end.error;
          break;
        }
        failures = end.joined ? 0 : failures + 1;
        const delayMs = this.#backoff.delay(failures);
        this.#emit({ type: 'reconnecting', error: end.error, attempt: failures + 1, delayMs });
        try {
          await sleep(this.#clock, delayMs, this.#closing.signal);
        } catch {
          break; // closed while waiting
        }
      }
    } finally {
      this.#stream = undefined;
      // Handlers of shards lost on the way may still run: the member is over once they are.
      await Promise.all([...this.#works.values()].map((work) => work.idle()));
    }
    if (failure !== undefined) {
      this.#emit({ type: 'stopped', error: failure });
      throw failure;
    }
    this.#emit({ type: 'left', ...leave });
    this.#emit({ type: 'stopped' });
  }

  #confirm(shard: number, cursor: bigint, assigned: boolean): void {
    const known = this.#committed.get(shard);
    // An assignment states the cursor as stored (a reset may have moved it back); a commit
    // only ever moves it on.
    if (assigned || known === undefined || cursor > known) this.#committed.set(shard, cursor);
  }

  #emit(event: MemberEvent): void {
    try {
      this.#parts.onEvent?.(event);
    } catch {
      // The user's hook failing must not stop the member.
    }
  }
}
