// An engine over a fixture's first database whose partition a test makes (a subclass that
// observes what the engine sends), set up as openStore sets up its own: insert ids known to be
// consecutive where MariaDB makes them so, and the tables' created_at digits learned, so that
// writes take the paths they take in a server.
import { expect } from 'chai';
import { Engine } from '../../src/engine/engine.js';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { silentLogger } from '../../src/engine/base/logger.js';
import {
  type MysqlLocation,
  type MysqlPool,
  createMysqlPool,
  parseMysqlUrl,
} from '../../src/engine/mysql/mysqlPool.js';
import { type Partition, PartitionSet } from '../../src/engine/mysql/partitions.js';
import { readConsecutiveInsertIds } from '../../src/engine/mysql/sql/serverVariables.js';
import type { StoreFixture } from './storeFixture.js';

export async function startObservedEngine<P extends Partition>(
  store: StoreFixture,
  makePartition: (location: MysqlLocation, pool: MysqlPool) => P,
  options: { followPollIntervalMs: number },
): Promise<{ engine: Engine; partition: P }> {
  const location = parseMysqlUrl(store.partitionUrls[0]!);
  const pool = createMysqlPool(location, { connectionLimit: 8, connectTimeoutMs: 2000 });
  const partition = makePartition(location, pool);
  partition.insertIdsConsecutive = await readConsecutiveInsertIds(pool);
  const engine = new Engine(
    store.engine.layout,
    new PartitionSet([partition], store.engine.layout.shardsCount),
    silentLogger,
    { followPollIntervalMs: options.followPollIntervalMs, maxCellBytes: 1024 * 1024 },
  );
  await engine.models.refresh(UNBOUNDED);
  expect(await engine.models.createdAtProblem(), 'created_at as the store expects').to.equal(
    undefined,
  );
  return { engine, partition };
}
