// Where each of a store's rows lives: table names per model, index and shard, and the
// partition of each shard. Built once per store; the partition of each shard comes from the
// store's partition map, which a move replaces at run time (useMap); the rest is derived.
import type { CompiledModel } from './model.js';
import { PartitionMap } from './partitionMap.js';
import { contentShard, findShard } from './sharding.js';
import { contentTableName, indexTableName, storeTableName } from './tableNames.js';

/**
 * What a store's content tables hold in `created_at`: a DATETIME (ours, and the gem's default)
 * or, in a store the gem made with `legacy_created_at_is_bigint`, a BIGINT of milliseconds
 * since the epoch. One kind per store: it is a store setting, not a per-table guess.
 */
export type CreatedAtKind = 'datetime' | 'bigint';

export class StoreLayout {
  readonly storeTable: string;
  readonly modelsTable: string;
  readonly logLocksTable: string;
  /** Consumer groups' tables (consumer groups' room, groups/): created on a group's first use. */
  readonly groupMembersTable: string;
  readonly groupShardsTable: string;
  readonly groupCellsTable: string;
  /** The partition map's versions (mysql/sql/partitionMap.ts): on every partition the map names. */
  readonly partitionMapTable: string;
  // Names made once per model and shard: every cell a call reads or writes asks for its
  // table's, and the same string each time also keeps its hash for the maps keyed by it.
  private readonly contentTables = new Map<string, string[]>();
  private readonly indexTables = new Map<string, Map<string, string[]>>();
  private currentMap: PartitionMap;
  /** The shards of each partition under the current map, computed on first use. */
  private shardsByPartition: number[][] | undefined;

  constructor(
    readonly namespace: string,
    readonly shardsCount: number,
    /** The partitions of the list the store was opened with: the gem's ranges until a map says otherwise. */
    partitionCount: number,
    /** What content tables hold in created_at: the tables this store creates, and every write. */
    readonly createdAt: CreatedAtKind = 'datetime',
  ) {
    this.storeTable = storeTableName(namespace, 'store');
    this.modelsTable = storeTableName(namespace, 'models');
    this.logLocksTable = storeTableName(namespace, 'log_locks');
    this.groupMembersTable = storeTableName(namespace, 'group_members');
    this.groupShardsTable = storeTableName(namespace, 'group_shards');
    this.groupCellsTable = storeTableName(namespace, 'group_cells');
    this.partitionMapTable = storeTableName(namespace, 'partition_map');
    this.currentMap = PartitionMap.initial(
      Array.from({ length: partitionCount }, () => ''),
      shardsCount,
    );
  }

  /** The partition map routing now: version 0 (the gem's ranges) until a move publishes one. */
  get map(): PartitionMap {
    return this.currentMap;
  }

  /** How many partitions the map names (ids 0..count-1), serving shards or not. */
  get partitionCount(): number {
    return this.currentMap.partitionCount;
  }

  /**
   * Routes by `map` from now on. A map of another store (another shard count), or one older
   * than the current, is refused: routing never goes back.
   */
  useMap(map: PartitionMap): void {
    if (map.shardsCount !== this.shardsCount) {
      throw new RangeError(
        `partition map version ${map.version} maps ${map.shardsCount} shards; the store has ${this.shardsCount}`,
      );
    }
    if (map.version < this.currentMap.version) {
      throw new RangeError(
        `partition map version ${map.version} is older than version ${this.currentMap.version}, in use`,
      );
    }
    this.currentMap = map;
    this.shardsByPartition = undefined;
  }

  findShard(value: number | bigint): number {
    return findShard(value, this.shardsCount);
  }

  contentShard(uuid: string): number {
    return contentShard(uuid, this.shardsCount);
  }

  partitionOf(shard: number): number {
    return this.currentMap.partitionOf(shard);
  }

  /**
   * Whether the record's content lives on the partition of index shard `indexShard`: only
   * then can one transaction there read its index row and write its cells.
   */
  contentBeside(uuid: string, indexShard: number): boolean {
    return this.partitionOf(this.contentShard(uuid)) === this.partitionOf(indexShard);
  }

  /** `items` grouped by the partition of their shard, each group in the order given. */
  byPartition<T>(items: Iterable<T>, shardOf: (item: T) => number): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const item of items) {
      const partition = this.partitionOf(shardOf(item));
      const group = groups.get(partition);
      if (group) group.push(item);
      else groups.set(partition, [item]);
    }
    return groups;
  }

  /** The shards partition `partition` serves under the current map, ascending. */
  shardsOf(partition: number): readonly number[] {
    if (!this.shardsByPartition) {
      const byPartition: number[][] = Array.from({ length: this.partitionCount }, () => []);
      for (let shard = 0; shard < this.shardsCount; shard++) {
        byPartition[this.currentMap.partitionOf(shard)]!.push(shard);
      }
      this.shardsByPartition = byPartition;
    }
    return this.shardsByPartition[partition] ?? [];
  }

  contentTable(model: CompiledModel, shard: number): string {
    let names = this.contentTables.get(model.name);
    if (!names) this.contentTables.set(model.name, (names = []));
    return (names[shard] ??= contentTableName(this.namespace, model.name, shard));
  }

  indexTable(model: CompiledModel, index: string, shard: number): string {
    let byIndex = this.indexTables.get(model.name);
    if (!byIndex) this.indexTables.set(model.name, (byIndex = new Map()));
    let names = byIndex.get(index);
    if (!names) byIndex.set(index, (names = []));
    return (names[shard] ??= indexTableName(this.namespace, model.name, index, shard));
  }
}
