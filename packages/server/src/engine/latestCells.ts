// The latest version of many cells spread over content shards, as Where pages and GetCells
// read them: one round trip per partition, carrying one query per shard.
import type { StoreLayout } from './layout.js';
import type { CompiledModel } from './model.js';
import type { PartitionSet } from './partitions.js';
import { readLatestCells } from './sql/contentReads.js';
import { type CellGrid, type CellKey, type StoredCell, toStoredCell } from './sql/contentRows.js';

/** The key of a cell in {@link readLatestOf}'s answer. */
export const cellKeyOf = (uuid: string, cell: string) => `${uuid}/${cell}`;

/**
 * The latest version of each of the cells that has one, keyed by {@link cellKeyOf}. Each
 * shard's query reads its records × the cell names asked for among them; rows of cells not
 * asked for are dropped (a model has few cells).
 */
export async function readLatestOf(
  layout: StoreLayout,
  partitions: PartitionSet,
  model: CompiledModel,
  cells: readonly CellKey[],
): Promise<Map<string, StoredCell>> {
  const grids = new Map<number, { uuids: Set<string>; cells: Set<string> }>();
  const wanted = new Set<string>();
  for (const { uuid, cell } of cells) {
    const shard = layout.contentShard(uuid);
    let grid = grids.get(shard);
    if (!grid) grids.set(shard, (grid = { uuids: new Set(), cells: new Set() }));
    grid.uuids.add(uuid);
    grid.cells.add(cell);
    wanted.add(cellKeyOf(uuid, cell));
  }
  const lists = new Map(
    [...grids].map(([shard, grid]) => [shard, { uuids: [...grid.uuids], cells: [...grid.cells] }]),
  );
  const found = new Map<string, StoredCell>();
  for (const cell of await readLatestAcrossShards(layout, partitions, model, lists)) {
    const key = cellKeyOf(cell.uuid, cell.name);
    if (wanted.has(key)) found.set(key, cell);
  }
  return found;
}

/** Every cell of each shard's grid that has a version, with its shard. */
async function readLatestAcrossShards(
  layout: StoreLayout,
  partitions: PartitionSet,
  model: CompiledModel,
  grids: ReadonlyMap<number, CellGrid>,
): Promise<StoredCell[]> {
  const byPartition = layout.byPartition(grids.keys(), (shard) => shard);
  const found = await Promise.all(
    [...byPartition].map(async ([partition, shards]) => {
      const results = await partitions.at(partition).read((reader) =>
        readLatestCells(
          reader,
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
