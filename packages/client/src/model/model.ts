// A model registered with the store: put (the upsert), where on its indices, record handles,
// batch reads and writes of cells (getCells, writeCells), and its cells as per-shard logs
// (fetchLatestCells, maxIdOnShard, each).

import {
  WriteMode,
  type ModelDefinition,
  type PutRequest,
  type WriteCellRequest,
  type WriteCellResult,
  type Cell as WireCell,
} from '@shameless/proto';
import {
  InternalError,
  errorForStatus,
  type ShamelessError,
  type Transport,
} from '../transport/index.js';
import { encodeBody } from './body.js';
import { withBodyAsSent } from './bodyAsSent.js';
import type { Cell } from './cell.js';
import {
  newRequestId,
  readCall,
  writeCall,
  type CallOptions,
  type WriteOptions,
} from './callOptions.js';
import { CellStream, type EachOptions } from './cellStream.js';
import { Consumer, type ConsumeHandler, type ConsumeOptions } from './consumer.js';
import type { KnownVersions, ModelPort, ShardLocation, StoreHandle } from './modelPort.js';
import { refuseIndexFields, type CompiledSchema } from './definition.js';
import {
  type ExactInteger,
  fromWire,
  toWireInt64,
  toWireUint32,
  toWireUint64,
} from './integers.js';
import { ModelIndex, type IndexConditions } from './modelIndex.js';
import type { Query, WhereOptions } from './query.js';
import { recordClassFor, type RecordOf } from './record.js';
import {
  BASE_CELL,
  PRIMARY_INDEX,
  type CellName,
  type CellValues,
  type IndexName,
  type ModelSchema,
  type PutValues,
} from './schema.js';

/** Which page of a shard's log {@link Model.fetchLatestCells} reads. */
export interface LogPageRequest {
  /** A content shard, 0 .. shardsCount - 1. */
  readonly shard: number;
  /** Cells with an id above it; 0 (the default) for the beginning. A number or a bigint. */
  readonly cursor?: number | bigint;
  /** At most this many cells: 1 to 10000, default 1000. */
  readonly limit?: number;
}

/** One page of a shard's log. */
export interface LogPage<S extends ModelSchema> {
  /** Cells with `id > cursor`, in ascending id, each as a cell of its record. */
  readonly cells: Cell<S>[];
  /** The id of the last cell returned, or the cursor asked for when none was: the next cursor. */
  readonly nextCursor: ExactInteger;
  /** The highest id in the shard when the page was read (0 for an empty shard). */
  readonly maxId: ExactInteger;
}

/** Options of {@link Model.find}. */
export interface FindOptions<S extends ModelSchema> extends CallOptions {
  /** The cells to read (in parallel). Default `['base']`. */
  readonly cells?: readonly CellName<S>[];
}

/** One cell of one record, as {@link Model.getCells} takes it. */
export interface CellKey<S extends ModelSchema> {
  /** The record's UUID. */
  readonly uuid: string;
  /** The cell; default `'base'`. */
  readonly cell?: CellName<S>;
}

/** One write of {@link Model.writeCells}: a new version of a cell of an existing record. */
export interface CellWrite<S extends ModelSchema> {
  /** The record's UUID. The record must exist (a NotFoundError in this write's result otherwise). */
  readonly uuid: string;
  /** The cell; default `'base'`. */
  readonly cell?: CellName<S>;
  /** The body, or with `mode: 'merge'` the keys to write over the latest body. Never an index field. */
  readonly body: CellValues<S>;
  /**
   * `'replace'`: the body becomes the new version. `'merge'`: the body's keys are written over
   * the latest version (shallow). Default `'merge'` on `base` (a body never holds index
   * fields, so replacing `base` would drop them from the record's body) and `'replace'` on
   * other cells.
   */
  readonly mode?: 'replace' | 'merge';
  /**
   * The version this write expects to follow (-1: the cell has none yet); the write is refused
   * with a ConflictError in its result when the latest version is another. Default: none, the
   * write follows whatever version is latest.
   */
  readonly expectedRefKey?: number;
  /**
   * The write's idempotency key (see {@link WriteOptions.requestId}). By default the SDK picks
   * one per write, once per writeCells call, and resends it on every retry of the call.
   */
  readonly requestId?: string;
}

