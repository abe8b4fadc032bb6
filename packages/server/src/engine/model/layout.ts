// Where each of a store's rows lives: table names per model, index and shard, and the
// partition of each shard. Built once per store; everything here is derived.
import type { CompiledModel } from './model.js';
import { contentShard, findShard, partitionOfShard, shardsOfPartition } from './sharding.js';
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
  // Names made once per model and shard: every cell a call reads or writes asks for its
  // table's, and the same string each time also keeps its hash for the maps keyed by it.
  private readonly contentTables = new Map<string, string[]>();
  private readonly indexTables = new Map<string, Map<string, string[]>>();

  constructor(
    readonly namespace: string,
    readonly shardsCount: number,
    readonly partitionCount: number,
    /** What content tables hold in created_at: the tables this store creates, and every write. */
    readonly createdAt: CreatedAtKind = 'datetime',
  ) {
    this.storeTable = storeTableName(namespace, 'store');
    this.modelsTable = storeTableName(namespace, 'models');
    this.logLocksTable = storeTableName(namespace, 'log_locks');
    this.groupMembersTable = storeTableName(namespace, 'group_members');
    this.groupShardsTable = storeTableName(namespace, 'group_shards');
    this.groupCellsTable = storeTableName(namespace, 'group_cells');
  }

  findShard(value: number | bigint): number {
    return findShard(value, this.shardsCount);
  }

  contentShard(uuid: string): number {
    return contentShard(uuid, this.shardsCount);
  }

  partitionOf(shard: number): number {
    return partitionOfShard(shard, this.shardsCount, this.partitionCount);
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

  shardsOf(partition: number): number[] {
    const { first, last } = shardsOfPartition(partition, this.shardsCount, this.partitionCount);
    return Array.from({ length: last - first + 1 }, (_, i) => first + i);
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
