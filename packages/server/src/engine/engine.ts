// The storage engine: every operation of the store, in terms of the engine's own types. It
// knows nothing of gRPC; the service maps requests onto these calls.
import type { CallScope } from './base/callScope.js';
import { CreateShards } from './schema/createShards.js';
import { type AppendOutcome, CellWriter } from './write/cellWriter.js';
import type {
  EngineStats,
  PartitionActivity,
  GaleraNodeStats,
  ReplicaStats,
  PrimaryKeyCacheStats,
  RecordCacheStats,
  VersionCacheStats,
} from './engineStats.js';
import { DEFAULT_GROUP_LIMITS, type GroupLimits, type GroupStats } from './write/groupCommit.js';
import { parseBody } from './base/body.js';
import { type BodyLimits, DEFAULT_BODY_LIMITS } from './base/bodyRules.js';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from './base/errors.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits, requireCellSize } from './base/limits.js';
import type { RowId } from './base/exactInteger.js';
import { IndexColumns } from './model/indexColumns.js';
import { rejectIndexFields } from './model/indexValues.js';
import { KnownTables } from './schema/knownTables.js';
import type { StoreLayout } from './model/layout.js';
import { LogNotifier } from './log/logNotifier.js';
import { MaxIdPoller } from './log/maxIdPoller.js';
import { BASE_CELL, type CompiledModel, type ModelSpec } from './model/model.js';
import { ModelRegistry } from './schema/modelRegistry.js';
import { PartitionHealth } from './mysql/partitionHealth.js';
import { ReplicaMonitor } from './mysql/replicaMonitor.js';
import type { ReplicaStatus } from './mysql/replicas.js';
import type { GaleraNodeStatus } from './mysql/galeraNodes.js';
import type { Partition, PartitionSet } from './mysql/partitions.js';
import { PartitionRouting } from './mysql/partitionRouting.js';
import { nodeListWithoutUsers } from './mysql/galeraNodes.js';
import type { PartitionMap } from './model/partitionMap.js';
import { KnownRecords } from './write/knownRecords.js';
import { VersionCache } from './base/versionCache.js';
import { PrimaryKeyCache } from './read/primaryKeyCache.js';
import { StoredTimes } from './model/storedTimes.js';
import { PrimaryLookups } from './read/primaryLookups.js';
import { type PreparedPut, PutOperation, type PutResult } from './write/putOperation.js';
import { requireBatchSize, requireRequestId, requireUuid } from './base/requestFields.js';
import { type EachEvent, type EachInput, type LogPage, ShardLog } from './log/shardLog.js';
import { type AnswerBound, LatestCells, answerOverBound } from './read/latestCells.js';
import { readCell } from './mysql/sql/contentReads.js';
import { type CellKey, type StoredCell, toStoredCell } from './mysql/sql/contentRows.js';
import {
  DEFAULT_WHERE_LIMIT,
  type WhereInput,
  type WherePage,
  WhereQuery,
  pageAnswerBytes,
} from './read/whereQuery.js';
import type { Logger } from './base/logger.js';
import { ShardMoves } from './shardMoves.js';
import type { AppendRequest } from './write/writeItems.js';
import { type ConsumerGroupStats, ConsumerGroups } from './groups/consumerGroups.js';

export interface WriteCellInput {
  model: string;
  uuid: string;
  cell: string;
  body: Buffer;
  mode: 'replace' | 'merge';
  expectedRefKey?: number;
  requestId: string;
}

/** The most queries one WhereMany may carry, and the most records they may ask for in all. */
export const MAX_WHERE_BATCH = 1000;
export const MAX_WHERE_BATCH_RECORDS = 10_000;

export interface PutInput {
  model: string;
  values: Buffer;
  requestId: string;
}

/** What became of one put of a batch: its result, or why it was refused (nothing written). */
export type PutOutcome =
  ({ ok: true } & PutResult) | { ok: false; error: AlreadyExistsError | InvalidArgumentError };

