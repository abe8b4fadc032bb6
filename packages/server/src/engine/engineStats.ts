// The engine's numbers for metrics, behind a narrow read-only interface: the metrics endpoint
// reads them when scraped, so the engine needs no metrics library and pays nothing per call.
import type { GroupActivity, GroupStats } from './write/groupCommit.js';
import type { PoolUsage } from './mysql/mysqlPool.js';
import type { ConsumerGroupStats } from './groups/consumerGroups.js';
import type { GaleraNodeStatus } from './mysql/galeraNodes.js';
import type { ReplicaStatus } from './mysql/replicas.js';

export interface PartitionActivity {
  readonly partition: number;
  /** Its MySQL connection pool. */
  readonly pool: PoolUsage;
  /** Its group commit: transactions and writes so far, running and waiting now, group sizes. */
  readonly writes: GroupActivity;
}

export interface EngineStats {
  /** How many write transactions (groups) have run, and how many writes they carried. */
  writeStats(): GroupStats;
  /** Each partition's pool and group commit now, by partition index. */
  partitionActivity(): readonly PartitionActivity[];
  /** The primary-key cache: entries held now and at most, lookups answered and not so far. */
  primaryKeyCacheStats(): PrimaryKeyCacheStats;
  /** The records remembered to exist: entries held now and at most. */
  recordCacheStats(): RecordCacheStats;
  /** The cells whose latest version is remembered: entries, and lookups by what they found. */
  versionCacheStats(): VersionCacheStats;
  /** Each consumer group that had a member on this server: members, counts, lag per shard. */
  consumerGroupStats(): readonly ConsumerGroupStats[];
  /** Each read replica: its state and lag as last measured, and the reads it answered. */
  replicaStats(): readonly ReplicaStats[];
  /** Each node of each partition on Galera: current, standby or down, as last found. */
  galeraNodeStats(): readonly GaleraNodeStats[];
  /** The version of the partition map routing now (0: the store never moved a shard). */
  partitionMapVersion(): number;
}

export interface GaleraNodeStats extends GaleraNodeStatus {
  readonly partition: number;
}

export interface ReplicaStats extends ReplicaStatus {
  /** Reads (round trips) it has answered so far. */
  readonly reads: number;
}

export interface VersionCacheStats {
  readonly entries: number;
  /** Bytes the entries count (bodies and keys), at most about `capacityBytes`. */
  readonly bytes: number;
  /** Of those, the cells of records just created, not written to since: at most a quarter. */
  readonly createdBytes: number;
  readonly capacityBytes: number;
  /** Writes that found their cell remembered. */
  readonly hits: number;
  readonly misses: number;
  /** Remembered versions that a write found were no longer the latest. */
  readonly stale: number;
}

export interface RecordCacheStats {
  readonly entries: number;
  readonly capacity: number;
}

export interface PrimaryKeyCacheStats {
  readonly entries: number;
  readonly capacity: number;
  readonly hits: number;
  readonly misses: number;
}