/**
 * The outcome of one write of {@link Model.writeCells}: the version written (`replayed` when
 * its requestId had been applied before, and `cell` is that earlier version), or why the store
 * refused it (a `NotFoundError` when the record does not exist, a `ConflictError` when
 * `expectedRefKey` is not the latest version); nothing was written for a refused write.
 */
export type WriteCellsResult<S extends ModelSchema> =
  | { readonly ok: true; readonly cell: Cell<S>; readonly replayed: boolean }
  | { readonly ok: false; readonly error: ShamelessError };

/** The largest log cursor (uint64): no id lies past it. */
const PAST_EVERY_ID = 2n ** 64n - 1n;

/** The record type of a model value: `InferRecord<typeof Rate>`. */
export type InferRecord<M> = M extends Model<infer S> ? RecordOf<S> : never;

/**
 * A model registered with the store by {@link Store.defineModel}: a kind of record with a
 * primary index, named secondary indices and cells. Its methods' argument types come from the
 * schema, so a wrong field name or type in `put` or `where` does not compile.
 */
export class Model<S extends ModelSchema = ModelSchema> {
  readonly #store: StoreHandle;
  readonly #schema: S;
  readonly #definition: ModelDefinition;
  readonly #context: ModelPort<S>;
  readonly #indices: { readonly [N in IndexName<S>]: ModelIndex<S, N> };

  /** @internal Made by {@link Store.defineModel}. */
  constructor(
    store: StoreHandle,
    transport: Transport,
    schema: S,
    compiled: CompiledSchema,
    definition: ModelDefinition,
  ) {
    this.#store = store;
    this.#schema = schema;
    this.#definition = definition;
    const RecordClass = recordClassFor<S>(compiled.cells);
    const context: ModelPort<S> = {
      model: this,
      transport,
      schema: compiled,
      newRecord: (uuid: string, known?: KnownVersions) => new RecordClass(context, uuid, known),
    };
    this.#context = context;
    const indices: Record<string, ModelIndex<S>> = {};
    for (const [name, index] of compiled.indices) {
      indices[name] = new ModelIndex<S>(context, name as IndexName<S>, index);
    }
    this.#indices = Object.freeze(indices) as { readonly [N in IndexName<S>]: ModelIndex<S, N> };
  }

  /** The model's name. */
  get name(): S['name'] {
    return this.#schema.name;
  }

  /** The schema this model was defined with. */
  get schema(): S {
    return this.#schema;
  }

  /**
   * The definition the store holds, as DefineModel answered it (it may list cells other
   * clients added).
   */
  get definition(): ModelDefinition {
    return this.#definition;
  }

  /** The store the model is registered with. */
  get store(): StoreHandle {
    return this.#store;
  }

  /** The model's indices by name: `primary` and each secondary index. */
  get indices(): { readonly [N in IndexName<S>]: ModelIndex<S, N> } {
    return this.#indices;
  }