export interface PartitionInfo {
  /** The partition's id: stable, as the partition map names it. */
  index: number;
  host: string;
  port: number;
  database: string;
  /** Where the partition is, as the map has it (a URL, or Galera nodes joined by |), without user or password. */
  location: string;
  /** The first and last shard it serves (0 and 0 for none): its range, in a store that never moved. */
  firstShard: number;
  lastShard: number;
  /** Every shard it serves under the current partition map, ascending. */
  shards: number[];
  /** The last health probe of the partition got no answer. */
  down: boolean;
  /** Its read replicas, as the replica monitor last measured them. */
  replicas: ReplicaInfo[];
  /** Its Galera nodes, in their listed order; empty for a partition on one server. */
  nodes: GaleraNodeStatus[];
}

export interface ReplicaInfo extends Omit<ReplicaStatus, 'partition'> {
  host: string;
  port: number;
}

export interface StoreDescription {
  namespace: string;
  shardsCount: number;
  /** The partition map routing now: 0 for a store that never moved a shard. */
  partitionMapVersion: number;
  partitions: PartitionInfo[];
  models: ModelSpec[];
  /** The largest body a cell may have. */
  maxCellBytes: number;
  /** How deep and how large a body written may be. */
  bodyLimits: BodyLimits;
}

export interface EngineOptions {
  /**
   * The partition map the engine routes by, kept current (openStore makes it); one that can
   * connect no partition a newer map adds when left out.
   */
  routing?: PartitionRouting;
  followPollIntervalMs: number;
  /** The pools a shard mover opens on its targets; 4 connections, 10 s to connect when left out. */
  moverPools?: { poolSize: number; connectTimeoutMs: number };
  /** How often each consumer group with a member here reads its rows; 200 ms when left out. */
  groupPollIntervalMs?: number;
  groupLimits?: GroupLimits;
  queryLimits?: QueryLimits;
  /** How deep and how large a body written may be; DEFAULT_BODY_LIMITS when left out. */
  bodyLimits?: BodyLimits;
  /** The largest body a cell may have (see limits.ts). */
  maxCellBytes: number;
  /** How often every partition is probed; 1000 ms when left out. */
  healthCheckIntervalMs?: number;
  /** How often each replica's lag is measured; 250 ms when left out. */
  replicaCheckIntervalMs?: number;
  /**
   * The largest answer a read of many cells (GetCells) may make, in bytes: the largest message
   * the server sends. Unbounded when left out.
   */
  maxAnswerBytes?: number;
  /**
   * How many tuples of primary values the server remembers the record of, so that a put of
   * values seen before needs no lookup; DEFAULT_PRIMARY_KEY_CACHE_ENTRIES when left out, 0 for
   * none.
   */
  primaryKeyCacheEntries?: number;
  /**
   * How many records the server remembers to exist, so that a write to a cell other than base
   * need not read the record's base cell; DEFAULT_RECORD_CACHE_ENTRIES when left out, 0 for
   * none.
   */
  recordCacheEntries?: number;
  /**
   * Bytes of cells' latest versions the server remembers, so that a write to one needs one
   * round trip instead of two; DEFAULT_VERSION_CACHE_BYTES when left out, 0 for none.
   */
  versionCacheBytes?: number;
}

/** About 20 MiB of primary values and uuids. */
export const DEFAULT_PRIMARY_KEY_CACHE_ENTRIES = 100_000;
/** About 15 MiB of model names and uuids. */
export const DEFAULT_RECORD_CACHE_ENTRIES = 100_000;
/** Consumer groups read their rows this often: a hand-over waits about this long. */
export const DEFAULT_GROUP_POLL_MS = 200;
/** How often each read replica's lag is measured, in ms. */
export const DEFAULT_REPLICA_CHECK_INTERVAL_MS = 250;
/** Some 50,000 cells of 1 KB bodies. */
export const DEFAULT_VERSION_CACHE_BYTES = 64 * 1024 * 1024;

