// Opening a store: connect to every partition (creating its database when missing), create
// the bookkeeping tables it lacks, check that the data there was written with this layout and
// this created_at kind, and load the model definitions. Every schema change is logged.
import { UNBOUNDED } from './base/callScope.js';
import { applySchemaChanges } from './schema/applySchemaChanges.js';
import { Engine } from './engine.js';
import type { GroupLimits } from './write/groupCommit.js';
import { isNamespace } from './model/identifiers.js';
import type { BodyLimits } from './base/bodyRules.js';
import { type QueryLimits, maxCellBytesFor } from './base/limits.js';
import { StoreLayout } from './model/layout.js';
import type { Logger } from './base/logger.js';
import {
  type MysqlLocation,
  type SqlSession,
  createMysqlPool,
  databaseExists,
  ensureDatabase,
  parseMysqlUrl,
  redactUrl,
  serverConnection,
} from './mysql/mysqlPool.js';
import { GaleraNodes, parseNodeList, redactNodeList } from './mysql/galeraNodes.js';
import { Partition, PartitionSet } from './mysql/partitions.js';
import { CAUSAL_READS, readNodeState } from './mysql/sql/galera.js';
import { Replica } from './mysql/replicas.js';
import type { CallScope } from './base/callScope.js';
import type { GtidPosition } from './base/gtidPosition.js';
import { bookkeepingChanges, bookkeepingTables } from './schema/schemaPlan.js';
import { shardLayoutProblem } from './model/sharding.js';
import { isAccessDenied, isTlsFailure } from './mysql/sqlErrors.js';
import type { CreatedAtKind } from './model/layout.js';
import { inspectTables } from './mysql/sql/schemaInspection.js';
import { readTimeLimitFor } from './mysql/sql/readTimeLimit.js';
import { DEFAULT_PREPARED_READS_PER_CONNECTION } from './mysql/preparedReads.js';
import {
  readLogsGtids,
  readConsecutiveInsertIds,
  readMaxAllowedPacket,
  readServerVersion,
} from './mysql/sql/serverVariables.js';
import { type StoreRecord, claimStoreRecord } from './mysql/sql/storeTables.js';
import { PartitionMap } from './model/partitionMap.js';
import { ensurePartitionMapTable, readLatestPartitionMap } from './mysql/sql/partitionMap.js';
import { PartitionRouting } from './mysql/partitionRouting.js';

export interface StoreConfig {
  namespace: string;
  shardsCount: number;
  /** mysql://user:password@host:port/database, one per partition, in a fixed order. */
  partitionUrls: readonly string[];
  /**
   * What content tables hold in created_at: `bigint` (milliseconds) for a store the gem made
   * with legacy_created_at_is_bigint; `datetime` when left out.
   */
  createdAt?: CreatedAtKind;
  poolSize: number;
  connectTimeoutMs: number;
  /** The longest one statement may run before its connection is destroyed; unbounded if left out. */
  statementTimeoutMs?: number;
  /**
   * Statements each connection keeps prepared for repeated point reads (0: none);
   * DEFAULT_PREPARED_READS_PER_CONNECTION if left out.
   */
  preparedReadsPerConnection?: number;
  /** How often every partition is probed for health; 1000 ms when left out. */
  healthCheckIntervalMs?: number;
  /** Read replicas: each a MySQL URL and the index of the partition whose primary it replicates. */
  replicas?: readonly ReplicaConfig[];
  /** How often each replica's lag is measured; the engine's default if left out. */
  replicaCheckIntervalMs?: number;
  /** How stale a replica may be and still serve reads, in ms; DEFAULT_REPLICA_MAX_LAG_MS if left out. */
  replicaMaxLagMs?: number;
  /** How long a `session` read waits for a replica to catch up before reading the primary; DEFAULT_REPLICA_WAIT_MS if left out. */
  replicaWaitMs?: number;
  /** How long to wait for partitions to come up at start. */
  startupTimeoutMs: number;
  followPollIntervalMs: number;
  /** How often each consumer group with a member here reads its rows; the engine's default if left out. */
  groupPollIntervalMs?: number;
  /** How writes are grouped into transactions; the defaults otherwise. */
  groupLimits?: GroupLimits;
  /** Caps on what one request may ask; the defaults otherwise. */
  queryLimits?: QueryLimits;
  /** How deep and how large a body written may be; the defaults otherwise. */
  bodyLimits?: BodyLimits;
  /** The largest answer of a GetCells, in bytes (the largest message sent); unbounded if left out. */
  maxAnswerBytes?: number;
  /** Tuples of primary values whose record is remembered; the engine's default if left out. */
  primaryKeyCacheEntries?: number;
  /** Records remembered to exist; the engine's default if left out. */
  recordCacheEntries?: number;
  /** Cells whose latest version is remembered; the engine's default if left out. */
  versionCacheBytes?: number;
}

