// Acknowledgements, batched: the ids a member handled, per shard and epoch, go as one
// Acknowledge a few milliseconds after the first of them (handlers finishing together share a
// message), at once when an eighth of the member's in-flight window waits, and before any
// message that must follow them (a ShardReleased, a LeaveGroup: `flush`). The server frees a
// cell's room in the member's in-flight window when its acknowledgement arrives, so the delay is
// kept short, and a busy member's window is refilled as it goes rather than once it ran dry
// (measured in docs/performance.md, "A member's acknowledgements").

import type { Acknowledge, ShardAcknowledgement } from '@shameless/proto';
import type { Clock, TimerHandle } from '../transport/index.js';

/** How long the first acknowledgement of a batch waits for others, ms. */
export const ACK_DELAY_MS = 5;
/**
 * A batch this large goes at once: an eighth of the member's `maxInFlight` (32 by default).
 * A whole window's worth would leave the server nothing to deliver until the delay ran out.
 */
export function ackBatchIds(maxInFlight: number): number {
  return Math.max(1, Math.floor(maxInFlight / 8));
}

export class Acknowledgements {
  readonly #send: (ack: Acknowledge) => void;
  readonly #clock: Clock;
  /** By `shard/epoch`. */
  readonly #pending = new Map<string, ShardAcknowledgement>();
  readonly #batchIds: number;
  #count = 0;
  #timer: TimerHandle | undefined;

  /** `batchIds`: a batch that many ids long goes at once (see ackBatchIds). */
  constructor(send: (ack: Acknowledge) => void, clock: Clock, batchIds: number) {
    this.#send = send;
    this.#clock = clock;
    this.#batchIds = batchIds;
  }

  /** A cell of `shard`, delivered under `epoch`, was handled. */
  add(shard: number, epoch: bigint, id: bigint): void {
    const key = `${shard}/${epoch}`;
    let entry = this.#pending.get(key);
    if (entry === undefined) {
      entry = { shard, epoch, ids: [] };
      this.#pending.set(key, entry);
    }
    entry.ids.push(id);
    this.#count += 1;
    if (this.#count >= this.#batchIds) this.flush();
    else this.#timer ??= this.#clock.setTimeout(() => this.flush(), ACK_DELAY_MS);
  }

  /** Sends what is pending now. */
  flush(): void {
    this.#stopTimer();
    if (this.#count === 0) return;
    const shards = [...this.#pending.values()];
    this.#pending.clear();
    this.#count = 0;
    this.#send({ shards });
  }

  /** Forgets what is pending: the stream is over, and these ids count for nothing now. */
  discard(): void {
    this.#stopTimer();
    this.#pending.clear();
    this.#count = 0;
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