  /** The index called `name`: `Rate.index('secondary').where(...)`. */
  index<N extends IndexName<S>>(name: N): ModelIndex<S, N> {
    const index = this.#indices[name];
    if (index === undefined) {
      throw new RangeError(
        `model ${this.name} has no index ${String(name)}; its indices are ` +
          Object.keys(this.#indices).join(', '),
      );
    }
    return index;
  }

  /**
   * The gem's upsert (sends Put). Looks the record up by the primary index fields in
   * `values`:
   * - found: writes a new version of its base cell, the latest base body shallow-merged with
   *   the values that are not index fields (index values never change);
   * - not found: creates the record (a new UUID) with base version 0 holding all the values,
   *   and a row in every index. Every field of every index is required (and typed so).
   *
   * Concurrent puts of the same primary values converge on one record. Resolves with the
   * record, its base cell read from the answer.
   *
   * @throws InvalidArgumentError (the promise rejects, before any call) when an integer index
   *   field holds a number past 2^53 (pass a bigint) or a value out of the signed 64-bit range,
   *   or a value MessagePack cannot hold (a symbol, a function, ...), naming its key path.
   */
  async put(values: PutValues<S>, options: WriteOptions = {}): Promise<RecordOf<S>> {
    for (const field of this.#context.schema.integerFields) {
      const value: unknown = values[field];
      if (typeof value === 'number' || typeof value === 'bigint') {
        toWireInt64(value, `put on ${this.name}: ${field}`);
      }
    }
    const request: PutRequest = {
      model: this.name,
      values: encodeBody(values, `put on ${this.name}`),
      requestId: options.requestId ?? newRequestId(),
      omitBodyAsSent: true,
    };
    const response = await this.#context.transport.unary('put', request, writeCall(options));
    const base = withBodyAsSent(response.base, response.bodyOmitted, request.values);
    return this.#context.newRecord(
      response.uuid,
      new Map<string, WireCell | null>([[BASE_CELL, base ?? null]]),
    );
  }

  /**
   * The records whose primary index values match `conditions` (see {@link ModelIndex.where}):
   * `Rate.where({ hotel_id: 1, room_type: '1 bed', check_in_date: { gt: today } })`.
   */
  where(
    conditions: IndexConditions<S, typeof PRIMARY_INDEX>,
    options: WhereOptions<S> = {},
  ): Query<S> {
    return this.index(PRIMARY_INDEX).where(conditions, options);
  }

  /**
   * A handle on the record `uuid` without reading anything: its cells are not read yet
   * (`load`, `reload`), and `update` works on them directly.
   */
  record(uuid: string): RecordOf<S> {
    return this.#context.newRecord(uuid);
  }

  /**
   * The record `uuid` with the cells asked for read (one GetCell each, in parallel), or
   * undefined when it has no base cell (no such record).
   */
  async find(uuid: string, options: FindOptions<S> = {}): Promise<RecordOf<S> | undefined> {
    const record = this.record(uuid);
    const names = options.cells ?? [BASE_CELL];
    await Promise.all(
      [...new Set<CellName<S>>([BASE_CELL, ...names])].map((name) =>
        record.cell(name).load(options),
      ),
    );
    return record.base.present ? record : undefined;
  }

  /**
   * The latest version of many cells in one call (sends GetCells, read with one SELECT per
   * partition): one entry per key, in order, undefined for a cell with no version (or a
   * record that does not exist). Up to 10000 keys per call; an empty list resolves to `[]`
   * without a call. Each cell is read, as a cell of its own record handle.
   *
   * @throws InvalidArgumentError for a malformed uuid, NotFoundError for an unknown cell (the
   *   message names the key: `keys[3].cell`); nothing is read then.
   */
  async getCells(
    keys: readonly CellKey<S>[],
    options: CallOptions = {},
  ): Promise<(Cell<S> | undefined)[]> {
    if (keys.length === 0) return [];
    const response = await this.#context.transport.unary(
      'getCells',
      {
        model: this.name,
        keys: keys.map((key) => ({ uuid: key.uuid, cell: key.cell ?? BASE_CELL })),
      },
      readCall(options),
    );
    return response.results.map((result) => result.cell && this.#cellOf(result.cell));
  }

