// A member's messages to the server, as the AsyncIterable the transport writes its Consume
// stream from: queued as the member decides them, written in order, until the stream is over.
// It remembers when the last one was queued, which says when a heartbeat is due.

import type { ConsumeRequest } from '@shameless/proto';
import type { Clock } from '../transport/index.js';

/** One message of the member's: `{ $case: 'ack', ack: ... }`, ... */
export type MemberMessage = NonNullable<ConsumeRequest['message']>;

export class RequestQueue implements AsyncIterableIterator<ConsumeRequest> {
  readonly #clock: Clock;
  readonly #queue: ConsumeRequest[] = [];
  #waiting: ((result: IteratorResult<ConsumeRequest>) => void) | undefined;
  #ended = false;
  /** When the last message was queued, on the clock. */
  lastQueuedAt: number;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.lastQueuedAt = clock.now();
  }

  /** Queues a message; false (dropped) once the queue has ended. */
  push(message: MemberMessage): boolean {
    if (this.#ended) return false;
    this.lastQueuedAt = this.#clock.now();
    const request: ConsumeRequest = { message };
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting({ value: request, done: false });
    else this.#queue.push(request);
    return true;
  }

  /** No more messages: the stream half-closes once those queued are written. */
  end(): void {
    this.#ended = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<ConsumeRequest>> {
    const request = this.#queue.shift();
    if (request !== undefined) return Promise.resolve({ value: request, done: false });
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  /** The transport is done with the stream: nothing queued now or later is written. */
  return(): Promise<IteratorResult<ConsumeRequest>> {
    this.#queue.length = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
