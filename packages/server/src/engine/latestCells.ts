// The latest version of cells, as GetCell, GetCells and Where pages read them. The cells that
// any callers ask for on one partition in the same turn of the event loop are read together
// (batchLoader.ts), with one SELECT or, for 8 cells or more, two, each in a round trip of its
// own (readSplit.ts): an index dive per cell of a table with one or two, else one keyed query per
// table.
// An answer may be bounded in bytes: then no more than about that many bytes of bodies are
// ever held for it, and it is refused once its size is known to be over.
import { BatchLoader } from './batchLoader.js';
import { AnswerTooLargeError } from './errors.js';
import type { StoreLayout } from './layout.js';
import type { CompiledModel } from './model.js';
import type { PartitionSet } from './partitions.js';
import { PARALLEL_READS, type ReadParts } from './readSplit.js';
import { readLatestCells } from './sql/contentReads.js';
import { type CellKey, type StoredCell, toStoredCell } from './sql/contentRows.js';
import { readBodiesInto } from './unreadBodies.js';

/** The key of a cell in {@link LatestCells.read}'s answer. */
export const cellKeyOf = (uuid: string, cell: string) => `${uuid}/${cell}`;

/** A cell located in its content table. */
interface PlacedCell {
  readonly table: string;
  readonly shard: number;
  readonly uuid: string;
  readonly cell: string;
  /** A longer body is not read with the cell, only its length; any body when left out. */
  readonly maxBodyBytes?: number;
}

const placedKey = ({ table, uuid, cell, maxBodyBytes }: PlacedCell) =>
  `${table}/${uuid}/${cell}/${maxBodyBytes ?? ''}`;

/** A latest version as read: its body may be left to read (longer than maxBodyBytes). */
interface LatestCell {
  readonly cell: StoredCell;
  readonly table: string;
  readonly bodyBytes: number;
  readonly bodyUnread: boolean;
}

/**
 * What an answer may hold: `maxBytes` of cells at most (bodies, and ANSWER_BYTES_PER_CELL for
 * each cell asked for), else it is refused with RESOURCE_EXHAUSTED, its message ending with
 * `advice` (what the caller should do instead).
 */
export interface AnswerBound {
  readonly maxBytes: number;
  readonly advice: string;
  /** When the bound is one read's even share of an answer: the whole answer's bound. */
  readonly shareOf?: number;
}

/**
 * The refusal of an answer of `bytes` (or more) over `bound`, before it is sent: its words are
 * those of a message over a size limit, on which the SDK sends a batch again in halves.
 */
export function answerOverBound(bound: AnswerBound, bytes: number): AnswerTooLargeError {
  const over =
    bound.shareOf === undefined
      ? `the answer would exceed ${bound.maxBytes} bytes (its message would be larger than the server's largest message: ${bytes} bytes or more)`
      : `the answer would exceed ${bound.shareOf} bytes (its message would be larger than the server's largest message: one of its parts alone takes ${bytes} bytes or more, past its even share of ${bound.maxBytes})`;
  return new AnswerTooLargeError(`${over}; ${bound.advice}`);
}

/**
 * What a cell of an answer takes besides its body (uuid, name, ids, time, framing), generously:
 * a cell's name is at most 255 characters, a uuid 36, the rest a few dozen bytes.
 */
export const ANSWER_BYTES_PER_CELL = 512;

/** Cells per SELECT at most; a turn with more, or enough for two, is read with several. */
const READ_PARTS: ReadParts = { maxKeys: 2000, ...PARALLEL_READS };

