// The engine's SQL statements and its MySQL pool, for tools that must run exactly what the
// server runs: the benchmark's raw-mysql2 baseline executes these same functions. Not part of
// the service's API; the wire contract is proto/.
export * from './engine/sql/contentDdl.js';
export * from './engine/sql/contentReads.js';
export * from './engine/sql/contentRows.js';
export * from './engine/sql/contentWrites.js';
export * from './engine/sql/indexTable.js';
export * from './engine/sql/statement.js';
export {
  createMysqlPool,
  parseMysqlUrl,
  type MysqlPool,
  type Row,
  type SqlSession,
} from './engine/mysqlPool.js';
// The transaction every content write goes through, for a baseline that runs it one write at a
// time (no group commit, no gRPC) over its own pool.
export { parseBody } from './engine/body.js';
export { MEDIUMBLOB_BYTES } from './engine/limits.js';
export { StoreLayout } from './engine/layout.js';
export { KnownRecords } from './engine/knownRecords.js';
export { VersionCache } from './engine/versionCache.js';
export { LogNotifier } from './engine/logNotifier.js';
export { CompiledModel } from './engine/model.js';
export { Partition } from './engine/partitions.js';
export { ShardTransaction } from './engine/shardTransaction.js';
export { StoredTimes } from './engine/storedTimes.js';
export { readConsecutiveInsertIds } from './engine/sql/serverVariables.js';
export type { WriteItem } from './engine/writeItems.js';
