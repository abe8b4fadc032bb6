export type { AppendOutcome } from './write/cellWriter.js';
export {
  DEFAULT_PRIMARY_KEY_CACHE_ENTRIES,
  DEFAULT_RECORD_CACHE_ENTRIES,
  DEFAULT_REPLICA_CHECK_INTERVAL_MS,
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
  ReplicaStats,
  PrimaryKeyCacheStats,
  RecordCacheStats,
} from './engineStats.js';
export * from './base/errors.js';
export { type CallScope, UNBOUNDED, deadlineScope } from './base/callScope.js';
export {
  DEFAULT_GROUP_LIMITS,
  GROUP_SIZE_BOUNDS,
  type GroupActivity,
  type GroupStats,
} from './write/groupCommit.js';
export { ANSWER_BYTES_PER_CELL } from './read/latestCells.js';
export { DEFAULT_BODY_LIMITS, type BodyLimits } from './base/bodyRules.js';
export { DEFAULT_QUERY_LIMITS, type QueryLimits } from './base/limits.js';
export type { Logger } from './base/logger.js';
export { silentLogger } from './base/logger.js';
export type { FieldSpec, FieldType, IndexScalar, IndexSpec, ModelSpec } from './model/model.js';
export { BASE_CELL } from './model/model.js';
export type { PoolUsage } from './mysql/mysqlPool.js';
export { DEFAULT_PREPARED_READS_PER_CONNECTION } from './mysql/preparedReads.js';
export {
  DEFAULT_REPLICA_MAX_LAG_MS,
  DEFAULT_REPLICA_WAIT_MS,
  openStore,
  StoreConfigError,
  type ReplicaConfig,
  type StoreConfig,
  type StoreShape,
} from './openStore.js';
export { redactUrl } from './mysql/mysqlPool.js';
export {
  EACH_CELLS_HELD_BYTES,
  type EachEvent,
  type EachInput,
  logPageBodyBytes,
} from './log/shardLog.js';
export type { StoredCell } from './mysql/sql/contentRows.js';
export type { Operator } from './mysql/sql/indexTable.js';
export * from './model/sharding.js';
export { PartitionMap, type PartitionMapRecord, type ShardRange } from './model/partitionMap.js';
export * from './model/tableNames.js';
export type { FoundRecord, WhereCondition, WhereInput, WherePage } from './read/whereQuery.js';
export {
  type ConsumerGroupStats,
  GROUP_DEFAULTS,
  type GroupDescription,
  type JoinInput,
} from './groups/consumerGroups.js';
export type { Delivery, GroupEvent } from './groups/groupEvents.js';
export { LAG_COUNT_CAP, type ShardDescription } from './groups/groupStore.js';
export {
  type MemberSession,
  SESSION_CELLS_HELD_BYTES,
  SessionEndedError,
} from './groups/memberSession.js';
export { type MoveAction, type MoveOutcome } from './shardMoves.js';
export type { MovePhase, MoveProgress, MoveSummary } from './moves/shardMover.js';