export class Engine implements EngineStats {
  readonly models: ModelRegistry;
  private readonly cells: CellWriter;
  private readonly latest: LatestCells;
  private readonly puts: PutOperation;
  private readonly primaryKeys: PrimaryKeyCache;
  private readonly knownRecords: KnownRecords;
  private readonly versions: VersionCache;
  private readonly wheres: WhereQuery;
  private readonly log: ShardLog;
  private readonly poller: MaxIdPoller;
  /** Consumer groups: members, their shards, cursors and parked cells. */
  readonly groups: ConsumerGroups;
  readonly limits: QueryLimits;
  readonly maxCellBytes: number;
  readonly bodyLimits: BodyLimits;
  private readonly maxAnswerBytes: number | undefined;
  /** Which partitions answer, probed in the background from start() to close(). */
  readonly health: PartitionHealth;
  /** How far behind each read replica is, measured in the background from start() to close(). */
  readonly replicaMonitor: ReplicaMonitor;
  /** The partition map routing now, its publishing, and the fence of shard moves. */
  private readonly routing: PartitionRouting;
  /** Shards moved to other partitions while the store serves (MoveShards). */
  readonly moves: ShardMoves;

  constructor(
    readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    logger: Logger,
    options: EngineOptions,
  ) {
    this.routing =
      options.routing ??
      new PartitionRouting(
        layout,
        partitions,
        (id) => {
          throw new Error(`partition ${id} is new to this engine, which cannot connect to it`);
        },
        logger,
      );
    this.limits = options.queryLimits ?? DEFAULT_QUERY_LIMITS;
    this.maxCellBytes = options.maxCellBytes;
    this.bodyLimits = options.bodyLimits ?? DEFAULT_BODY_LIMITS;
    this.maxAnswerBytes = options.maxAnswerBytes;
    this.health = new PartitionHealth(
      partitions,
      options.healthCheckIntervalMs ?? 1000,
      logger,
      layout.partitionMapTable,
      (version) => this.routing.noticeVersion(version),
    );
    this.replicaMonitor = new ReplicaMonitor(
      partitions.partitions,
      options.replicaCheckIntervalMs ?? DEFAULT_REPLICA_CHECK_INTERVAL_MS,
      logger,
    );
    const notifier = new LogNotifier();
    const times = new StoredTimes(layout.createdAt);
    const indexColumns = new IndexColumns();
    const tables = new KnownTables(layout, partitions, logger, times, indexColumns);
    this.models = new ModelRegistry(layout, partitions, logger, tables);
    this.knownRecords = new KnownRecords(
      options.recordCacheEntries ?? DEFAULT_RECORD_CACHE_ENTRIES,
    );
    this.versions = new VersionCache(options.versionCacheBytes ?? DEFAULT_VERSION_CACHE_BYTES);
    const groupLimits = options.groupLimits ?? DEFAULT_GROUP_LIMITS;
    this.cells = new CellWriter(
      layout,
      partitions,
      notifier,
      times,
      this.knownRecords,
      this.versions,
      logger,
      groupLimits,
    );
    this.primaryKeys = new PrimaryKeyCache(
      options.primaryKeyCacheEntries ?? DEFAULT_PRIMARY_KEY_CACHE_ENTRIES,
    );
    const lookups = new PrimaryLookups(partitions);
    this.puts = new PutOperation(
      layout,
      partitions,
      this.cells,
      lookups,
      this.primaryKeys,
      indexColumns,
      tables,
      new CreateShards(layout, groupLimits.concurrency),
    );
    this.latest = new LatestCells(layout, partitions, this.maxCellBytes);
    this.wheres = new WhereQuery(
      layout,
      partitions,
      this.models,
      this.latest,
      this.limits,
      this.primaryKeys,
    );
    this.poller = new MaxIdPoller(partitions, options.followPollIntervalMs);
    this.log = new ShardLog(
      layout,
      partitions,
      notifier,
      this.poller,
      this.limits.maxPageRecords,
      options.maxAnswerBytes,
      this.routing,
    );
    this.groups = new ConsumerGroups(
      layout,
      partitions,
      this.models,
      this.log,
      options.groupPollIntervalMs ?? DEFAULT_GROUP_POLL_MS,
      logger,
      (scope, work) => this.routing.fenced(scope, work),
    );
    this.moves = new ShardMoves(
      this,
      options.moverPools ?? { poolSize: 4, connectTimeoutMs: 10_000 },
      logger,
    );
  }

