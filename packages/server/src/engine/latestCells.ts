// The latest version of many cells spread over content shards, as Where pages and GetCells
// read them: one round trip per partition, carrying one query per shard.
import type { StoreLayout } from './layout.js';
import type { CompiledModel } from './model.js';
import type { PartitionSet } from './partitions.js';
import {
  type CellGrid,
  type StoredCell,
  readLatestCells,
  toStoredCell,
} from './sql/contentTable.js';

/** Every cell of each shard's grid that has a version, with its shard. */
export async function readLatestAcrossShards(
  layout: StoreLayout,
  partitions: PartitionSet,
  model: CompiledModel,
  grids: ReadonlyMap<number, CellGrid>,
): Promise<StoredCell[]> {
  const byPartition = layout.byPartition(grids.keys(), (shard) => shard);
  const found = await Promise.all(
    [...byPartition].map(async ([partition, shards]) => {
      const results = await partitions.at(partition).run((pool) =>
        readLatestCells(
          pool,
          shards.map((shard) => ({
            table: layout.contentTable(model, shard),
            ...grids.get(shard)!,
          })),
        ),
      );
      return results.flatMap((rows, i) => rows.map((row) => toStoredCell(row, shards[i]!)));
    }),
  );
  return found.flat();
}