  /**
   * Writes many cell versions in one call (sends WriteCells): the fast path for bulk writes.
   * Each write is a `save`/`update` of its own, with its own outcome, in order: a refused write
   * (no such record, a stale `expectedRefKey`) does not stop the others. Writes to the same
   * cell apply in order: their versions are consecutive, and a merge applies onto the write
   * before it. Up to 10000 writes per call; an empty list resolves to `[]` without a call.
   *
   * The call is retried like every write (each write carries a requestId, chosen once here
   * unless given): after a retry, writes that had been applied answer `replayed`.
   *
   * @throws ReadonlyFieldError (the promise rejects, before any call) when a body has a field of
   *   any index.
   * @throws InvalidArgumentError / NotFoundError for a malformed write (a bad uuid, an unknown
   *   cell; the message names it: `writes[3].uuid`): nothing is written then.
   * @throws UnavailableError when a partition could not be reached after the retries: some
   *   shards' writes may be written; calling again with the same requestIds is safe.
   */
  async writeCells(
    writes: readonly CellWrite<S>[],
    options: CallOptions = {},
  ): Promise<WriteCellsResult<S>[]> {
    if (writes.length === 0) return [];
    const { schema, transport } = this.#context;
    const requests = writes.map((write, i): WriteCellRequest => {
      refuseIndexFields(schema, Object.keys(write.body));
      const cell = write.cell ?? BASE_CELL;
      const mode = write.mode ?? (cell === BASE_CELL ? 'merge' : 'replace');
      return {
        model: this.name,
        uuid: write.uuid,
        cell,
        body: encodeBody(write.body, `writeCells on ${this.name}: writes[${i}].body`),
        mode: mode === 'merge' ? WriteMode.WRITE_MODE_MERGE : WriteMode.WRITE_MODE_REPLACE,
        expectedRefKey: write.expectedRefKey,
        requestId: write.requestId ?? newRequestId(),
        omitBodyAsSent: true,
      };
    });
    // One request object for the whole call: every retry resends the same requestIds.
    const response = await transport.unary('writeCells', { writes: requests }, writeCall(options));
    return response.results.map((result, i) => this.#writeCellsResult(result, requests[i]!));
  }

  /**
   * One page of a content shard's log (sends FetchLatestCells): the cells written with
   * `id > cursor`, in ascending id. Keep `nextCursor` and ask again for the next page; the
   * log is gap-free, so no cell that commits later ever has an id at or below a cursor
   * already returned.
   *
   * @throws InvalidArgumentError (the promise rejects, before any call) for a cursor that is
   *   not an unsigned 64-bit integer, or a number past 2^53 (pass a bigint), or a shard or
   *   limit that is not an unsigned 32-bit integer; the server refuses a shard that does not
   *   exist or a limit past its cap (InvalidArgumentError too).
   */
  async fetchLatestCells(page: LogPageRequest, options: CallOptions = {}): Promise<LogPage<S>> {
    const shard = toWireUint32(page.shard, 'fetchLatestCells: shard');
    const cursor = toWireUint64(page.cursor ?? 0, 'fetchLatestCells: cursor');
    const limit = toWireUint32(page.limit ?? 0, 'fetchLatestCells: limit');
    const response = await this.#context.transport.unary(
      'fetchLatestCells',
      { model: this.name, shard, cursor, limit },
      readCall(options),
    );
    return {
      cells: response.cells.map((wire) => this.#cellOf(wire)),
      nextCursor: fromWire(response.nextCursor),
      maxId: fromWire(response.maxId),
    };
  }

  /**
   * The highest cell id in a content shard, 0 when it is empty (sends FetchLatestCells).
   *
   * @throws InvalidArgumentError (the promise rejects) for a shard that is not an unsigned
   *   32-bit integer, or that does not exist.
   */
  async maxIdOnShard(shard: number, options: CallOptions = {}): Promise<ExactInteger> {
    const response = await this.#context.transport.unary(
      'fetchLatestCells',
      // A cursor past every id: no cells come back, only the shard's max id.
      {
        model: this.name,
        shard: toWireUint32(shard, 'maxIdOnShard: shard'),
        cursor: PAST_EVERY_ID,
        limit: 1,
      },
      readCall(options),
    );
    return fromWire(response.maxId);
  }

