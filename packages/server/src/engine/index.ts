export type { AppendOutcome } from './cellWriter.js';
export {
  DEFAULT_PRIMARY_KEY_CACHE_ENTRIES,
  DEFAULT_RECORD_CACHE_ENTRIES,
  DEFAULT_VERSION_CACHE_BYTES,
  Engine,
  MAX_WHERE_BATCH,
  MAX_WHERE_BATCH_RECORDS,
  type PutInput,
  type PutOutcome,
  type StoreDescription,
  type WriteCellInput,
} from './engine.js';
export type {
  EngineStats,
  PartitionActivity,
  PrimaryKeyCacheStats,
  RecordCacheStats,
} from './engineStats.js';
export * from './errors.js';
export {
  DEFAULT_GROUP_LIMITS,
  GROUP_SIZE_BOUNDS,
  type GroupActivity,
  type GroupStats,
} from './groupCommit.js';
export { ANSWER_BYTES_PER_CELL } from './latestCells.js';
export { DEFAULT_QUERY_LIMITS, type QueryLimits } from './limits.js';
export type { Logger } from './logger.js';
export { silentLogger } from './logger.js';
export type { FieldSpec, FieldType, IndexSpec, ModelSpec } from './model.js';
export { BASE_CELL } from './model.js';
export type { PoolUsage } from './mysqlPool.js';
export { openStore, StoreConfigError, type StoreConfig, type StoreShape } from './openStore.js';
export {
  EACH_CELLS_HELD_BYTES,
  type EachEvent,
  type EachInput,
  logPageBodyBytes,
} from './shardLog.js';
export type { StoredCell } from './sql/contentRows.js';
export type { IndexScalar, Operator } from './sql/indexTable.js';
export * from './sharding.js';
export * from './tableNames.js';
export type { FoundRecord, WhereCondition, WhereInput, WherePage } from './whereQuery.js';
