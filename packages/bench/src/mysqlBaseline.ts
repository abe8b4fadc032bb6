// The database's limit: the statements the server runs for an operation, executed with
// mysql2 directly (the engine's own SQL functions, so the text cannot drift), by as many
// workers as the SDK run had calls in flight, each with its own connection.
import { contentShard, contentTableName, findShard, indexTableName } from '@shameless/server';
import { type MysqlPool, createMysqlPool, parseMysqlUrl } from '@shameless/server/sql';

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
  /** For sessions holding a named lock while they use `pool` (Put's create path). */
  readonly lockPool: MysqlPool;
  end(): Promise<void>;
}

/** Raw mysql2 pools for `workers` workers; connections open on first use. */
export function openBaselinePools(partitionUrl: string, workers: number): BaselinePools {
  const location = parseMysqlUrl(partitionUrl);
  const pool = createMysqlPool(location, { connectionLimit: workers, connectTimeoutMs: 5000 });
  const lockPool = createMysqlPool(location, { connectionLimit: workers, connectTimeoutMs: 5000 });
  return {
    pool,
    lockPool,
    end: async () => void (await Promise.all([pool.end(), lockPool.end()])),
  };
}
