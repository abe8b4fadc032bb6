// One Consume stream of a member, from its JoinGroup to its end: the server's messages applied
// (shards assigned, revoked, lost; cells delivered to their shard's work; cursors committed;
// cells parked), the member's answers written (acknowledgements batched, failures, parks,
// releases), a heartbeat when the member has said nothing for the heartbeat interval, and the
// stream taken for dead when the server has said nothing for the session timeout. The stream
// ends with GroupLeft after `leave`, or with an error; either way its shards are over with it
// (the member joins again on a new stream to take shards back: groupMember.ts).

import type {
  ConsumeResponse,
  JoinGroup,
  Cell as WireCell,
  Delivery as WireDelivery,
} from '@shameless/proto';
import {
  CancelledError,
  UnavailableError,
  toShamelessError,
  type Clock,
  type ShamelessError,
  type TimerHandle,
  type Transport,
} from '../transport/index.js';
import { Acknowledgements, ackBatchIds } from './acknowledgements.js';
import type { MemberEvent } from './memberEvents.js';
import { RequestQueue } from './requestQueue.js';
import { ShardWork, type Delivery } from './shardWork.js';

/** How a stream ended: with GroupLeft (after `leave`), or with an error. */
export type StreamEnd =
  | { readonly left: true }
  | {
      readonly left: false;
      readonly error: ShamelessError;
      /** Whether the server had answered GroupJoined on it. */
      readonly joined: boolean;
    };

/** What a stream needs from its member. */
export interface MemberStreamParts {
  readonly transport: Pick<Transport, 'bidiStream'>;
  readonly clock: Clock;
  readonly join: JoinGroup;
  readonly perShardInFlight: number;
  readonly handle: (cell: WireCell, delivery: Delivery) => unknown;
  /** The shard's latest work, from this stream or an earlier one (its handlers may still run). */
  readonly previousWork: (shard: number) => ShardWork | undefined;
  /** A new work of the shard: the member keeps it as the shard's latest. */
  readonly started: (work: ShardWork) => void;
  /** The server says every cell of the shard up to `cursor` is handled, durably. */
  readonly committed: (shard: number, cursor: bigint, assigned: boolean) => void;
  readonly emit: (event: MemberEvent) => void;
}

/** The server's heartbeat interval for a session timeout (as the server derives it). */
export function heartbeatIntervalFor(sessionTimeoutMs: number): number {
  return Math.min(3000, Math.max(250, Math.floor(sessionTimeoutMs / 4)));
}

export class MemberStream {
  readonly #parts: MemberStreamParts;
  readonly #requests: RequestQueue;
  readonly #acks: Acknowledgements;
  /** The shards owned on this stream (revoked ones until released). */
  readonly #works = new Map<number, ShardWork>();
  readonly #abort = new AbortController();
  #silence: ShamelessError | undefined;
  #lastHeardAt: number;
  #sessionTimeoutMs: number;
  #heartbeatIntervalMs: number;
  #timer: TimerHandle | undefined;
  #joined = false;
  #leaving = false;
  #left = false;
  #over = false;