export interface ReplicaConfig {
  partition: number;
  url: string;
}

export const DEFAULT_REPLICA_MAX_LAG_MS = 1000;
export const DEFAULT_REPLICA_WAIT_MS = 20;

/** The store cannot be opened as configured; the message says what to change. */
export class StoreConfigError extends Error {}

/**
 * The settings that say what a store's data is and where it lives: all that `shameless plan`
 * needs.
 */
export type StoreShape = Pick<
  StoreConfig,
  'namespace' | 'shardsCount' | 'partitionUrls' | 'createdAt'
>;

/**
 * The layout and the partitions' locations of a valid configuration; connects to nothing.
 * `mapped`: a list whose length does not divide the shard count is let through (its
 * `listProblem` said), for a store whose partition map then says where each shard is.
 */
export function checkStoreShape(
  config: StoreShape,
  mapped = false,
): {
  /** Why the list cannot serve a store that never moved a shard (only with `mapped`). */
  listProblem?: string;
  layout: StoreLayout;
  /** Each partition's server, or the first of its Galera nodes. */
  locations: MysqlLocation[];
  /** Each partition's servers: one, or the nodes of its Galera cluster. */
  nodes: MysqlLocation[][];
} {
  if (!isNamespace(config.namespace)) {
    throw new StoreConfigError(
      `namespace ${JSON.stringify(config.namespace)} must be empty or a lowercase identifier ([a-z][a-z0-9_]*)`,
    );
  }
  let listProblem = shardLayoutProblem(config.shardsCount, config.partitionUrls.length);
  // Only the list's length against the shard count can be a moved store's map's business.
  if (listProblem && !(mapped && shardLayoutProblem(config.shardsCount, 1) === undefined)) {
    throw new StoreConfigError(listProblem);
  }
  if (!mapped) listProblem = undefined;
  const nodes = config.partitionUrls.map((url, i) => {
    try {
      const locations = parseNodeList(url);
      // Their TLS files read now: one that cannot be used stops the start, naming it.
      for (const location of locations) serverConnection(location);
      return locations;
    } catch (error) {
      throw new StoreConfigError(
        `--partition / SHAMELESS_PARTITIONS, partition ${i}: ${(error as Error).message}`,
      );
    }
  });
  const locations = nodes.map((list) => list[0]!);
  const layout = new StoreLayout(
    config.namespace,
    config.shardsCount,
    locations.length,
    config.createdAt ?? 'datetime',
  );
  layout.useMap(PartitionMap.initial(config.partitionUrls, config.shardsCount));
  return { layout, locations, nodes, ...(listProblem ? { listProblem } : {}) };
}

/**
 * Why a partition's recorded layout forbids serving it with this configuration, or undefined
 * when they agree.
 */
export function storeRecordProblem(
  stored: StoreRecord,
  layout: StoreLayout,
  partitionIndex: number,
  location: MysqlLocation,
): string | undefined {
  if (layout.map.version > 0) {
    // A store that moved shards: its partitions are known by their ids in the map, and a
    // partition a move added records the map's count when it was added.
    if (stored.shardsCount === layout.shardsCount && stored.partitionIndex === partitionIndex) {
      return undefined;
    }
    return (
      `partition ${partitionIndex} (${describeLocation(location)}) of partition map version ${layout.map.version} ` +
      `belongs to a store created with shardsCount=${stored.shardsCount}, as partition ${stored.partitionIndex}; ` +
      `this server was started with shardsCount=${layout.shardsCount}, and the map says it is partition ${partitionIndex}. ` +
      `Start with --shards-count ${stored.shardsCount}, or use another namespace or database for a new store.`
    );
  }
  if (
    stored.shardsCount === layout.shardsCount &&
    stored.partitionCount === layout.partitionCount &&
    stored.partitionIndex === partitionIndex
  ) {
    return undefined;
  }
  return (
    `partition ${partitionIndex} (${describeLocation(location)}) belongs to a store ` +
    `created with shardsCount=${stored.shardsCount} and ${stored.partitionCount} partition(s), as partition ` +
    `${stored.partitionIndex}; this server was started with shardsCount=${layout.shardsCount} and ` +
    `${layout.partitionCount} partition(s). Changing either would silently remap stored data: start with ` +
    `--shards-count ${stored.shardsCount} and the original partition URLs in their original order, ` +
    `or use another namespace or database for a new store.`
  );
}

