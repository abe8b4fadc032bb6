// The entry point: connect to a set of Shameless servers, define models, locate shards.

import type { ModelDefinition, Partition } from '@shameless/proto';
import {
  createCoalescingTransport,
  metricsText,
  PermissionDeniedError,
  type CoalescingOptions,
  type Transport,
  type TransportOptions,
} from '../transport/index.js';
import { readCall, writeCall, type CallOptions } from './callOptions.js';
import {
  ParkedCells,
  describeConsumerGroup,
  replayParkedCell,
  resetConsumerGroup,
  type ConsumerGroupDescription,
  type ConsumerGroupShard,
  type ModelRef,
  type ParkedCellsOptions,
  type ResetTarget,
} from './consumerGroups.js';
import { compileSchema } from './definition.js';
import { toWireInt64 } from './integers.js';
import { Model } from './model.js';
import type { ShardLocation } from './modelPort.js';
import type { ModelSchema, ValidSchema } from './schema.js';
import { storedModelLacks } from './storedDefinition.js';

/**
 * Options of {@link connect}: the transport's settings (endpoints, TLS, token, interceptors,
 * deadline, retries, hedging, budget, ...) and whether calls made in the same tick are
 * coalesced into batch calls (`coalesce`, default true), or an existing transport to use as it
 * is.
 *
 * @example
 * const store = await connect({
 *   endpoints: ['10.0.0.1:50051', '10.0.0.2:50051'],
 *   tls: { ca: readFileSync('ca.pem') },
 *   token: () => currentToken(),
 *   deadlineMs: 2000,
 * });
 */
export type ConnectOptions = (TransportOptions & CoalescingOptions) | ExistingTransport;

/** Connects over a transport made elsewhere (shared, wrapped, instrumented, ...). */
export interface ExistingTransport {
  readonly transport: Transport;
  /** Whether {@link Store.close} closes the transport too. Default false. */
  readonly closeTransport?: boolean;
}

/** The store as DescribeStore tells it. */
export interface StoreDescription {
  /** The prefix of every table name; may be empty. */
  readonly namespace: string;
  /** The number of logical shards across all partitions (fixed for the store's life). */
  readonly shardsCount: number;
  /** The partitions (MySQL databases; never credentials), each with its block of shards. */
  readonly partitions: readonly Partition[];
  /** Every model defined in the store, by any client. */
  readonly models: readonly ModelDefinition[];
}

/**
 * Connects to a Shameless store: builds the transport and asks the store to describe itself
 * (sends DescribeStore), so that a wrong address or credentials fail here. Close the store with
 * {@link Store.close}.
 *
 * @example
 * const store = await connect({ endpoints: ['127.0.0.1:50051'] });
 * const Rate = await store.defineModel({ ... });
 */
export async function connect(options: ConnectOptions): Promise<Store> {
  const existing = 'transport' in options;
  const transport = existing ? options.transport : createCoalescingTransport(options);
  try {
    const description = await transport.unary('describeStore', {}, readCall());
    return new Store(transport, description, !existing || options.closeTransport === true);
  } catch (error) {
    if (!existing) transport.close();
    throw error;
  }
}

/**
 * A connection to a Shameless store (see {@link connect}): defines models and locates shards.
 * Every call goes through its {@link Store.transport}: deadlines, retries of reads and of
 * writes (each write carries a requestId), hedged reads, one retry budget.
 */
export class Store {
  readonly #transport: Transport;
  readonly #description: StoreDescription;
  readonly #shards: readonly number[];
  readonly #ownsTransport: boolean;