export class LatestCells {
  private readonly loaders: BatchLoader<PlacedCell, LatestCell>[];

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    /** The largest body a cell may have: a share of an answer this large reads every body. */
    private readonly maxCellBytes: number,
  ) {
    this.loaders = partitions.partitions.map(
      (partition) =>
        new BatchLoader<PlacedCell, LatestCell>(
          (cells, apart) => this.readOn(partition.index, cells, apart),
          placedKey,
          READ_PARTS,
        ),
    );
  }

  /**
   * The latest version of each of the cells that has one, keyed by {@link cellKeyOf}. With a
   * bound, each cell's body is read with it only when within the cell's even share of the
   * bound; the others' lengths are added up first, and their bodies read by id only if the
   * whole answer fits. So at most about `bound.maxBytes` of bodies are held for the answer.
   */
  async read(
    model: CompiledModel,
    cells: readonly CellKey[],
    bound?: AnswerBound,
  ): Promise<Map<string, StoredCell>> {
    const share =
      bound === undefined
        ? undefined
        : Math.max(
            0,
            Math.floor(bound.maxBytes / Math.max(1, cells.length)) - ANSWER_BYTES_PER_CELL,
          );
    const maxBodyBytes = share === undefined || share >= this.maxCellBytes ? undefined : share;
    const placed = cells.map(({ uuid, cell }): PlacedCell => {
      const shard = this.layout.contentShard(uuid);
      return { table: this.layout.contentTable(model, shard), shard, uuid, cell, maxBodyBytes };
    });
    const byPartition = this.layout.byPartition(placed, (cell) => cell.shard);
    const answers = await Promise.all(
      [...byPartition].map(([partition, keys]) => this.loaders[partition]!.load(keys)),
    );
    // The answer holds the cell objects themselves: a body read afterwards fills them in.
    const found = new Map<string, StoredCell>();
    const bodyBytes = new Map<string, number>();
    const unread: LatestCell[] = [];
    for (const answer of answers) {
      for (const latest of answer.values()) {
        const key = cellKeyOf(latest.cell.uuid, latest.cell.name);
        found.set(key, latest.cell);
        if (bound !== undefined) bodyBytes.set(key, latest.bodyBytes);
        if (latest.bodyUnread) unread.push(latest);
      }
    }
    if (bound !== undefined) {
      let bytes = 0;
      for (const { uuid, cell } of cells) {
        bytes += ANSWER_BYTES_PER_CELL + (bodyBytes.get(cellKeyOf(uuid, cell)) ?? 0);
      }
      if (bytes > bound.maxBytes) throw answerOverBound(bound, bytes);
    }
    await this.readUnreadBodies(unread);
    return found;
  }

  /** Reads, by id, the bodies left out of a bounded read, into their cells. */
  private async readUnreadBodies(unread: readonly LatestCell[]): Promise<void> {
    if (unread.length === 0) return;
    const byPartition = this.layout.byPartition(unread, (latest) => latest.cell.shard);
    await Promise.all(
      [...byPartition].map(([partition, cells]) => {
        const byTable = new Map<string, StoredCell[]>();
        for (const { table, cell } of cells) {
          const list = byTable.get(table);
          if (list) list.push(cell);
          else byTable.set(table, [cell]);
        }
        return readBodiesInto(
          this.partitions.at(partition),
          [...byTable].map(([table, list]) => ({ table, cells: list })),
        );
      }),
    );
  }

  /** One partition's read of distinct cells, by {@link placedKey}; `apart` from the turn's others. */
  private async readOn(
    partition: number,
    cells: readonly PlacedCell[],
    apart: boolean,
  ): Promise<Map<string, LatestCell>> {
    // One part per table and body bound: a part's cells share one keyed query.
    const byPart = new Map<string, PlacedCell[]>();
    for (const cell of cells) {
      const part = `${cell.table}/${cell.maxBodyBytes ?? ''}`;
      const list = byPart.get(part);
      if (list) list.push(cell);
      else byPart.set(part, [cell]);
    }
    const parts = [...byPart.values()];
    const rows = await this.partitions.at(partition).read(
      (reader) =>
        readLatestCells(
          reader,
          parts.map((list) => ({
            table: list[0]!.table,
            keys: list.map(({ uuid, cell }) => ({ uuid, cell, withBody: true })),
            maxBodyBytes: list[0]!.maxBodyBytes,
          })),
        ),
      apart,
    );
    const found = new Map<string, LatestCell>();
    rows.forEach((partRows, t) => {
      const { table, shard, maxBodyBytes } = parts[t]![0]!;
      for (const row of partRows) {
        const cell = toStoredCell(row, shard);
        const bodyBytes = Number(row.body_bytes ?? 0);
        found.set(placedKey({ table, shard, uuid: cell.uuid, cell: cell.name, maxBodyBytes }), {
          cell,
          table,
          bodyBytes,
          bodyUnread: row.body === null && bodyBytes > 0,
        });
      }
    });
    return found;
  }
}