  // Every operation takes the scope of the call it serves (callScope.ts): its deadline bounds
  // the operation's statements, its cancellation stops its reads; UNBOUNDED serves no call.

  async defineModel(
    scope: CallScope,
    spec: ModelSpec,
  ): Promise<{ model: ModelSpec; changed: boolean }> {
    // A model's tables are made where the map puts each shard: the latest map, not the one a
    // server that has not heard of a move yet routes by (nothing fences a CREATE TABLE).
    await this.routing.reload();
    // A shard being copied would miss a new model's tables on its target (the mover lists a
    // shard's tables when it starts): no new tables until those moves are cut over or aborted.
    const copying = (await this.moves.activeMoves()).filter((move) => move.phase !== 'cut_over');
    if (copying.length > 0) {
      throw new FailedPreconditionError(
        `shard(s) ${copying.map((move) => move.shard).join(', ')} are being moved: define models once ` +
          '`shameless move-shards` has cut them over (or after --abort)',
      );
    }
    return this.models.define(spec, scope);
  }

  /**
   * The store's shape and models. Models come from partition 0; with it down the last ones
   * read are described, so that the answer can still say which partitions are down.
   */
  async describe(scope: CallScope): Promise<StoreDescription> {
    await this.models.refresh(scope).catch((error: unknown) => {
      if (this.health.isUp(0)) throw error;
    });
    return {
      namespace: this.layout.namespace,
      shardsCount: this.layout.shardsCount,
      partitionMapVersion: this.layout.map.version,
      partitions: this.partitions.partitions.map((partition) => {
        const shards = this.layout.shardsOf(partition.index);
        return {
          index: partition.index,
          host: partition.location.host,
          port: partition.location.port,
          database: partition.location.database,
          location: nodeListWithoutUsers(this.layout.map.locations[partition.index] ?? ''),
          firstShard: shards[0] ?? 0,
          lastShard: shards[shards.length - 1] ?? 0,
          shards: [...shards],
          down: !this.health.isUp(partition.index),
          nodes: partition.galera?.status() ?? [],
          replicas: partition.replicas.map((replica) => {
            const { state, lagMs, replica: index } = replica.status();
            return {
              replica: index,
              host: replica.location.host,
              port: replica.location.port,
              state,
              lagMs,
            };
          }),
        };
      }),
      models: this.models.all().map((model) => model.spec),
      maxCellBytes: this.maxCellBytes,
      bodyLimits: this.bodyLimits,
    };
  }

  /** The partition map routing now (its version, each partition's location, each shard's partition). */
  get partitionMap(): PartitionMap {
    return this.routing.map;
  }

  /**
   * Publishes `next`, the current map's next version (`engine.partitionMap.moved(…)`): connects
   * to the partitions it adds, inserts it on every partition it names (creating the map table
   * where missing), then routes by it. A version another mover published first is refused
   * (FailedPreconditionError), as is one that does not follow the store's latest.
   */
  publishPartitionMap(next: PartitionMap): Promise<void> {
    return this.routing.publish(next);
  }

  /**
   * Publishes `next` as publishPartitionMap does, answering once partition 0 (where a rival
   * publish is refused) has it; `everywhere` settles once every partition has it and this engine
   * routes by it.
   */
  publishPartitionMapFirst(next: PartitionMap): Promise<{ everywhere: Promise<void> }> {
    return this.routing.publishFirst(next);
  }

  /** Makes `next` quick to publish: its new partitions connected, the map table on each. */
  preparePartitionMap(next: PartitionMap): Promise<void> {
    return this.routing.prepare(next);
  }

