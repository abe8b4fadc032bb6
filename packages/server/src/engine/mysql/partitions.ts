// The store's partitions: one MySQL pool each, routed by shard, with partition-level failures
// turned into UnavailableError so that one partition being down never affects the others.
import { UnavailableError } from '../base/errors.js';
import type { MysqlLocation, MysqlPool, PoolUsage, SqlConnection } from './mysqlPool.js';
import { ReadCoalescer } from './readCoalescer.js';
import { partitionOfShard } from '../model/sharding.js';
import type { ReadTimeLimit } from './sql/readTimeLimit.js';
import { ROLLBACK, runTogether, type StatementReader } from './sql/statement.js';
import { isConnectionError, translateSqlError } from './sqlErrors.js';

export class Partition {
  private reader: ReadCoalescer;
  /**
   * Whether the rows of a multi-row INSERT take consecutive ids from its first
   * (readConsecutiveInsertIds): read at start; until then, and where not, writes read their
   * ids back.
   */
  insertIdsConsecutive = false;

  constructor(
    readonly index: number,
    readonly location: MysqlLocation,
    private readonly pool: MysqlPool,
  ) {
    this.reader = new ReadCoalescer(pool.reads);
  }

  /**
   * From now on the partition's server stops reads itself at their deadline (or the statement
   * timeout), with the limit its flavour understands: set once at start, when it is known.
   */
  limitReadsOnServer(timeLimit: ReadTimeLimit): void {
    this.reader = new ReadCoalescer(this.pool.reads, undefined, timeLimit);
  }

  /**
   * Runs reads through the partition's coalescer: reads issued in the same turn of the event
   * loop share one round trip, unless `apart` (each its own). Partition-level failures become
   * UnavailableError.
   */
  async read<T>(work: (reader: StatementReader) => Promise<T>, apart = false): Promise<T> {
    try {
      return await work(apart ? this.reader.apart : this.reader);
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
  }

  /** Runs work against the pool; partition-level failures become UnavailableError. */
  async run<T>(work: (pool: MysqlPool) => Promise<T>): Promise<T> {
    try {
      return await work(this.pool);
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
  }

  /**
   * Runs work on one dedicated connection (for transactions and session locks). When the work
   * fails, its connection goes back to the pool only once a ROLLBACK has ended whatever
   * transaction it left open (a statement that failed mid-transaction, a lock wait timeout,
   * stops a multi-statement before its COMMIT); otherwise it is destroyed. So no half-open
   * transaction, its snapshot and its locks, is ever reused by the next caller.
   */
  async withConnection<T>(work: (connection: SqlConnection) => Promise<T>): Promise<T> {
    let connection: SqlConnection;
    try {
      connection = await this.pool.getConnection();
    } catch (error) {
      throw translateSqlError(error, this.index);
    }
    let healthy = true;
    try {
      return await work(connection);
    } catch (error) {
      healthy =
        !isConnectionError(error) &&
        (await runTogether(connection, [ROLLBACK]).then(
          () => true,
          () => false,
        ));
      throw translateSqlError(error, this.index);
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  poolUsage(): PoolUsage {
    return this.pool.usage();
  }

  async end(): Promise<void> {
    await this.pool.end();
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