export async function openStore(config: StoreConfig, logger: Logger): Promise<Engine> {
  const { layout, locations, nodes, listProblem } = checkStoreShape(config, true);

  const replicaLocations = checkReplicas(config.replicas ?? [], nodes);
  await Promise.all(nodes.map((list, i) => waitForAnyNode(list, i, config, logger)));
  const poolOptions = {
    connectionLimit: config.poolSize,
    connectTimeoutMs: config.connectTimeoutMs,
    statementTimeoutMs: config.statementTimeoutMs,
    preparedReadsPerConnection:
      config.preparedReadsPerConnection ?? DEFAULT_PREPARED_READS_PER_CONNECTION,
  };
  /** A partition's pool(s), by id: one server, or the nodes of a Galera cluster. */
  const makePartition = (
    id: number,
    partitionNodes: readonly MysqlLocation[],
    partitionReplicas: readonly MysqlLocation[],
  ): Partition => {
    const location = partitionNodes[0]!;
    const replicas = partitionReplicas.map(
      (replica, r) =>
        new Replica(
          id,
          r,
          replica,
          createMysqlPool(replica, poolOptions),
          config.replicaMaxLagMs ?? DEFAULT_REPLICA_MAX_LAG_MS,
        ),
    );
    // A partition with replicas learns the GTID of each commit, for its callers' tokens.
    const onCommit =
      replicas.length > 0
        ? (scope: CallScope, position: GtidPosition) => scope.commits?.record(id, position)
        : undefined;
    const galera =
      partitionNodes.length > 1
        ? new GaleraNodes(
            id,
            partitionNodes.map((node) => ({
              location: node,
              pool: createMysqlPool(node, { ...poolOptions, sessionStatements: [CAUSAL_READS] }),
            })),
            logger,
          )
        : undefined;
    return new Partition(
      id,
      location,
      galera ?? createMysqlPool(location, { ...poolOptions, onCommit }),
      replicas,
      config.replicaWaitMs ?? DEFAULT_REPLICA_WAIT_MS,
      galera,
    );
  };
  /** The pools of partition `id` of a map at `location`: the list's own URL where it names the same place. */
  const partitionAt = (id: number, location: string): Partition => {
    const listed = listedEntryOf(location, nodes);
    return listed === undefined
      ? makePartition(id, parseNodeList(location), [])
      : makePartition(id, nodes[listed]!, replicaLocations[listed]!);
  };
  let partitions = new PartitionSet(
    locations.map((_, i) => makePartition(i, nodes[i]!, replicaLocations[i]!)),
    config.shardsCount,
    layout,
  );
  try {
    // The map a moved store routes by: the highest version on the listed partitions, then the
    // highest on the partitions of that map (any of them can say where every shard is).
    let map = await highestMap(partitions, layout);
    while (map.version > 0) {
      refuseUnmapped(map, nodes, config);
      await partitions.end();
      partitions = new PartitionSet([], config.shardsCount, layout);
      for (let id = 0; id < map.partitionCount; id++) {
        const location = map.locations[id]!;
        if (listedEntryOf(location, nodes) === undefined) {
          // Its messages name the map's URL for it, which no --partition gave.
          await waitForAnyNode(
            parseNodeList(location),
            id,
            { ...config, partitionUrls: map.locations },
            logger,
          );
        }
        partitions.add(partitionAt(id, location));
      }
      const newer = await highestMap(partitions, layout);
      if (newer.version <= map.version) break;
      map = newer;
    }
    // A list the gem's ranges cannot spread the shards over serves only a store that moved.
    if (map.version === 0 && listProblem) throw new StoreConfigError(listProblem);
    if (map.version > 0) {
      layout.useMap(map);
      logger.info('routing by partition map', {
        version: map.version,
        partitions: map.partitionCount,
      });
    }
    const maxAllowedPackets: number[] = [];
    for (const partition of partitions.partitions) {
      await partition.run(UNBOUNDED, async (pool) => {
        if (partition.replicas.length > 0 && !(await readLogsGtids(pool))) {
          throw new StoreConfigError(
            `partition ${partition.index} (${describeLocation(partition.location)}) has read replicas but does not log ` +
              'its commits (log_bin is OFF): start its MariaDB with log-bin, so that replicas can replicate it and ' +
              'session reads can wait for a write, or remove --replica for it.',
          );
        }
        if (partition.galera) await checkGaleraNode(partition, pool);
        maxAllowedPackets.push(await readMaxAllowedPacket(pool));
        const timeLimit = readTimeLimitFor(await readServerVersion(pool));
        if (timeLimit) partition.limitReadsOnServer(timeLimit);
        partition.insertIdsConsecutive = await readConsecutiveInsertIds(pool);
        const existing = await inspectTables(pool, bookkeepingTables(layout));
        await applySchemaChanges(
          pool,
          bookkeepingChanges(layout, partition.index, existing),
          logger,
          {
            concurrency: 1,
            fields: { partition: partition.index },
          },
        );
        const stored = await claimStoreRecord(pool, layout.storeTable, {
          namespace: config.namespace,
          shardsCount: config.shardsCount,
          partitionCount: layout.partitionCount,
          partitionIndex: partition.index,
        });
        const problem = storeRecordProblem(stored, layout, partition.index, partition.location);
        if (problem) throw new StoreConfigError(problem);
      });
    }
    // A partition a newer map adds while the server runs: connected, and read as at start.
    const connectLater = async (id: number, location: string): Promise<Partition> => {
      const partition = partitionAt(id, location);
      await partition
        .run(UNBOUNDED, async (pool) => {
          const timeLimit = readTimeLimitFor(await readServerVersion(pool));
          if (timeLimit) partition.limitReadsOnServer(timeLimit);
          partition.insertIdsConsecutive = await readConsecutiveInsertIds(pool);
        })
        .catch((error: unknown) =>
          logger.warn('partition added by the partition map does not answer yet', {
            partition: id,
            reason: (error as Error).message,
          }),
        );
      return partition;
    };
    const routing = new PartitionRouting(layout, partitions, connectLater, logger);
    const engine = new Engine(layout, partitions, logger, {
      routing,
      moverPools: {
        poolSize: Math.min(config.poolSize, 8),
        connectTimeoutMs: config.connectTimeoutMs,
      },
      followPollIntervalMs: config.followPollIntervalMs,
      groupPollIntervalMs: config.groupPollIntervalMs,
      groupLimits: config.groupLimits,
      queryLimits: config.queryLimits,
      bodyLimits: config.bodyLimits,
      maxCellBytes: maxCellBytesFor(maxAllowedPackets),
      healthCheckIntervalMs: config.healthCheckIntervalMs,
      replicaCheckIntervalMs: config.replicaCheckIntervalMs,
      maxAnswerBytes: config.maxAnswerBytes,
      primaryKeyCacheEntries: config.primaryKeyCacheEntries,
      recordCacheEntries: config.recordCacheEntries,
      versionCacheBytes: config.versionCacheBytes,
    });
    await engine.models.refresh(UNBOUNDED);
    const createdAtProblem = await engine.models.createdAtProblem();
    if (createdAtProblem) throw new StoreConfigError(createdAtProblem);
    await Promise.all(
      partitions.partitions.flatMap((partition) =>
        partition.replicas.map((replica) => checkReplicaDatabase(replica, config, logger)),
      ),
    );
    engine.health.start();
    engine.replicaMonitor.start();
    return engine;
  } catch (error) {
    await partitions.end();
    throw error;
  }
}