  /**
   * Reads the highest map version on the map's partitions and routes by it when it is newer
   * than the current; true when it was. Every server does this within a health-check period of
   * a publish, and at once when a statement finds a moved shard's table gone.
   */
  reloadPartitionMap(): Promise<boolean> {
    return this.routing.reload();
  }

  /**
   * The partition map as partition 0 holds it (where every publish lands first), routed by from
   * now on when newer; throws when partition 0 does not answer.
   */
  partitionMapAtHome(): Promise<PartitionMap> {
    return this.routing.readHome();
  }

  /** Calls `listener` with each newer partition map this engine switches to (published or read). */
  onPartitionMapChange(listener: (map: PartitionMap) => void): void {
    this.routing.onChange(listener);
  }

  /** The partition with this id (as the map numbers them), for work below the operations (a move). */
  partition(id: number): Partition {
    return this.partitions.at(id);
  }

  findShard(key: { value: number | bigint } | { uuid: string }): {
    shard: number;
    partition: number;
  } {
    const shard =
      'uuid' in key
        ? this.layout.contentShard(requireUuid(key.uuid))
        : this.layout.findShard(key.value);
    return { shard, partition: this.layout.partitionOf(shard) };
  }

  async put(
    scope: CallScope,
    modelName: string,
    values: Buffer,
    requestId: string,
  ): Promise<PutResult> {
    const model = await this.models.get(modelName, scope);
    requireRequestId(requestId);
    const put = this.puts.prepare(model, values, 'values', this.maxCellBytes, this.bodyLimits);
    return this.routing.fenced(scope, () => this.puts.put(scope, put, requestId));
  }

  /**
   * Many puts, each as put, applied concurrently. Every put is checked before anything is
   * written: a malformed one fails the whole call, naming it (`puts[3].values`). A put refused
   * on its own gets its error in its outcome: ALREADY_EXISTS, or INVALID_ARGUMENT for values
   * that no record holds and that cannot create one (they lack a secondary index's field, or
   * an index table the store did not create cannot hold them). A partition failure fails the
   * call once every put has settled.
   */
  async putMany(scope: CallScope, inputs: readonly PutInput[]): Promise<PutOutcome[]> {
    requireBatchSize(inputs.length, 'puts', this.limits.maxPutBatch);
    const puts: PreparedPut[] = [];
    for (const [i, input] of inputs.entries()) {
      const model = await naming(`puts[${i}].model`, this.models.get(input.model, scope));
      requireRequestId(input.requestId, `puts[${i}].request_id`);
      puts.push(
        this.puts.prepare(
          model,
          input.values,
          `puts[${i}].values`,
          this.maxCellBytes,
          this.bodyLimits,
        ),
      );
    }
    const settled = await Promise.allSettled(
      puts.map((put, i) =>
        this.routing.fenced(scope, () => this.puts.put(scope, put, inputs[i]!.requestId)),
      ),
    );
    return settled.map((result): PutOutcome => {
      if (result.status === 'fulfilled') return { ok: true, ...result.value };
      const refused = result.reason as unknown;
      if (refused instanceof AlreadyExistsError || refused instanceof InvalidArgumentError) {
        return { ok: false, error: refused };
      }
      throw result.reason;
    });
  }

  async writeCell(
    scope: CallScope,
    input: WriteCellInput,
  ): Promise<{ cell: StoredCell; replayed: boolean }> {
    const cell = input.cell || BASE_CELL;
    const model = await this.writeModel(scope, input.model, cell);
    const write = this.checkWrite(model, cell, input);
    return this.routing.fenced(scope, () => this.cells.append(scope, write));
  }

