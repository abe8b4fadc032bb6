// A partition of one pooled connection whose reads the MySQL server stops itself at their
// deadline (the engine's own setup: readTimeLimitFor the server's version), for tests of what
// happens on that one connection: whether it survives a stopped read, what it prepares.
import {
  createMysqlPool,
  parseMysqlUrl,
  type PoolOptions,
} from '../../src/engine/mysql/mysqlPool.js';
import { Partition } from '../../src/engine/mysql/partitions.js';
import { readTimeLimitFor } from '../../src/engine/mysql/sql/readTimeLimit.js';
import { readServerVersion } from '../../src/engine/mysql/sql/serverVariables.js';

export async function oneConnectionPartition(
  url: string,
  options: Partial<PoolOptions> = {},
): Promise<Partition> {
  const location = parseMysqlUrl(url);
  const pool = createMysqlPool(location, {
    connectTimeoutMs: 2000,
    ...options,
    connectionLimit: 1,
  });
  const partition = new Partition(0, location, pool);
  const timeLimit = readTimeLimitFor(await readServerVersion(pool));
  if (timeLimit === undefined) {
    await partition.end();
    throw new Error(
      'the test server stops no read itself: MariaDB, or MySQL 5.7.8 or later, wanted',
    );
  }
  partition.limitReadsOnServer(timeLimit);
  return partition;
}