  /** @internal Made by {@link connect}. */
  constructor(transport: Transport, description: StoreDescription, ownsTransport: boolean) {
    this.#transport = transport;
    this.#description = description;
    this.#shards = Object.freeze(
      Array.from({ length: description.shardsCount }, (_, shard) => shard),
    );
    this.#ownsTransport = ownsTransport;
  }

  /**
   * The transport's counters (calls, attempts, retries, hedges, budget, coalescing) in the
   * Prometheus text format, for a process's own /metrics endpoint. `labels` are added to every
   * sample (e.g. `{ store: 'rates' }`).
   */
  metrics(labels: Readonly<Record<string, string>> = {}): string {
    return metricsText(this.#transport.stats(), labels);
  }

  /** The transport every call goes through (its `stats()` count calls, retries, hedges). */
  get transport(): Transport {
    return this.#transport;
  }

  /** The prefix of every table name; may be empty. */
  get namespace(): string {
    return this.#description.namespace;
  }

  /** The number of logical shards across all partitions. */
  get shardsCount(): number {
    return this.#description.shardsCount;
  }

  /** The partitions, as described when connecting. */
  get partitions(): readonly Partition[] {
    return this.#description.partitions;
  }

  /** Every shard number, `0 .. shardsCount - 1`: one log consumer per shard, for example. */
  get shards(): readonly number[] {
    return this.#shards;
  }

  /**
   * Registers a model with the store (sends DefineModel), creating its tables on every shard
   * if needed, and returns it. Defining the same model again is a no-op and adding cells is
   * allowed; any other change to a stored model is refused (FailedPreconditionError).
   * With a token that may not define models (DefineModel needs the admin role), the model an
   * admin defined is used when it has every index and cell of the schema; otherwise
   * PermissionDeniedError says what differs.
   *
   * The schema's literal types drive the model's method signatures: `put` requires every
   * index field with its type; `where` takes the fields of the index it queries.
   *
   * @throws InvalidArgumentError (the promise rejects, before any call) for a schema that
   *   cannot be right: no fields, an unknown field type, a `shardOn` that is not an integer
   *   field of its index, a secondary index called `primary`.
   */
  async defineModel<const S extends ModelSchema>(
    schema: S & ValidSchema<S>,
    options: CallOptions = {},
  ): Promise<Model<S>> {
    const compiled = compileSchema(schema);
    const stored = await this.#transport
      .unary(
        'defineModel',
        { model: compiled.definition },
        // Idempotent (it creates tables only if missing) but not worth hedging.
        writeCall(options),
      )
      .then(
        (response) => response.model ?? compiled.definition,
        (error: unknown) => {
          if (!(error instanceof PermissionDeniedError)) throw error;
          return this.#definedByAnother(compiled.definition, error, options);
        },
      );
    return new Model<S>(this, this.#transport, schema, compiled, stored);
  }

  /**
   * With a token that may not define models (a reader or writer), the model an admin defined:
   * usable when it has every index and cell the schema names; otherwise the refusal says why.
   */
  async #definedByAnother(
    requested: ModelDefinition,
    refusal: PermissionDeniedError,
    options: CallOptions,
  ): Promise<ModelDefinition> {
    const description = await this.describe(options);
    const stored = description.models.find((model) => model.name === requested.name);
    const lacks = stored ? storedModelLacks(stored, requested) : 'is not defined';
    if (stored && lacks === undefined) return stored;
    throw new PermissionDeniedError(
      `model ${requested.name} cannot be defined with this token (${refusal.details}), and the ` +
        `store's ${stored ? `model differs: ${lacks}` : `model ${lacks}`}; define it with an ` +
        'admin token first (shameless define --file, or defineModel as admin)',
      { cause: refusal },
    );
  }

  /** The store's namespace, shards, partitions and every model (sends DescribeStore). */
  async describe(options: CallOptions = {}): Promise<StoreDescription> {
    return this.#transport.unary('describeStore', {}, readCall(options));
  }

  /**
   * The shard of a value of a shard field (`store.findShard(hotelId)`: the index shard,
   * `value mod shardsCount`, floored as Ruby's `%`) or of a record (`store.findShard({ uuid })`:
   * its content shard), and the partition that holds it (sends FindShard).
   *
   * @throws InvalidArgumentError (the promise rejects, before any call) for a value that is not
   *   a signed 64-bit integer, or a number past 2^53 (pass a bigint).
   */
  async findShard(
    key: number | bigint | { readonly uuid: string },
    options: CallOptions = {},
  ): Promise<ShardLocation> {
    const response = await this.#transport.unary(
      'findShard',
      {
        key:
          typeof key === 'object'
            ? { $case: 'uuid', uuid: key.uuid }
            : { $case: 'value', value: toWireInt64(key, 'findShard: value') },
      },
      readCall(options),
    );
    return { shard: response.shard, partition: response.partition };
  }

  /**
   * Calls `callback` with each shard number, `0 .. shardsCount - 1`, in turn, awaiting what
   * it returns (the gem's `each_shard`).
   */
  async eachShard(callback: (shard: number) => unknown): Promise<void> {
    for (const shard of this.#shards) await callback(shard);
  }

  /**
   * A consumer group of a model (see {@link Model.consume}): its live members and, for every
   * content shard, its owner, cursor, lag and parked cells (sends DescribeConsumerGroup).
   *
   * @example
   * const group = await store.describeConsumerGroup('rate', 'billing');
   * for (const shard of group.shards) console.log(shard.shard, shard.owner, shard.lag);
   *
   * @throws NotFoundError when no member ever joined the group, or the model is not defined.
   */
  describeConsumerGroup(
    model: ModelRef,
    group: string,
    options: CallOptions = {},
  ): Promise<ConsumerGroupDescription> {
    return describeConsumerGroup(this.#transport, model, group, options);
  }

  /**
   * A consumer group's parked cells, with their attempts and last error, in shard then id
   * order (sends ListParkedCells, a page at a time as the loop asks for more).
   *
   * @example
   * for await (const parked of store.parkedCells(Rate, 'billing')) {
   *   console.log(parked.shard, parked.id, parked.error);
   * }
   *
   * @throws InvalidArgumentError (synchronously) for a shard or page size out of bounds.
   */
  parkedCells(model: ModelRef, group: string, options: ParkedCellsOptions = {}): ParkedCells {
    return new ParkedCells(this.#transport, model, group, options);
  }

  /**
   * Delivers a parked cell to its shard's owner again (now, or when a member next owns the
   * shard); once acknowledged it is no longer parked (sends ReplayParkedCell; needs the
   * writer role). Asking again before then changes nothing.
   *
   * @throws NotFoundError when the cell is not parked in the group.
   */
  replayParkedCell(
    model: ModelRef,
    group: string,
    cell: { readonly shard: number; readonly id: number | bigint },
    options: CallOptions = {},
  ): Promise<void> {
    return replayParkedCell(this.#transport, model, group, cell, options);
  }

  /**
   * Moves a consumer group's cursors: every shard to its beginning (`'earliest'`) or to its
   * highest id now (`'latest'`), or one shard to a cursor; counts of failed deliveries of the
   * shards moved are cleared, parked cells stay parked (sends ResetConsumerGroup; needs the admin role).
   * Resolves with every shard as it is then.
   *
   * @throws FailedPreconditionError while a member is connected (the message names them).
   */
  resetConsumerGroup(
    model: ModelRef,
    group: string,
    to: ResetTarget,
    options: CallOptions = {},
  ): Promise<ConsumerGroupShard[]> {
    return resetConsumerGroup(this.#transport, model, group, to, options);
  }

  /**
   * Closes the connections (when {@link connect} made the transport). Calls already sent are
   * answered; calls not sent yet (made afterwards, held for a batch of their kind, or waiting to
   * be retried) fail with a CancelledError, without a retry. Streams still open (`each`, with
   * `follow` or not) are cancelled: their loops throw a CancelledError; so are consumers, whose
   * `closed` rejects with it (close them first to leave their groups gracefully).
   */
  async close(): Promise<void> {
    if (this.#ownsTransport) this.#transport.close();
  }
}

export type { ShardLocation };

declare module './modelPort.js' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  interface UpperLayers<S extends ModelSchema> {
    store: Store;
  }
}