  /**
   * Many writes, each as writeCell, in one call. Every write is checked before anything is
   * written: a malformed one fails the whole call, naming it (`writes[3].uuid`). Then each
   * write succeeds or is refused on its own; the outcomes come in request order.
   */
  async writeCells(scope: CallScope, inputs: readonly WriteCellInput[]): Promise<AppendOutcome[]> {
    requireBatchSize(inputs.length, 'writes', this.limits.maxBatchKeys);
    // Each model is looked up once a call (the writes of a batch mostly share it), and again
    // only for a cell it lacks.
    const models = new Map<string, CompiledModel>();
    const writes: AppendRequest[] = [];
    for (const [i, input] of inputs.entries()) {
      const position = `writes[${i}]`;
      const cell = input.cell || BASE_CELL;
      let model = models.get(input.model);
      if (model === undefined || !model.cellNames.has(cell)) {
        model = await this.writeModel(scope, input.model, cell, position);
        models.set(input.model, model);
      }
      writes.push(this.checkWrite(model, cell, input, position));
    }
    return this.routing.fenced(scope, () => this.cells.appendAll(scope, writes));
  }

  /**
   * The model a write names, with the cell it writes. `position` locates the write in a batch
   * (`writes[3]`): a NOT_FOUND then names the field; a single write's needs none (the request
   * has one model and one cell).
   */
  private async writeModel(
    scope: CallScope,
    modelName: string,
    cell: string,
    position?: string,
  ): Promise<CompiledModel> {
    const field = (name: string) => (position === undefined ? undefined : `${position}.${name}`);
    const model = await naming(field('model'), this.models.get(modelName, scope));
    return naming(field('cell'), this.models.requireCell(model, cell, scope));
  }

  /** A write request checked against its model (see writeModel for `position`). */
  private checkWrite(
    model: CompiledModel,
    cell: string,
    input: WriteCellInput,
    position?: string,
  ): AppendRequest {
    const field = (name: string) => (position === undefined ? name : `${position}.${name}`);
    requireUuid(input.uuid, field('uuid'));
    requireRequestId(input.requestId, field('request_id'));
    if (input.expectedRefKey !== undefined && input.expectedRefKey < -1) {
      throw new InvalidArgumentError(
        field('expected_ref_key'),
        'must be -1 (no version yet) or a version',
      );
    }
    requireCellSize(input.body, field('body'), this.maxCellBytes);
    const body = parseBody(input.body, field('body'), this.bodyLimits);
    rejectIndexFields(model, body, field('body'));
    return {
      model,
      uuid: input.uuid,
      cell,
      content:
        input.mode === 'merge'
          ? {
              mode: 'merge',
              patch: body,
              limit: { bytes: this.maxCellBytes, field: field('body') },
            }
          : { mode: 'replace', bytes: input.body },
      expectedRefKey: input.expectedRefKey,
      requestId: input.requestId,
    };
  }

  async getCell(
    scope: CallScope,
    modelName: string,
    uuid: string,
    cellName: string,
    refKey?: number,
  ): Promise<StoredCell> {
    let model = await this.models.get(modelName, scope);
    requireUuid(uuid);
    const cell = cellName || BASE_CELL;
    model = await this.models.requireCell(model, cell, scope);
    if (refKey !== undefined && refKey < 0) {
      throw new InvalidArgumentError('ref_key', `must be 0 or more, got ${refKey}`);
    }
    if (refKey === undefined) {
      const [found] = await this.routing.fenced(scope, () =>
        this.latest.read(scope, model, [{ uuid, cell }]),
      );
      if (!found) throw new NotFoundError(`cell ${cell} of record ${uuid} has no version`);
      return found;
    }
    const shard = this.layout.contentShard(uuid);
    const row = await this.routing.fenced(scope, () =>
      this.partitions
        .forShard(shard)
        .read(scope, (reader) =>
          readCell(reader, this.layout.contentTable(model, shard), uuid, cell, refKey),
        ),
    );
    if (!row) throw new NotFoundError(`cell ${cell} of record ${uuid} has no version ${refKey}`);
    return toStoredCell(row, shard);
  }

