// The latest version of cells, as GetCell, GetCells and Where pages read them. The cells that
// any callers ask for on one partition in the same turn of the event loop are read with one
// SELECT (batchLoader.ts): one index dive per cell, or a set query for a table with many.
import { BatchLoader } from './batchLoader.js';
import type { StoreLayout } from './layout.js';
import type { CompiledModel } from './model.js';
import type { PartitionSet } from './partitions.js';
import { readLatestCells } from './sql/contentReads.js';
import { type CellKey, type StoredCell, toStoredCell } from './sql/contentRows.js';

/** The key of a cell in {@link LatestCells.read}'s answer. */
export const cellKeyOf = (uuid: string, cell: string) => `${uuid}/${cell}`;

/** A cell located in its content table. */
interface PlacedCell {
  readonly table: string;
  readonly shard: number;
  readonly uuid: string;
  readonly cell: string;
}

const placedKey = ({ table, uuid, cell }: PlacedCell) => `${table}/${uuid}/${cell}`;

/** Cells per SELECT at most; more in one turn are read with several, in the same round trip. */
const MAX_CELLS_PER_READ = 2000;

export class LatestCells {
  private readonly loaders: BatchLoader<PlacedCell, StoredCell>[];

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
  ) {
    this.loaders = partitions.partitions.map(
      (partition) =>
        new BatchLoader<PlacedCell, StoredCell>(
          (cells) => this.readOn(partition.index, cells),
          placedKey,
          MAX_CELLS_PER_READ,
        ),
    );
  }

  /** The latest version of each of the cells that has one, keyed by {@link cellKeyOf}. */
  async read(model: CompiledModel, cells: readonly CellKey[]): Promise<Map<string, StoredCell>> {
    const placed = cells.map(({ uuid, cell }): PlacedCell => {
      const shard = this.layout.contentShard(uuid);
      return { table: this.layout.contentTable(model, shard), shard, uuid, cell };
    });
    const byPartition = this.layout.byPartition(placed, (cell) => cell.shard);
    const answers = await Promise.all(
      [...byPartition].map(([partition, keys]) => this.loaders[partition]!.load(keys)),
    );
    const found = new Map<string, StoredCell>();
    for (const answer of answers) {
      for (const cell of answer.values()) found.set(cellKeyOf(cell.uuid, cell.name), cell);
    }
    return found;
  }

  /** One partition's read of distinct cells, by {@link placedKey}. */
  private async readOn(
    partition: number,
    cells: readonly PlacedCell[],
  ): Promise<Map<string, StoredCell>> {
    const byTable = new Map<string, PlacedCell[]>();
    for (const cell of cells) {
      const list = byTable.get(cell.table);
      if (list) list.push(cell);
      else byTable.set(cell.table, [cell]);
    }
    const tables = [...byTable.values()];
    const rows = await this.partitions.at(partition).read((reader) =>
      readLatestCells(
        reader,
        tables.map((list) => ({
          table: list[0]!.table,
          keys: list.map(({ uuid, cell }) => ({ uuid, cell, withBody: true })),
        })),
      ),
    );
    const found = new Map<string, StoredCell>();
    rows.forEach((tableRows, t) => {
      const { table, shard } = tables[t]![0]!;
      for (const row of tableRows) {
        const cell = toStoredCell(row, shard);
        found.set(placedKey({ table, shard, uuid: cell.uuid, cell: cell.name }), cell);
      }
    });
    return found;
  }
}
