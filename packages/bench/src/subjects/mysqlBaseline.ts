// The database's limit: the statements the server runs for an operation, executed with
// mysql2 directly (the engine's own SQL functions, so the text cannot drift), by as many
// workers as the SDK run had calls in flight, each with its own connection.
import {
  DEFAULT_RECORD_CACHE_ENTRIES,
  DEFAULT_VERSION_CACHE_BYTES,
  type FieldType,
  type IndexSpec,
  contentShard,
  contentTableName,
  findShard,
  indexTableName,
} from '@shameless/server';
import {
  CREATED_AT_DIGITS,
  CompiledModel,
  KnownRecords,
  LogNotifier,
  type MysqlPool,
  Partition,
  ShardTransaction,
  type StatementReader,
  StoreLayout,
  StoredTimes,
  VersionCache,
  createMysqlPool,
  directReader,
  parseMysqlUrl,
  readConsecutiveInsertIds,
} from '@shameless/server/sql';
import { RATE_SCHEMA } from './benchStore.js';

/** Where the bench model's rows live, as the server lays them out. */
export class BaselineTables {
  constructor(
    readonly model: string,
    readonly shardsCount: number,
    readonly namespace = '',
  ) {}

  readonly logLocks = 'shameless_log_locks';

  contentShard(uuid: string): number {
    return contentShard(uuid, this.shardsCount);
  }

  content(shard: number): string {
    return contentTableName(this.namespace, this.model, shard);
  }

  contentOf(uuid: string): string {
    return this.content(this.contentShard(uuid));
  }

  /** `items` grouped by the content shard of their uuid, as the server groups them. */
  byShard<T extends { uuid: string }>(items: Iterable<T>): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const item of items) {
      const shard = this.contentShard(item.uuid);
      const group = groups.get(shard);
      if (group) group.push(item);
      else groups.set(shard, [item]);
    }
    return groups;
  }

  index(index: string, shardOnValue: number): string {
    return indexTableName(
      this.namespace,
      this.model,
      index,
      findShard(shardOnValue, this.shardsCount),
    );
  }
}

export interface BaselinePools {
  /** One connection per worker. */
  readonly pool: MysqlPool;
  /** Reads on the pool, one round trip per call (the server coalesces; this does not). */
  readonly reader: StatementReader;
  /**
   * The server's write transaction over the pool: each call is its own transaction (the server
   * groups concurrent writes; this does not).
   */
  readonly transaction: ShardTransaction;
  /** The bench model as the engine sees it. */
  readonly model: CompiledModel;
  end(): Promise<void>;
}

/** Raw mysql2 pools for `workers` workers. */
export async function openBaselinePools(
  partitionUrl: string,
  workers: number,
  tables: BaselineTables,
): Promise<BaselinePools> {
  const location = parseMysqlUrl(partitionUrl);
  const pool = createMysqlPool(location, { connectionLimit: workers, connectTimeoutMs: 5000 });
  const layout = new StoreLayout(tables.namespace, tables.shardsCount, 1);
  // The server made the bench's tables (created_at DATETIME(6)): where the partition gives a
  // multi-row INSERT consecutive ids, the baseline's writes need no read-back, as the server's.
  const partition = new Partition(0, location, pool);
  partition.insertIdsConsecutive = await readConsecutiveInsertIds(pool);
  const times = new StoredTimes(layout.createdAt);
  for (let shard = 0; shard < tables.shardsCount; shard++) {
    times.learn(tables.content(shard), CREATED_AT_DIGITS);
  }
  // Records it has seen, and the versions it wrote, are remembered, as the server remembers them.
  const transaction = new ShardTransaction(
    layout,
    partition,
    new LogNotifier(),
    times,
    new KnownRecords(DEFAULT_RECORD_CACHE_ENTRIES),
    new VersionCache(DEFAULT_VERSION_CACHE_BYTES),
  );
  return {
    pool,
    reader: directReader(pool),
    transaction,
    model: new CompiledModel({
      name: tables.model,
      primaryIndex: PRIMARY,
      secondaryIndices: [SECONDARY],
      cells: ['meta'],
    }),
    end: () => pool.end(),
  };
}

/** An index of the bench model as the engine's SQL functions take it. */
function indexSpec(
  name: string,
  index: { fields: Record<string, FieldType>; shardOn: string },
): IndexSpec {
  const fields = Object.entries(index.fields).map(([field, type]) => ({ name: field, type }));
  return { name, shardOn: index.shardOn, fields };
}
export const PRIMARY = indexSpec('primary', RATE_SCHEMA.primary);
export const SECONDARY = indexSpec('secondary', RATE_SCHEMA.indices.secondary);
