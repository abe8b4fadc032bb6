// The engine's SQL statements and its MySQL pool, for tools that must run exactly what the
// server runs: the benchmark's raw-mysql2 baseline executes these same functions. Not part of
// the service's API; the wire contract is proto/.
export * from './engine/mysql/sql/contentDdl.js';
export * from './engine/mysql/sql/contentReads.js';
export * from './engine/mysql/sql/contentRows.js';
export * from './engine/mysql/sql/contentWrites.js';
export * from './engine/mysql/sql/indexTable.js';
export * from './engine/mysql/sql/statement.js';
export { type ReadTimeLimit, readTimeLimitFor } from './engine/mysql/sql/readTimeLimit.js';
export { DEFAULT_PREPARED_READS_PER_CONNECTION } from './engine/mysql/preparedReads.js';
export {
  createMysqlPool,
  parseMysqlUrl,
  type MysqlPool,
  type Row,
  type SqlSession,
} from './engine/mysql/mysqlPool.js';
// The transaction every content write goes through, for a baseline that runs it one write at a
// time (no group commit, no gRPC) over its own pool.
export { parseBody } from './engine/base/body.js';
export { DEFAULT_BODY_LIMITS } from './engine/base/bodyRules.js';
export { MEDIUMBLOB_BYTES } from './engine/base/limits.js';
export { StoreLayout } from './engine/model/layout.js';
// Where a uuid's content lies, for a tool that must place records in chosen shards.
export { withContentShard } from './engine/model/sharding.js';
export { KnownRecords } from './engine/write/knownRecords.js';
export { VersionCache } from './engine/base/versionCache.js';
export { LogNotifier } from './engine/log/logNotifier.js';
export { CompiledModel } from './engine/model/model.js';
export { Partition } from './engine/mysql/partitions.js';
export { ShardTransaction } from './engine/write/shardTransaction.js';
export { StoredTimes } from './engine/model/storedTimes.js';
export { readConsecutiveInsertIds } from './engine/mysql/sql/serverVariables.js';
export type { WriteItem } from './engine/write/writeItems.js';
