// What a member's session tells its member, in order, and the queue that holds it until the
// service sends it. The queue is bounded by the bytes of the cells it holds: the shards' feeds
// wait for room, so a member that does not read holds its feeds, not the server's memory.
import type { RowId } from '../base/exactInteger.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';

export interface Delivery {
  readonly cell: StoredCell;
  /** The shard's epoch the cell is delivered under. */
  readonly epoch: RowId;
  /** 1 for a first delivery; counts failed deliveries and those to members that died. */
  readonly attempt: number;
  /** A parked cell delivered again on request, out of the shard's order. */
  readonly replay: boolean;
}

export type GroupEvent =
  | {
      readonly kind: 'joined';
      readonly memberId: string;
      readonly sessionTimeoutMs: number;
      readonly heartbeatIntervalMs: number;
    }
  | {
      readonly kind: 'assigned';
      readonly shard: number;
      readonly epoch: RowId;
      readonly cursor: RowId;
    }
  | { readonly kind: 'revoked'; readonly shard: number; readonly epoch: RowId }
  | {
      readonly kind: 'lost';
      readonly shard: number;
      readonly epoch: RowId;
      readonly reason: string;
    }
  | { readonly kind: 'deliveries'; readonly deliveries: Delivery[] }
  | {
      readonly kind: 'committed';
      readonly shard: number;
      readonly epoch: RowId;
      readonly cursor: RowId;
      readonly replays: RowId[];
    }
  | {
      readonly kind: 'parked';
      readonly shard: number;
      readonly epoch: RowId;
      readonly id: RowId;
      readonly attempts: number;
      readonly error: string;
    }
  | { readonly kind: 'heartbeat'; readonly at: Date }
  | { readonly kind: 'left' };

/** What a delivery is reckoned to weigh besides its body. */
const DELIVERY_OVERHEAD_BYTES = 128;
/** Deliveries merged into one event at most (the service cuts messages by bytes as well). */
const DELIVERIES_PER_EVENT = 500;

export class GroupOutbox {
  private readonly queue: GroupEvent[] = [];
  private bytes = 0;
  private readonly waitingForRoom = new Set<() => void>();
  private wakeReader: (() => void) | undefined;
  private ended = false;
  private failure: Error | undefined;
  /** When the last event was queued: heartbeats fill silences. */
  lastQueuedAt = Date.now();

  constructor(
    /** Bytes of cells held past which feeds wait. */
    private readonly maxBytes: number,
  ) {}

  push(event: GroupEvent): void {
    if (this.ended) return;
    this.queue.push(event);
    this.lastQueuedAt = Date.now();
    this.wakeReader?.();
  }

  deliver(delivery: Delivery): void {
    if (this.ended) return;
    this.bytes += weight(delivery);
    const last = this.queue[this.queue.length - 1];
    if (last?.kind === 'deliveries' && last.deliveries.length < DELIVERIES_PER_EVENT) {
      last.deliveries.push(delivery);
      this.lastQueuedAt = Date.now();
      this.wakeReader?.();
      return;
    }
    this.push({ kind: 'deliveries', deliveries: [delivery] });
  }

  /** Resolves once the cells held are under the bound (or the outbox ended, or `signal` fired). */
  room(signal: AbortSignal): Promise<void> {
    if (this.bytes < this.maxBytes || this.ended || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.waitingForRoom.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waitingForRoom.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** No more events after those queued; the reader ends once it has them all. */
  end(): void {
    this.ended = true;
    this.wakeReader?.();
    for (const done of [...this.waitingForRoom]) done();
  }

  /** The reader throws `error` after the events queued (nothing more is queued). */
  fail(error: Error): void {
    this.failure ??= error;
    this.end();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  async *events(signal: AbortSignal): AsyncGenerator<GroupEvent> {
    for (;;) {
      const event = this.queue.shift();
      if (event) {
        if (event.kind === 'deliveries') {
          for (const delivery of event.deliveries) this.bytes -= weight(delivery);
          if (this.bytes < this.maxBytes) for (const done of [...this.waitingForRoom]) done();
        }
        yield event;
        continue;
      }
      if (this.ended || signal.aborted) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wakeReader = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wakeReader = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

function weight(delivery: Delivery): number {
  return delivery.cell.body.length + DELIVERY_OVERHEAD_BYTES;
}