  constructor(parts: MemberStreamParts) {
    this.#parts = parts;
    const { clock, join } = parts;
    this.#requests = new RequestQueue(clock);
    this.#acks = new Acknowledgements(
      (ack) => this.#requests.push({ $case: 'ack', ack }),
      clock,
      ackBatchIds(join.maxInFlight),
    );
    this.#lastHeardAt = clock.now();
    this.#sessionTimeoutMs = join.sessionTimeoutMs;
    this.#heartbeatIntervalMs = heartbeatIntervalFor(join.sessionTimeoutMs);
  }

  /** The shards this stream owns now, in order. */
  get shards(): number[] {
    return [...this.#works.keys()].sort((a, b) => a - b);
  }

  /** Joins, and applies the server's messages until the stream ends. */
  async run(): Promise<StreamEnd> {
    const { transport, join } = this.#parts;
    this.#requests.push({ $case: 'join', join });
    this.#watch();
    try {
      for await (const response of transport.bidiStream('consume', this.#requests, {
        deadlineMs: Number.POSITIVE_INFINITY,
        signal: this.#abort.signal,
      })) {
        this.#lastHeardAt = this.#parts.clock.now();
        this.#apply(response);
      }
      if (this.#left) return { left: true };
      return {
        left: false,
        joined: this.#joined,
        error: new UnavailableError('consume: the server ended the stream without GroupLeft'),
      };
    } catch (raw) {
      if (this.#left) return { left: true };
      return { left: false, joined: this.#joined, error: this.#silence ?? toShamelessError(raw) };
    } finally {
      this.#end();
    }
  }

  /**
   * Leaves the group: starts no more cells, lets those started finish (their answers are
   * sent), then sends LeaveGroup; the server answers GroupLeft and ends the stream.
   */
  async leave(): Promise<void> {
    if (this.#leaving) return;
    this.#leaving = true;
    if (!this.#joined) {
      // Not joined yet (the server may be down, the join waiting for a connection): nothing to
      // hand over, and nobody to answer a leave. The stream is cancelled.
      this.#abort.abort(new CancelledError('consume: the consumer was closed before it joined'));
      return;
    }
    await Promise.all([...this.#works.values()].map((work) => work.finish()));
    if (this.#over) return;
    this.#acks.flush();
    this.#requests.push({ $case: 'leave', leave: {} });
  }

  #apply(response: ConsumeResponse): void {
    const message = response.message;
    switch (message?.$case) {
      case 'joined': {
        const { memberId, sessionTimeoutMs, heartbeatIntervalMs } = message.joined;
        this.#joined = true;
        this.#sessionTimeoutMs = sessionTimeoutMs || this.#sessionTimeoutMs;
        this.#heartbeatIntervalMs = heartbeatIntervalMs || this.#heartbeatIntervalMs;
        this.#watch();
        this.#parts.emit({ type: 'joined', memberId, sessionTimeoutMs, heartbeatIntervalMs });
        return;
      }
      case 'assigned': {
        const { shard, epoch, cursor } = message.assigned;
        this.#works.get(shard)?.lose();
        const previous = this.#parts.previousWork(shard);
        const work = new ShardWork({
          shard,
          epoch,
          perShardInFlight: this.#parts.perShardInFlight,
          after: previous?.idle(),
          handle: this.#parts.handle,
          answers: this.#answers,
          onFailure: (failedShard, id, attempt, error) =>
            this.#parts.emit({ type: 'failed', shard: failedShard, id, attempt, error }),
        });
        this.#works.set(shard, work);
        this.#parts.started(work);
        this.#parts.committed(shard, cursor, true);
        this.#parts.emit({ type: 'assigned', shard, cursor });
        // Assigned while leaving: nothing of it starts; the leave hands it back.
        if (this.#leaving) void work.finish();
        return;
      }
      case 'revoked': {
        const { shard, epoch } = message.revoked;
        const work = this.#works.get(shard);
        if (work?.epoch !== epoch) return;
        this.#parts.emit({ type: 'revoked', shard });
        void this.#release(work);
        return;
      }
      case 'lost': {
        const { shard, epoch, reason } = message.lost;
        const work = this.#works.get(shard);
        if (work?.epoch !== epoch) return;
        work.lose();
        this.#works.delete(shard);
        this.#parts.emit({ type: 'lost', shard, reason });
        return;
      }
      case 'deliveries':
        for (const delivery of message.deliveries.deliveries) this.#deliver(delivery);
        return;
      case 'committed': {
        const { shard, cursor } = message.committed;
        this.#parts.committed(shard, cursor, false);
        return;
      }
      case 'parked': {
        const { shard, epoch, id, attempts, error } = message.parked;
        const work = this.#works.get(shard);
        if (work?.epoch === epoch) work.parked(id);
        this.#parts.emit({ type: 'parked', shard, id, attempts, error });
        return;
      }
      case 'left':
        this.#left = true;
        return;
      case 'heartbeat':
      case undefined:
        return;
    }
  }

  #deliver(delivery: WireDelivery): void {
    const shard = delivery.cell?.shard;
    if (shard === undefined) return;
    const work = this.#works.get(shard);
    // Cells of a shard no longer owned under that epoch: their answers would be ignored.
    if (work?.epoch === delivery.epoch) work.deliver(delivery);
  }

  /** Answers ShardRevoked: the started cells finish and are answered, then ShardReleased. */
  async #release(work: ShardWork): Promise<void> {
    await work.finish();
    if (this.#over || this.#works.get(work.shard) !== work) return;
    this.#acks.flush();
    this.#requests.push({ $case: 'released', released: { shard: work.shard, epoch: work.epoch } });
    this.#works.delete(work.shard);
    this.#parts.emit({ type: 'released', shard: work.shard });
  }

  readonly #answers = {
    acknowledge: (shard: number, epoch: bigint, id: bigint): void => {
      if (!this.#over) this.#acks.add(shard, epoch, id);
    },
    failed: (shard: number, epoch: bigint, id: bigint, error: string): void => {
      this.#requests.push({ $case: 'failed', failed: { shard, epoch, id, error } });
    },
    park: (shard: number, epoch: bigint, id: bigint, reason: string): void => {
      this.#requests.push({ $case: 'park', park: { shard, epoch, id, reason } });
    },
  };

  /**
   * Every few hundred ms (a quarter of the heartbeat interval at most): a heartbeat when the
   * member has queued nothing for the heartbeat interval, and the end of the stream when the
   * server has said nothing for the session timeout (it heartbeats as often when quiet).
   */
  #watch(): void {
    const { clock } = this.#parts;
    if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
    const period = Math.max(50, Math.min(250, Math.floor(this.#heartbeatIntervalMs / 4)));
    const tick = (): void => {
      if (this.#over) return;
      const now = clock.now();
      if (now - this.#lastHeardAt > this.#sessionTimeoutMs) {
        // Confirmed after the loop's I/O phase: after a handler that held the event loop, the
        // server's messages may be waiting in the socket, unread, not missing.
        setImmediate(() => {
          if (this.#over) return;
          if (clock.now() - this.#lastHeardAt <= this.#sessionTimeoutMs) {
            this.#timer = clock.setTimeout(tick, period);
            return;
          }
          this.#silence = new UnavailableError(
            `consume: nothing heard from the server for ${this.#sessionTimeoutMs} ms (the ` +
              'session timeout): the stream is taken for dead',
          );
          this.#abort.abort(this.#silence);
        });
        return;
      }
      if (this.#joined && now - this.#requests.lastQueuedAt >= this.#heartbeatIntervalMs) {
        this.#requests.push({ $case: 'heartbeat', heartbeat: {} });
      }
      this.#timer = clock.setTimeout(tick, period);
    };
    this.#timer = clock.setTimeout(tick, period);
  }

  /** The stream is over: its shards with it. Handlers still running finish unanswered. */
  #end(): void {
    this.#over = true;
    if (this.#timer !== undefined) this.#parts.clock.clearTimeout(this.#timer);
    this.#requests.end();
    this.#acks.discard();
    for (const work of this.#works.values()) {
      work.lose();
      if (!this.#left) {
        this.#parts.emit({ type: 'lost', shard: work.shard, reason: 'the stream ended' });
      }
    }
    this.#works.clear();
  }
}