/**
 * The highest partition map stored on these partitions, creating the map table where it is
 * missing (so that the health probe can read it every period without failing); the layout's
 * map (version 0, the gem's ranges over the list) when none holds one.
 */
async function highestMap(partitions: PartitionSet, layout: StoreLayout): Promise<PartitionMap> {
  const versions = await Promise.all(
    partitions.partitions.map((partition) =>
      partition.run(UNBOUNDED, (pool) => ensurePartitionMapTable(pool, layout.partitionMapTable)),
    ),
  );
  const highest = Math.max(0, ...versions);
  if (highest <= layout.map.version) return layout.map;
  const at = partitions.partitions[versions.indexOf(highest)]!;
  const record = await at.run(UNBOUNDED, (pool) =>
    readLatestPartitionMap(pool, layout.partitionMapTable),
  );
  if (!record) return layout.map;
  try {
    return PartitionMap.fromRecord(record, layout.shardsCount);
  } catch (error) {
    throw new StoreConfigError(
      `partition ${at.index} (${describeLocation(at.location)}) holds a partition map this server cannot use: ` +
        `${(error as Error).message}. Check --shards-count (the store's is in ${layout.storeTable}).`,
    );
  }
}

/** The index in the list of the entry naming the same server and database as `location`. */
function listedEntryOf(location: string, nodes: readonly MysqlLocation[][]): number | undefined {
  let mapped: MysqlLocation[];
  try {
    mapped = parseNodeList(location);
  } catch {
    return undefined;
  }
  const same = (a: MysqlLocation, b: MysqlLocation) =>
    a.host === b.host && a.port === b.port && a.database === b.database;
  const index = nodes.findIndex((listed) =>
    listed.some((node) => mapped.some((other) => same(node, other))),
  );
  return index === -1 ? undefined : index;
}