  /**
   * The model's cells as per-shard logs (sends Each): every shard (or `shards`) from its
   * cursor, in ascending id per shard; with `follow`, new cells as they commit, until the
   * loop is left or `signal` aborts.
   *
   * @example
   * const controller = new AbortController();
   * for await (const cell of Rate.each({ shards: [3], follow: true, signal: controller.signal })) {
   *   console.log(cell.shard, cell.id, cell.name, cell.body);
   * }
   *
   * @throws InvalidArgumentError (synchronously) for a cursor that is not an unsigned 64-bit
   *   integer, or a number past 2^53 (pass a bigint), or a shard (in `shards` or `cursors`),
   *   `batchSize` or `heartbeatIntervalMs` that is not an unsigned 32-bit integer.
   */
  each(options: EachOptions = {}): CellStream<S> {
    return new CellStream(this.#context, options);
  }

  /**
   * Joins the consumer group `options.group` of this model as a member (sends Consume) and
   * runs `handler` on the cells of the shards it is given, each shard's in id order, at most
   * `perShardInFlight` of a shard at once. The members of a group share its shards (balanced,
   * each shard owned by one member at a time) and together handle every cell of every shard at
   * least once; the group's cursor per shard is kept in the store.
   *
   * The handler's outcome answers the cell: resolving acknowledges it (acknowledgements are
   * batched), throwing fails this delivery (the cell comes again after a backoff, holding its
   * place in the shard's order, and is parked after `maxDeliveries` deliveries), and
   * `delivery.park(reason)` parks it. A shard moving to another member gets the cells started
   * here finished and acknowledged first; `consumer.close()` leaves the same way.
   *
   * @example
   * const consumer = Rate.consume(
   *   { group: 'billing', from: 'earliest', perShardInFlight: 1, maxDeliveries: 5 },
   *   async (cell, delivery) => {
   *     if (cell.body.price === undefined) return delivery.park('no price');
   *     await bill(cell.uuid, cell.body);
   *   },
   * );
   * process.once('SIGTERM', () => void consumer.close());
   * await consumer.closed;
   *
   * @throws InvalidArgumentError (synchronously) for a missing or malformed group or member id,
   *   an option out of its bounds (named), or a handler that is not a function.
   */
  consume(options: ConsumeOptions<S>, handler: ConsumeHandler<S>): Consumer<S> {
    return new Consumer(this.#context, options, handler);
  }

  /** The shard of a shard field value or of a record's uuid (see {@link Store.findShard}). */
  findShard(
    key: number | bigint | { readonly uuid: string },
    options?: CallOptions,
  ): Promise<ShardLocation> {
    return this.#store.findShard(key, options);
  }

  /** A version read from the store, as a read cell of its own record handle. */
  #cellOf(wire: WireCell): Cell<S> {
    return this.#context
      .newRecord(wire.uuid, new Map<string, WireCell>().set(wire.name, wire))
      .cell(wire.name as CellName<S>);
  }

  #writeCellsResult(result: WriteCellResult, request: WriteCellRequest): WriteCellsResult<S> {
    const outcome = result.outcome;
    if (outcome?.$case === 'written' && outcome.written.cell !== undefined) {
      const { cell, bodyOmitted, replayed } = outcome.written;
      return {
        ok: true,
        cell: this.#cellOf(withBodyAsSent(cell, bodyOmitted, request.body)!),
        replayed,
      };
    }
    if (outcome?.$case === 'error') {
      return { ok: false, error: errorForStatus(outcome.error.code, outcome.error.message) };
    }
    throw new InternalError('WriteCells answered a write with neither a version nor an error');
  }

  /** Every shard number, `0 .. shardsCount - 1` (see {@link Store.shards}). */
  get shards(): readonly number[] {
    return this.#store.shards;
  }

  /** Calls `callback` with each shard number in turn (see {@link Store.eachShard}). */
  eachShard(callback: (shard: number) => unknown): Promise<void> {
    return this.#store.eachShard(callback);
  }
}

declare module './modelPort.js' {
  interface UpperLayers<S extends ModelSchema> {
    model: Model<S>;
  }
}
