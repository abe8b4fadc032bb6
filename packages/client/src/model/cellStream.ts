// A model's shard log as an async iterator of cells (Each), with the position reached per
// shard, heartbeats for idle followers, and a resume from that position when the stream breaks
// with a transient error after it had made progress.

import type { EachRequest, EachResponse, Cell as WireCell } from '@shameless/proto';
import { ShamelessError, UnavailableError } from '../transport/index.js';
import type { Cell } from './cell.js';
import type { CallOptions } from './callOptions.js';
import type { ModelPort } from './modelPort.js';
import { type ExactInteger, fromWire, toWireUint32, toWireUint64 } from './integers.js';
import type { CellName, ModelSchema } from './schema.js';

/** Sent by a following stream when no cell came for a while. */
export interface Heartbeat {
  /** When the server sent it. */
  readonly at: Date;
  /** The position of every shard read: all its cells up to this id have been sent. */
  readonly cursors: ReadonlyMap<number, ExactInteger>;
}

/** Options of `Model.each`. */
export interface EachOptions extends CallOptions {
  /** Content shards to read. Default: every shard. */
  readonly shards?: readonly number[];
  /**
   * Start after this id, per shard (0 for shards not listed): resume from saved cursors.
   * Numbers or bigints (as ids come).
   */
  readonly cursors?:
    ReadonlyMap<number, number | bigint> | { readonly [shard: number]: number | bigint };
  /**
   * Keep streaming new cells as they commit, until the loop is left, `signal` aborts or the
   * store is closed.
   * Default false: the stream ends once every shard is read up to where it was when read.
   */
  readonly follow?: boolean;
  /** Cells per message: 1 to 10000, default 500. */
  readonly batchSize?: number;
  /** With `follow`: the longest quiet time before a heartbeat, ms. Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /** Called with each heartbeat (with `follow`, when no cell came for a while). */
  readonly onHeartbeat?: (heartbeat: Heartbeat) => void;
  /**
   * The deadline of the whole stream, consumer time included. Default: none (a log read or a
   * follow runs until it ends or is stopped); stop it with `signal` or by leaving the loop.
   */
  readonly deadlineMs?: number;
}

/**
 * A model's cells in per-shard log order (ascending id within each shard), as they were
 * written: iterate with `for await`. Leaving the loop (`break`, `return`, a throw) cancels the
 * call; aborting the `signal` ends the iteration quietly, like a `break`. Closing the store
 * cancels it too, and the iteration then throws a CancelledError ("each: the transport is
 * closed"): a follower must not take it for the end of the log.
 *
 * {@link CellStream.cursors} is the position reached per shard: the id of the last cell handed
 * out (or of the last heartbeat). When the connection breaks with a transient error after some
 * progress, the stream reopens itself from there, and iterating the stream again later resumes
 * from there too, so no cell is handed out twice. A consumer that must not lose a cell it
 * failed to process checkpoints `cell.shard`/`cell.id` itself once the cell is done, and
 * passes the checkpoints back as `cursors` (at-least-once).
 */
export class CellStream<S extends ModelSchema> implements AsyncIterable<Cell<S>> {
  readonly #context: ModelPort<S>;
  readonly #options: EachOptions;
  readonly #cursors: Map<number, ExactInteger>;

  /** @internal Made by `Model.each`. */
  constructor(context: ModelPort<S>, options: EachOptions) {
    this.#context = context;
    this.#options = options;
    const cursors = options.cursors ?? new Map<number, number | bigint>();
    const entries: [unknown, unknown][] =
      cursors instanceof Map
        ? [...(cursors as ReadonlyMap<unknown, unknown>)]
        : Object.entries(cursors).map(([shard, id]) => [/^\d+$/.test(shard) ? +shard : shard, id]);
    // Checked (and normalised) here, so that a bad argument fails when the stream is made, not
    // as an InternalError once its request cannot be encoded.
    this.#cursors = new Map(
      entries.map(([shard, id]) => [
        toWireUint32(shard, 'each: a shard of cursors'),
        fromWire(toWireUint64(id, `each: the cursor of shard ${String(shard)}`)),
      ]),
    );
    options.shards?.forEach((shard, i) => toWireUint32(shard, `each: shards[${i}]`));
    if (options.batchSize !== undefined) toWireUint32(options.batchSize, 'each: batchSize');
    if (options.heartbeatIntervalMs !== undefined) {
      toWireUint32(options.heartbeatIntervalMs, 'each: heartbeatIntervalMs');
    }
  }

  /** Per shard, the id of the last cell handed out (or the heartbeat's position). */
  get cursors(): ReadonlyMap<number, ExactInteger> {
    return new Map(this.#cursors);
  }

  /** Iterates the cells (sends Each; again after a transient break), from {@link cursors}. */
  async *[Symbol.asyncIterator](): AsyncIterator<Cell<S>> {
    const options = this.#options;
    const { signal } = options;
    for (;;) {
      if (signal?.aborted) return;
      let progressed = false;
      try {
        for await (const message of this.#open()) {
          progressed = true;
          const event = message.event;
          if (event?.$case === 'batch') {
            const { shard, cells } = event.batch;
            for (const wire of cells) {
              this.#advance(shard, fromWire(wire.id));
              yield this.#cellOf(wire);
            }
          } else if (event?.$case === 'heartbeat') {
            const { heartbeat } = event;
            for (const [shard, id] of Object.entries(heartbeat.cursors)) {
              this.#advance(Number(shard), fromWire(id));
            }
            this.#options.onHeartbeat?.({
              at: heartbeat.at ?? new Date(),
              cursors: this.cursors,
            });
          }
        }
        // A follow stream never ends by itself: a server ended it with an OK status (one of an
        // earlier version shutting down; a current one says UNAVAILABLE). Ending the loop here
        // would tell the follower the log is over; reopen from the cursors instead (on another
        // endpoint, the stopped one refusing calls), as after a break.
        if (!options.follow || signal?.aborted) return;
        if (!progressed) {
          throw new UnavailableError('each: the server ended the follow stream before any message');
        }
      } catch (error) {
        if (signal?.aborted) return;
        // A break after progress (a server restart, a dropped connection): reopen from the
        // cursors. Without progress the transport has already retried as far as it may.
        if (progressed && error instanceof ShamelessError && error.retryable) continue;
        throw error;
      }
    }
  }

  #open(): AsyncIterableIterator<EachResponse> {
    const { schema, transport } = this.#context;
    const options = this.#options;
    const request: EachRequest = {
      model: schema.name,
      shards: [...(options.shards ?? [])],
      cursors: Object.fromEntries(
        [...this.#cursors].map(([shard, cursor]) => [shard, BigInt(cursor)]),
      ),
      follow: options.follow ?? false,
      batchSize: options.batchSize ?? 0,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 0,
    };
    return transport.serverStream('each', request, {
      deadlineMs: options.deadlineMs ?? Number.POSITIVE_INFINITY,
      signal: options.signal,
      consistency: options.consistency,
    });
  }

  #advance(shard: number, id: ExactInteger): void {
    if (id > (this.#cursors.get(shard) ?? 0)) this.#cursors.set(shard, id);
  }

  /** The log cell as a cell of a record handle whose other cells are not read yet. */
  #cellOf(wire: WireCell): Cell<S> {
    const record = this.#context.newRecord(wire.uuid, new Map([[wire.name, wire]]));
    return record.cell(wire.name as CellName<S>);
  }
}