  /**
   * The latest version of each cell (undefined for a cell with no version), in request order,
   * read with one SELECT per partition (shared with other reads of the same turn).
   */
  async getCells(
    scope: CallScope,
    modelName: string,
    keys: readonly { uuid: string; cell: string }[],
  ): Promise<(StoredCell | undefined)[]> {
    let model = await this.models.get(modelName, scope);
    requireBatchSize(keys.length, 'keys', this.limits.maxBatchKeys);
    const cells: CellKey[] = [];
    for (const [i, key] of keys.entries()) {
      requireUuid(key.uuid, `keys[${i}].uuid`);
      const cell = key.cell || BASE_CELL;
      if (!model.cellNames.has(cell)) {
        model = await naming(`keys[${i}].cell`, this.models.requireCell(model, cell, scope));
      }
      cells.push({ uuid: key.uuid, cell });
    }
    const bound = this.answerBound(1, 'ask for fewer keys (GetCells) or read them one at a time');
    return this.routing.fenced(scope, () => this.latest.read(scope, model, cells, bound));
  }

  /** A share of maxAnswerBytes for one of `parts` reads of an answer; none when unbounded. */
  private answerBound(parts: number, advice: string): AnswerBound | undefined {
    return this.maxAnswerBytes === undefined
      ? undefined
      : parts > 1
        ? {
            maxBytes: Math.floor(this.maxAnswerBytes / parts),
            advice,
            shareOf: this.maxAnswerBytes,
          }
        : { maxBytes: this.maxAnswerBytes, advice };
  }

  /** The version before refKey, or undefined at version 0. */
  async previous(
    scope: CallScope,
    modelName: string,
    uuid: string,
    cellName: string,
    refKey: number,
  ) {
    if (!Number.isInteger(refKey) || refKey < 0) {
      throw new InvalidArgumentError('ref_key', `must be 0 or more, got ${refKey}`);
    }
    if (refKey === 0) {
      // Still validate the rest of the request, so a bad one never looks like "no previous".
      await this.models.requireCell(
        await this.models.get(modelName, scope),
        cellName || BASE_CELL,
        scope,
      );
      requireUuid(uuid);
      return undefined;
    }
    return this.getCell(scope, modelName, uuid, cellName, refKey - 1);
  }

  /** One page; its cells take at most maxAnswerBytes, which bounds what the page holds. */
  where(scope: CallScope, input: WhereInput): Promise<WherePage> {
    const bound = this.answerBound(1, 'ask for fewer cells of each record');
    return this.routing.fenced(scope, () => this.wheres.page(scope, input, bound));
  }

  /**
   * Many Where queries, one page each, in request order. Errors name the query
   * (`queries[2].conditions[0].values`); the records asked for in all are bounded, and so are
   * the bytes of the answer (by maxAnswerBytes, as a GetCells answer is, each page by its even
   * share of them).
   */
  async whereMany(scope: CallScope, inputs: readonly WhereInput[]): Promise<WherePage[]> {
    requireBatchSize(inputs.length, 'queries', MAX_WHERE_BATCH);
    const asked = inputs.reduce((sum, input) => sum + (input.limit || DEFAULT_WHERE_LIMIT), 0);
    if (asked > MAX_WHERE_BATCH_RECORDS) {
      throw new InvalidArgumentError(
        'queries',
        `ask for at most ${MAX_WHERE_BATCH_RECORDS} records in all (a limit of 0 counts as ${DEFAULT_WHERE_LIMIT}), got ${asked}`,
      );
    }
    // Each page gets an even share of the answer, so that the pages read at once hold no more.
    const share = this.answerBound(
      inputs.length,
      'ask for fewer queries or smaller pages (WhereMany), or stream each page (Where)',
    );
    const pages = await Promise.all(
      inputs.map((input, i) =>
        atPosition(
          `queries[${i}]`,
          this.routing.fenced(scope, () => this.wheres.page(scope, input, share)),
        ),
      ),
    );
    // Refused before it is encoded: grpc-js would refuse to send it only after that.
    if (this.maxAnswerBytes !== undefined) {
      const bytes = pages.reduce((sum, page) => sum + pageAnswerBytes(page), 0);
      if (bytes > this.maxAnswerBytes) {
        throw answerOverBound(
          {
            maxBytes: this.maxAnswerBytes,
            advice:
              'ask for fewer queries or smaller pages (WhereMany), or stream each page (Where)',
          },
          bytes,
        );
      }
    }
    return pages;
  }

