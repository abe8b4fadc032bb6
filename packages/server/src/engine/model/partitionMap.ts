// Which partition serves each shard: the store's partition map (SPEC §7, moving shards). Pure:
// what is stored, and how it is read, lives in mysql/sql/partitionMap.ts.
//
// A partition has a stable id: the store's first partition list gives ids 0..N-1 in order, and
// each partition a move adds takes the next id; ids are never reused. Version 0 is the map of a
// store that never moved: the gem's contiguous, equal ranges over its partition list. Every
// move publishes the next version.
import { partitionOfShard } from './sharding.js';

/** One run of consecutive shards served by one partition: [first, last, partition id]. */
export type ShardRange = readonly [first: number, last: number, partition: number];

/** The map as stored: the locations by id, and the shards as ranges. */
export interface PartitionMapRecord {
  readonly version: number;
  readonly locations: readonly string[];
  readonly ranges: readonly ShardRange[];
}

export class PartitionMap {
  private constructor(
    readonly version: number,
    /** Where each partition is, by id: a MySQL URL, or a Galera `url|url|…` list. */
    readonly locations: readonly string[],
    /** The id of the partition serving each shard, by shard. */
    private readonly owners: readonly number[],
  ) {}

  /** A store that never moved: the gem's contiguous ranges over `locations`. */
  static initial(locations: readonly string[], shardsCount: number): PartitionMap {
    const owners = Array.from({ length: shardsCount }, (_, shard) =>
      partitionOfShard(shard, shardsCount, locations.length),
    );
    return new PartitionMap(0, [...locations], owners);
  }

  /** The map a record describes; throws a RangeError naming what is wrong with it. */
  static fromRecord(record: PartitionMapRecord, shardsCount: number): PartitionMap {
    const owners: number[] = new Array<number>(shardsCount).fill(-1);
    for (const [first, last, partition] of record.ranges) {
      if (!(Number.isInteger(first) && Number.isInteger(last) && first <= last)) {
        throw new RangeError(`map version ${record.version}: range ${first}-${last} is not one`);
      }
      if (!(Number.isInteger(partition) && partition >= 0 && partition < record.locations.length)) {
        throw new RangeError(
          `map version ${record.version}: shards ${first}-${last} name partition ${partition}, which it does not list`,
        );
      }
      for (let shard = first; shard <= last; shard++) {
        if (shard < 0 || shard >= shardsCount) {
          throw new RangeError(
            `map version ${record.version}: shard ${shard} is past the store's ${shardsCount}`,
          );
        }
        if (owners[shard] !== -1) {
          throw new RangeError(`map version ${record.version}: shard ${shard} is mapped twice`);
        }
        owners[shard] = partition;
      }
    }
    const unmapped = owners.indexOf(-1);
    if (unmapped !== -1) {
      throw new RangeError(`map version ${record.version}: shard ${unmapped} has no partition`);
    }
    return new PartitionMap(record.version, [...record.locations], owners);
  }

  get shardsCount(): number {
    return this.owners.length;
  }

  /** How many partitions the map lists, serving shards or not (ids 0..count-1). */
  get partitionCount(): number {
    return this.locations.length;
  }

  partitionOf(shard: number): number {
    const partition = this.owners[shard];
    if (partition === undefined) throw new RangeError(`shard ${shard} is not in the map`);
    return partition;
  }

  /** The shards partition `id` serves, ascending. */
  shardsOf(id: number): number[] {
    const shards: number[] = [];
    this.owners.forEach((owner, shard) => {
      if (owner === id) shards.push(shard);
    });
    return shards;
  }

  /**
   * The next version: `shards` served by partition `to`, which is a new partition when `to`
   * equals partitionCount (its location then given), else an existing one.
   */
  moved(shards: readonly number[], to: number, toLocation?: string): PartitionMap {
    const locations = [...this.locations];
    if (to === locations.length) {
      if (toLocation === undefined)
        throw new RangeError(`partition ${to} is new: give its location`);
      locations.push(toLocation);
    } else if (!(Number.isInteger(to) && to >= 0 && to < locations.length)) {
      throw new RangeError(`partition ${to} is not in the map (ids 0-${locations.length - 1})`);
    }
    const owners = [...this.owners];
    for (const shard of shards) {
      if (!(Number.isInteger(shard) && shard >= 0 && shard < owners.length)) {
        throw new RangeError(`shard ${shard} is not in the map (0-${owners.length - 1})`);
      }
      owners[shard] = to;
    }
    return new PartitionMap(this.version + 1, locations, owners);
  }

  /** The map as stored: its shards as runs of consecutive shards with one owner. */
  toRecord(): PartitionMapRecord {
    const ranges: ShardRange[] = [];
    this.owners.forEach((owner, shard) => {
      const last = ranges[ranges.length - 1];
      if (last && last[2] === owner && last[1] === shard - 1)
        ranges[ranges.length - 1] = [last[0], shard, owner];
      else ranges.push([shard, shard, owner]);
    });
    return { version: this.version, locations: this.locations, ranges };
  }

  /**
   * The locations in the order the gem (and a fresh `--partition` list) would need to find every
   * shard where this map has it: defined when each partition that serves shards serves one run
   * of `shardsCount / n` of them and the runs tile the shards; undefined otherwise.
   */
  gemOrder(): string[] | undefined {
    const ranges = this.toRecord().ranges;
    const serving = new Set(ranges.map(([, , owner]) => owner));
    if (serving.size !== ranges.length) return undefined;
    const size = this.shardsCount / ranges.length;
    if (!ranges.every(([first, last]) => last - first + 1 === size)) return undefined;
    return ranges.map(([, , owner]) => this.locations[owner]!);
  }
}
