// What the mover needs of a running store, and nothing more: the engine implements it (the
// partition map, routing and the fence are the engine's), and a test can build one from the
// engine's pieces. Narrow on purpose, as kysely's driver seam is: the mover never reaches into
// the engine past these.
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel } from '../model/model.js';
import type { PartitionMap } from '../model/partitionMap.js';
import type { MysqlPool } from '../mysql/mysqlPool.js';
import type { Partition } from '../mysql/partitions.js';

export interface MoveHost {
  /** Table names per model and shard, and the store's own tables. */
  readonly layout: StoreLayout;
  /** Every model defined now: each has a content table and index tables in every shard. */
  models(): readonly CompiledModel[];
  /** The partition map the store serves now (version 0 for a store that never moved). */
  currentMap(): PartitionMap;
  /**
   * The store's latest map, read again from partition 0, where every publish lands first
   * (currentMap may lag a publish by another server); throws when it cannot be read. Optional:
   * without it the mover trusts currentMap.
   */
  latestMap?(): Promise<PartitionMap>;
  /** The partition with this id, connected: a shard's source, or partition 0 (the home). */
  source(partitionId: number): Partition;
  /**
   * A pool on the partition at `location` (a MySQL URL as the mover was given it), creating
   * its database when missing. The same pool for the same location while the host lives.
   */
  target(location: string): Promise<MysqlPool>;
  /**
   * Publishes `next` (the current map's next version) on every partition it names, and serves
   * it from now on. Refused (throws) when another version was published meanwhile.
   */
  publishMap(next: PartitionMap): Promise<void>;
  /**
   * Publishes `next` as publishMap does, answering once the store's map is `next` (partition 0
   * has it: a rival is refused there, and a server reading the map finds it there) and the host
   * serves it; `everywhere` settles once every partition has it. Optional: a cut-over lets the
   * writes go in between, else it waits for publishMap.
   */
  publishMapFirst?(next: PartitionMap): Promise<{ everywhere: Promise<void> }>;
  /**
   * Gets ready to publish `next` quickly (connects to a partition it adds, creates the map
   * table where missing), before the cut-over holds the shard's writes; optional.
   */
  preparePublish?(next: PartitionMap): Promise<void>;
}
