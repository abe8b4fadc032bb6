// One shard a member owns, under one epoch: the cells the server delivered for it, run through
// the handler in the order they came (the shard's id order), at most `perShardInFlight` at
// once, and each handler's outcome answered: acknowledged, failed (the slot stays held until
// the server delivers the cell again or says it parked it, so the shard's order holds), or
// parked. A revocation or a leave lets the started cells finish and drops the others; a loss
// drops everything, and the outcomes of cells still running count for nothing.
//
// The server delivers ahead of the handler (up to the member's share of max_in_flight), so
// the cells wait here, not on the wire.

import type { Cell as WireCell, Delivery as WireDelivery } from '@shameless/proto';
import { FailedPreconditionError, InvalidArgumentError } from '../transport/index.js';

/**
 * What the handler is told about a cell besides the cell itself.
 *
 * @example
 * Rate.consume({ group: 'billing' }, async (cell, delivery) => {
 *   if (!isValid(cell.body)) return delivery.park('no price');
 *   if (delivery.attempt > 1) log.warn(`shard ${delivery.shard}: attempt ${delivery.attempt}`);
 *   await bill(cell);
 * });
 */
export interface Delivery {
  /** The cell's content shard. */
  readonly shard: number;
  /**
   * 1 for a first delivery; more when earlier deliveries failed (the handler threw) or went to
   * members that died holding it.
   */
  readonly attempt: number;
  /**
   * True for a parked cell delivered again on request (`store.replayParkedCell`), out of the
   * shard's order.
   */
  readonly replay: boolean;
  /**
   * Aborts when the member lost the shard (it was silent too long, its stream broke, the
   * shard went to another member without a hand-over): the cell's outcome no longer counts,
   * and the cell will be delivered again, to this member or another. Pass it to work that
   * may be abandoned.
   */
  readonly signal: AbortSignal;
  /**
   * Parks the cell once the handler returns (or throws): it is recorded with `reason`, counted
   * as handled (the shard goes on), and never delivered again unless replayed
   * (`store.replayParkedCell`). Call it from inside the handler.
   *
   * @throws InvalidArgumentError for a reason that is not a string.
   * @throws FailedPreconditionError once the handler has returned.
   */
  park(reason: string): void;
}

/** How a member answers for the cells of its shards (see `RequestQueue`, `Acknowledgements`). */
export interface ShardAnswers {
  acknowledge(shard: number, epoch: bigint, id: bigint): void;
  failed(shard: number, epoch: bigint, id: bigint, error: string): void;
  park(shard: number, epoch: bigint, id: bigint, reason: string): void;
}

/** What a shard's work needs from its member. */
export interface ShardWorkParts {
  readonly shard: number;
  readonly epoch: bigint;
  /** Cells of the shard handled at once, at most. */
  readonly perShardInFlight: number;
  /**
   * Settles once the shard's previous work (an earlier epoch, an earlier stream) has no
   * handler running: no cell of this one starts before, so no cell runs twice at once.
   */
  readonly after: Promise<void> | undefined;
  /** The user's handler, with the wire cell. */
  readonly handle: (cell: WireCell, delivery: Delivery) => unknown;
  readonly answers: ShardAnswers;
  /** A handler threw (the cell is answered FailedDelivery). */
  readonly onFailure: (shard: number, id: bigint, attempt: number, error: unknown) => void;
}

/** The longest error text sent with a FailedDelivery (the server keeps 2048 bytes). */
const ERROR_TEXT_CHARS = 2048;

export class ShardWork {
  readonly shard: number;
  readonly epoch: bigint;
  readonly #parts: ShardWorkParts;
  /** Delivered, not started, in the order delivered. */
  #queue: WireDelivery[] = [];
  /** Ids of the cells whose handler runs. */
  readonly #running = new Set<string>();
  /** Ids of the cells whose handler threw: waiting for their redelivery or CellParked. */
  readonly #held = new Set<string>();
  /** `owned`: cells start; `finishing`: started cells finish, no other starts; `lost`. */
  #state: 'owned' | 'finishing' | 'lost' = 'owned';
  /** The previous work of the shard is done: cells may start. */
  #ready: boolean;
  readonly #lost = new AbortController();
  #idleWaiters: (() => void)[] = [];

  constructor(parts: ShardWorkParts) {
    this.shard = parts.shard;
    this.epoch = parts.epoch;
    this.#parts = parts;
    this.#ready = parts.after === undefined;
    void parts.after?.then(() => {
      this.#ready = true;
      this.#pump();
    });
  }