/** Refuses a listed partition that the map does not have: its shards would be served by no one. */
function refuseUnmapped(map: PartitionMap, nodes: readonly MysqlLocation[][], config: StoreConfig) {
  const mapped = new Set(map.locations.map((location) => listedEntryOf(location, nodes)));
  const missing = nodes.findIndex((_, i) => !mapped.has(i));
  if (missing === -1) return;
  const list = map.locations
    .map((location, id) => `  partition ${id}: ${redactNodeList(location)}`)
    .join('\n');
  throw new StoreConfigError(
    `--partition / SHAMELESS_PARTITIONS, partition ${missing} (${redactNodeList(config.partitionUrls[missing] ?? '')}) ` +
      `is not a partition of the store's partition map (version ${map.version}), whose partitions are:\n${list}\n` +
      'List partitions of that map (a subset is enough: the map names the others).',
  );
}

/**
 * Says in the log what keeps a replica from serving at start: not answering, or lacking the
 * database (a replica of another server, or named with another database). Never stops the
 * start: its reads go to the primary until the monitor finds it caught up.
 */
async function checkReplicaDatabase(
  replica: Replica,
  config: StoreConfig,
  logger: Logger,
): Promise<void> {
  const fields = {
    partition: replica.partition,
    replica: replica.index,
    at: describeLocation(replica.location),
  };
  try {
    if (!(await databaseExists(replica.location, config.connectTimeoutMs))) {
      logger.warn(
        'replica has no such database: check that it replicates this partition and that its --replica URL names the same database',
        fields,
      );
    }
  } catch (error) {
    logger.warn('replica does not answer; its reads go to the primary until it does', {
      ...fields,
      reason: (error as { code?: string }).code ?? (error as Error).message,
    });
  }
}

/**
 * Refuses a partition whose nodes are not Galera nodes taking queries: the one the partition
 * starts on answers for the cluster (one that failed to answer moved the partition on).
 */
async function checkGaleraNode(partition: Partition, pool: SqlSession): Promise<void> {
  const state = await readNodeState(pool);
  if (state.galera) return;
  throw new StoreConfigError(
    `--partition / SHAMELESS_PARTITIONS, partition ${partition.index}: lists several nodes (joined by |), ` +
      `but ${describeLocation(partition.location)} is not a Galera node (wsrep_on is OFF). ` +
      'List several nodes only for a partition on a Galera cluster; a primary with replicas takes --replica.',
  );
}