  async fetchLatestCells(
    scope: CallScope,
    modelName: string,
    shard: number,
    cursor: RowId,
    limit: number,
  ): Promise<LogPage> {
    const model = await this.models.get(modelName, scope);
    return this.routing.fenced(scope, () => this.log.fetchPage(scope, model, shard, cursor, limit));
  }

  /** The shards' logs, streamed for the call of `scope`, which ends with `signal`. */
  async each(
    scope: CallScope,
    modelName: string,
    input: EachInput,
    signal: AbortSignal,
  ): Promise<AsyncGenerator<EachEvent>> {
    const model = await this.models.get(modelName, scope);
    return this.log.each(scope, model, input, signal);
  }

  /** How many write transactions (groups) have run, and how many writes they carried. */
  writeStats(): GroupStats {
    return this.cells.stats();
  }

  primaryKeyCacheStats(): PrimaryKeyCacheStats {
    return {
      entries: this.primaryKeys.size,
      capacity: this.primaryKeys.capacity,
      ...this.primaryKeys.stats,
    };
  }

  recordCacheStats(): RecordCacheStats {
    return { entries: this.knownRecords.size, capacity: this.knownRecords.capacity };
  }

  versionCacheStats(): VersionCacheStats {
    return this.versions.stats();
  }

  consumerGroupStats(): readonly ConsumerGroupStats[] {
    return this.groups.stats();
  }

  replicaStats(): ReplicaStats[] {
    return this.partitions.partitions.flatMap((partition) =>
      partition.replicas.map((replica) => ({ ...replica.status(), reads: replica.reads })),
    );
  }

  galeraNodeStats(): GaleraNodeStats[] {
    return this.partitions.partitions.flatMap((partition) =>
      (partition.galera?.status() ?? []).map((node) => ({ ...node, partition: partition.index })),
    );
  }

  partitionMapVersion(): number {
    return this.layout.map.version;
  }

  /** Whether any partition has read replicas (else every read is the primary's). */
  get hasReplicas(): boolean {
    return this.partitions.partitions.some((partition) => partition.replicas.length > 0);
  }

  partitionActivity(): PartitionActivity[] {
    const writes = this.cells.activity();
    return this.partitions.partitions.map((partition) => ({
      partition: partition.index,
      pool: partition.poolUsage(),
      writes: writes[partition.index]!,
    }));
  }

  async close(): Promise<void> {
    // Members first: their cursors are written and their shards handed back while the
    // partitions still answer.
    await this.groups.close();
    this.health.stop();
    await this.replicaMonitor.stop();
    this.poller.stop();
    return this.partitions.end();
  }
}

/**
 * The result of one item of a batch: its errors name the item's fields with `position`
 * (`queries[2]`), as errors of a single request name the request's fields.
 */
async function atPosition<T>(position: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof InvalidArgumentError) {
      throw new InvalidArgumentError(`${position}.${error.field}`, error.reason);
    }
    if (error instanceof NotFoundError) {
      throw new NotFoundError(`${position}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * The lookup's result; when `field` is given (an item of a batch), its NOT_FOUND error names
 * that field, as INVALID_ARGUMENT errors do.
 */
async function naming<T>(field: string | undefined, lookup: Promise<T>): Promise<T> {
  if (field === undefined) return lookup;
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof NotFoundError) {
      throw new NotFoundError(`${field}: ${error.message}`, { cause: error });
    }
    // The lookup names its own field (`model`); in a batch it is this one (`puts[3].model`).
    if (error instanceof InvalidArgumentError) throw new InvalidArgumentError(field, error.reason);
    throw error;
  }
}
