// Put's first step, the lookup of its primary values: the lookups that puts make on one
// partition in the same turn of the event loop (a PutMany, or puts arriving together) are made
// together (batchLoader.ts): one SELECT, or two on two connections for 8 lookups or more.
import type { CallScope } from '../base/callScope.js';
import { BatchLoader, type Found } from './batchLoader.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { PARALLEL_READS, type ReadParts } from '../mysql/readSplit.js';
import type { Row } from '../mysql/mysqlPool.js';
import { type PrimaryLookup, primaryKeyOf, primaryLookups } from '../mysql/sql/indexTable.js';

/** Lookups per SELECT at most; a turn with more, or enough for two, is made with several. */
const READ_PARTS: ReadParts = { maxKeys: 1000, ...PARALLEL_READS };

export class PrimaryLookups {
  /** Each partition's loader, by id: made on first use (a partition a newer map adds gets one). */
  private readonly loaders: BatchLoader<PrimaryLookup, string>[] = [];

  constructor(private readonly partitions: PartitionSet) {}

  /**
   * The uuid of the record the values belong to, if any, for the call of `scope`. `partition`
   * holds `lookup.table`.
   */
  async find(
    scope: CallScope,
    partition: number,
    lookup: PrimaryLookup,
  ): Promise<string | undefined> {
    const loader = (this.loaders[partition] ??= new BatchLoader<PrimaryLookup, string>(
      (lookups, apart, shared) => this.readOn(shared, partition, lookups, apart),
      primaryKeyOf,
      READ_PARTS,
    ));
    const [uuid] = await loader.load([lookup], scope);
    return uuid;
  }

  private async readOn(
    scope: CallScope,
    partition: number,
    lookups: readonly PrimaryLookup[],
    apart: boolean,
  ): Promise<Found<string>> {
    const [rows = []] = (await this.partitions
      .at(partition)
      .read(scope, (reader) => reader.read([primaryLookups(lookups)]), apart)) as Row[][];
    // Each row names its lookup's position (`part`).
    const uuids = new Array<string | undefined>(lookups.length).fill(undefined);
    for (const row of rows) uuids[Number(row.part)] = String(row.uuid);
    return uuids;
  }
}