/** Each partition's replicas' locations, by partition index; a StoreConfigError names a bad one. */
function checkReplicas(
  replicas: readonly ReplicaConfig[],
  nodes: readonly MysqlLocation[][],
): MysqlLocation[][] {
  const partitionCount = nodes.length;
  const byPartition: MysqlLocation[][] = Array.from({ length: partitionCount }, () => []);
  for (const [i, { partition, url }] of replicas.entries()) {
    const list = byPartition[partition];
    if (!Number.isInteger(partition) || !list) {
      throw new StoreConfigError(
        `replica ${i} (${redactUrl(url)}) names partition ${partition}; the store has partitions 0 to ${partitionCount - 1}`,
      );
    }
    if (nodes[partition]!.length > 1) {
      throw new StoreConfigError(
        `replica ${i} (${redactUrl(url)}) names partition ${partition}, which is on a Galera cluster: ` +
          'its nodes answer reads themselves; list a node in --partition instead of --replica',
      );
    }
    try {
      const location = parseMysqlUrl(url);
      serverConnection(location);
      list.push(location);
    } catch (error) {
      throw new StoreConfigError(`replica of partition ${partition}: ${(error as Error).message}`);
    }
  }
  return byPartition;
}

/** host:port/database, for messages: never the credentials. */
export function describeLocation(location: MysqlLocation): string {
  return `${location.host}:${location.port}/${location.database}`;
}

/**
 * Waits for one node of the partition to take connections, creating its database there when
 * missing (a Galera cluster replicates the CREATE DATABASE to the others): the others may be
 * down at start, and the partition moves to them when they are up.
 */
async function waitForAnyNode(
  nodes: readonly MysqlLocation[],
  index: number,
  config: StoreConfig,
  logger: Logger,
): Promise<void> {
  if (nodes.length === 1) return waitForDatabase(nodes[0]!, index, config, logger);
  const deadline = Date.now() + config.startupTimeoutMs;
  for (;;) {
    const failures: string[] = [];
    for (const node of nodes) {
      try {
        return await waitForDatabase(node, index, { ...config, startupTimeoutMs: 0 }, logger);
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
    if (Date.now() >= deadline) {
      throw new StoreConfigError(`no node of partition ${index} answered: ${failures.join('; ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function waitForDatabase(
  location: MysqlLocation,
  index: number,
  config: StoreConfig,
  logger: Logger,
): Promise<void> {
  const deadline = Date.now() + config.startupTimeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      if (await ensureDatabase(location, config.connectTimeoutMs)) {
        logger.info('created database', { partition: index, database: location.database });
      }
      return;
    } catch (error) {
      const reason =
        (error as { code?: string; message?: string }).code ?? (error as Error).message;
      if (isAccessDenied(error)) {
        throw new StoreConfigError(
          `partition ${index} at ${describeLocation(location)} refused user ${location.user} (${reason}). ` +
            `Check the user name and password in --partition / SHAMELESS_PARTITIONS (${redactNodeList(config.partitionUrls[index] ?? '')}), ` +
            `and that the user may create and use database ${location.database}` +
            (location.tls
              ? '.'
              : ` (a user created REQUIRE SSL also needs ssl-mode or ssl-ca in the URL).`),
        );
      }
      if (isTlsFailure(error)) {
        throw new StoreConfigError(
          `partition ${index} at ${describeLocation(location)}: TLS failed (${(error as Error).message}). ` +
            `Check ssl-mode and ssl-ca in --partition / SHAMELESS_PARTITIONS (${redactNodeList(config.partitionUrls[index] ?? '')}): ` +
            "ssl-ca is the PEM file of the CA that signed the server's certificate, which must name the host dialled for ssl-mode=verify-identity; " +
            'and that the server has TLS on.',
        );
      }
      if (Date.now() >= deadline) {
        throw new StoreConfigError(
          `cannot reach partition ${index} at ${describeLocation(location)} as ${location.user} (${reason}). ` +
            `Is MySQL running there? Check --partition / SHAMELESS_PARTITIONS (${redactNodeList(config.partitionUrls[index] ?? '')}).`,
        );
      }
      logger.warn('waiting for partition', {
        partition: index,
        at: describeLocation(location),
        attempt,
        reason,
      });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