  /** True while the member owns the shard under this epoch and starts its cells. */
  get owned(): boolean {
    return this.#state === 'owned';
  }

  /** Cells delivered and not started. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** A delivery of this shard under this epoch. */
  deliver(delivery: WireDelivery): void {
    const { cell } = delivery;
    if (this.#state !== 'owned' || cell === undefined) return;
    const key = String(cell.id);
    if (this.#held.delete(key)) {
      // A cell that failed, delivered again: it takes the slot it held, ahead of the others.
      this.#start(delivery);
      return;
    }
    if (this.#running.has(key)) return;
    this.#queue.push(delivery);
    this.#pump();
  }

  /** The server parked a cell of the shard (CellParked): a slot held for it is free. */
  parked(id: bigint): void {
    if (this.#held.delete(String(id))) this.#pump();
  }

  /**
   * Starts no more cells, drops those not started (and the slots of failed ones: the server
   * redelivers nothing once it revoked the shard or the member leaves); resolves once every
   * started cell is answered.
   */
  finish(): Promise<void> {
    if (this.#state === 'owned') {
      this.#state = 'finishing';
      this.#queue = [];
      this.#held.clear();
    }
    return this.idle();
  }

  /** The shard is gone without a hand-over: nothing more starts, nothing more is answered. */
  lose(): void {
    if (this.#state === 'lost') return;
    this.#state = 'lost';
    this.#queue = [];
    this.#held.clear();
    this.#lost.abort();
  }

  /** Resolves once no handler of this work runs. */
  idle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #pump(): void {
    while (
      this.#ready &&
      this.#state === 'owned' &&
      this.#queue.length > 0 &&
      this.#running.size + this.#held.size < this.#parts.perShardInFlight
    ) {
      this.#start(this.#queue.shift()!);
    }
  }

  #start(wire: WireDelivery): void {
    const cell = wire.cell!;
    const key = String(cell.id);
    this.#running.add(key);
    let parkReason: string | undefined;
    let returned = false;
    const delivery: Delivery = {
      shard: this.shard,
      attempt: wire.attempt,
      replay: wire.replay,
      signal: this.#lost.signal,
      park: (reason: string) => {
        if (typeof reason !== 'string') {
          throw new InvalidArgumentError(
            `park: the reason must be a string, got ${reason === null ? 'null' : typeof reason}`,
          );
        }
        if (returned) {
          throw new FailedPreconditionError(
            `park: the handler of cell ${cell.id} of shard ${this.shard} has returned; ` +
              'park a cell from inside its handler',
          );
        }
        parkReason = reason;
      },
    };
    // Started from a promise job: a handler that throws at once fails like one that rejects,
    // and a loop of synchronous handlers never runs inside #pump.
    void Promise.resolve()
      .then(() => this.#parts.handle(cell, delivery))
      .then(
        () => ({ failed: false as const }),
        (error: unknown) => ({ failed: true as const, error }),
      )
      .then((outcome) => {
        returned = true;
        this.#running.delete(key);
        this.#answer(wire, outcome, parkReason);
        if (this.#running.size === 0) {
          for (const wake of this.#idleWaiters.splice(0)) wake();
        }
        this.#pump();
      });
  }

  #answer(
    wire: WireDelivery,
    outcome: { failed: false } | { failed: true; error: unknown },
    parkReason: string | undefined,
  ): void {
    // The shard was lost: the cell goes to another member (or to this one again), so the
    // outcome neither counts nor holds a slot.
    if (this.#state === 'lost') return;
    const { answers } = this.#parts;
    const id = wire.cell!.id;
    if (parkReason !== undefined) {
      answers.park(this.shard, wire.epoch, id, parkReason);
    } else if (!outcome.failed) {
      answers.acknowledge(this.shard, wire.epoch, id);
    } else {
      answers.failed(this.shard, wire.epoch, id, errorText(outcome.error));
      this.#parts.onFailure(this.shard, id, wire.attempt, outcome.error);
      // Redelivered after a backoff, or parked: until then the slot stays the cell's.
      if (this.#state === 'owned') this.#held.add(String(id));
    }
  }
}

/** A handler's error as the parked cell's record keeps it. */
export function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) text = error.message ? `${error.name}: ${error.message}` : error.name;
  else {
    try {
      text = typeof error === 'string' ? error : String(error);
    } catch {
      text = 'a value that cannot be shown';
    }
  }
  return text.length > ERROR_TEXT_CHARS ? `${text.slice(0, ERROR_TEXT_CHARS - 3)}...` : text;
}
