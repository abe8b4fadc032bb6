// The store's partitions: one MySQL pool each, routed by shard, with partition-level failures
// turned into UnavailableError so that one partition being down never affects the others.
import { UnavailableError } from './errors.js';
import type { MysqlLocation, MysqlPool, SqlConnection } from './mysqlPool.js';
import { partitionOfShard } from './sharding.js';
import { isConnectionError, translateSqlError } from './sqlErrors.js';

export class Partition {
  /**
   * `lockPool` serves only sessions that hold a named lock (GET_LOCK) while they wait on other
   * statements. Were they taken from `pool`, enough concurrent lock holders would take every
   * connection and then wait forever for one more.
   */
  constructor(
    readonly index: number,
    readonly location: MysqlLocation,
    private readonly pool: MysqlPool,
    private readonly lockPool: MysqlPool,
  ) {}

  /** Runs work against the pool; partition-level failures become UnavailableError. */
  async run<T>(work: (pool: MysqlPool) => Promise<T>): Promise<T> {
    try {
      return await work(this.pool);
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
  }

  /**
   * Runs work on one dedicated connection (for transactions and session locks). A connection
   * that failed mid-work is destroyed rather than returned to the pool, so no half-open
   * transaction or held lock is ever reused.
   */
  withConnection<T>(work: (connection: SqlConnection) => Promise<T>): Promise<T> {
    return this.onConnection(this.pool, work);
  }

  /** Like withConnection, for a session that holds a named lock (see the constructor). */
  withLockSession<T>(work: (connection: SqlConnection) => Promise<T>): Promise<T> {
    return this.onConnection(this.lockPool, work);
  }

  private async onConnection<T>(
    pool: MysqlPool,
    work: (connection: SqlConnection) => Promise<T>,
  ): Promise<T> {
    let connection: SqlConnection;
    try {
      connection = await pool.getConnection();
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
    let healthy = true;
    try {
      return await work(connection);
    } catch (error) {
      healthy = !isConnectionError(error);
      throw translateSqlError(error, this.index);
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  async end(): Promise<void> {
    await Promise.all([this.pool.end(), this.lockPool.end()]);
  }
}

export class PartitionSet {
  constructor(
    readonly partitions: readonly Partition[],
    readonly shardsCount: number,
  ) {}

  get count(): number {
    return this.partitions.length;
  }

  forShard(shard: number): Partition {
    const partition = this.partitions[partitionOfShard(shard, this.shardsCount, this.count)];
    if (!partition) throw new UnavailableError(-1, `no partition holds shard ${shard}`);
    return partition;
  }

  at(index: number): Partition {
    const partition = this.partitions[index];
    if (!partition) throw new UnavailableError(index, `no partition ${index}`);
    return partition;
  }

  async end(): Promise<void> {
    await Promise.allSettled(this.partitions.map((partition) => partition.end()));
  }
}
