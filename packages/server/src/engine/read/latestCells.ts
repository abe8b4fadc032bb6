// The latest version of cells, as GetCell, GetCells and Where pages read them. The cells that
// any callers ask for on one partition in the same turn of the event loop are read together
// (batchLoader.ts), with one SELECT or, for 8 cells or more, two, each in a round trip of its
// own (readSplit.ts): an index dive per cell of a table with one or two, else one keyed query per
// table.
// An answer may be bounded in bytes: then no more than about that many bytes of bodies are
// ever held for it, and it is refused once its size is known to be over.
// A point Where's cells are read through the record's primary-index row (readThrough): a turn's
// such reads on a partition are one SELECT per part too, the rows and the cells together.
import type { CallScope } from '../base/callScope.js';
import { BatchLoader, type Found } from './batchLoader.js';
import { AnswerTooLargeError } from '../base/errors.js';
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel } from '../model/model.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { PARALLEL_READS, type ReadParts } from '../mysql/readSplit.js';
import { type LatestKey, readLatestCells } from '../mysql/sql/contentReads.js';
import { type CellKey, type StoredCell, toStoredCell } from '../mysql/sql/contentRows.js';
import { type PrimaryLookup, primaryKeyOf } from '../mysql/sql/indexTable.js';
import { type CellThroughRow, readThroughPrimaryRows } from '../mysql/sql/pointReads.js';
import type { Row } from '../mysql/mysqlPool.js';
import { readBodiesInto } from './unreadBodies.js';

/** A cell located in its content table, whose latest version is read with its body. */
interface PlacedCell extends LatestKey {
  readonly table: string;
  readonly shard: number;
  /** A longer body is not read with the cell, only its length; any body when left out. */
  readonly maxBodyBytes?: number;
}

/** The same cell, read with the same bound: one key for the turn's read. */
const placedKey = ({ table, uuid, cell, maxBodyBytes }: PlacedCell) =>
  `${table}/${uuid}/${cell}/${maxBodyBytes ?? ''}`;

/** A cell read through a primary-index row, in its content table. */
interface PlacedThrough extends CellThroughRow {
  readonly shard: number;
}

/** The same cell through the same row, read with the same bound: one key for the turn's read. */
const throughKey = ({ lookup, uuid, cell, maxBodyBytes }: PlacedThrough) =>
  `${primaryKeyOf(lookup)} ${uuid}/${cell}/${maxBodyBytes ?? ''}`;

/** What a read through a row found of a cell: where the row leads, and the cell when there. */
interface FoundThrough {
  readonly holder: string;
  readonly latest: LatestCell | undefined;
}

/**
 * A record's cells as read through its primary-index row: the record the row leads to
 * (undefined: no row holds the values), and when that is the record asked for, the latest
 * version of each cell asked for, at its position (undefined where a cell has none).
 */
export interface ReadThrough {
  readonly holder: string | undefined;
  readonly cells: (StoredCell | undefined)[];
}

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
/** Cells read through rows per SELECT at most: each is a join of its own, as a lookup is. */
const THROUGH_PARTS: ReadParts = { maxKeys: 1000, ...PARALLEL_READS };

export class LatestCells {
  /** Each partition's loaders, by id: made on first use (a partition a newer map adds gets them). */
  private readonly loaders: BatchLoader<PlacedCell, LatestCell>[] = [];
  private readonly throughLoaders: BatchLoader<PlacedThrough, FoundThrough>[] = [];

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    /** The largest body a cell may have: a share of an answer this large reads every body. */
    private readonly maxCellBytes: number,
  ) {}

  private loaderOf(partition: number): BatchLoader<PlacedCell, LatestCell> {
    return (this.loaders[partition] ??= new BatchLoader<PlacedCell, LatestCell>(
      (cells, apart, scope) => this.readOn(scope, partition, cells, apart),
      placedKey,
      READ_PARTS,
    ));
  }

  private throughLoaderOf(partition: number): BatchLoader<PlacedThrough, FoundThrough> {
    return (this.throughLoaders[partition] ??= new BatchLoader<PlacedThrough, FoundThrough>(
      (cells, apart, scope) => this.readThroughOn(scope, partition, cells, apart),
      throughKey,
      THROUGH_PARTS,
    ));
  }

  /**
   * The latest version of each of the cells, at its position; undefined where a cell has none.
   * With a bound, each cell's body is read with it only when within the cell's even share of
   * the bound; the others' lengths are added up first, and their bodies read by id only if the
   * whole answer fits. So at most about `bound.maxBytes` of bodies are held for the answer.
   * The reads serve the call of `scope`.
   */
  async read(
    scope: CallScope,
    model: CompiledModel,
    cells: readonly CellKey[],
    bound?: AnswerBound,
  ): Promise<(StoredCell | undefined)[]> {
    const maxBodyBytes = this.maxBodyBytes(bound, cells.length);
    const placed = cells.map(({ uuid, cell }): PlacedCell => {
      const shard = this.layout.contentShard(uuid);
      const table = this.layout.contentTable(model, shard);
      return { table, shard, uuid, cell, withBody: true, maxBodyBytes };
    });
    return this.finish(scope, await this.load(scope, placed), bound);
  }

  /**
   * The latest version of cells of record `uuid`, read only if the primary-index row of
   * `lookup` (in index shard `indexShard`) leads to it, with that row in one SELECT: one round
   * trip where today's answer would otherwise take the row's and the cells' (bounded as
   * {@link read}). Undefined when that cannot be answered in one: the record's content lies on
   * another partition, or parts of a large read found the row leading to different records.
   */
  async readThrough(
    scope: CallScope,
    model: CompiledModel,
    through: { readonly lookup: PrimaryLookup; readonly indexShard: number; readonly uuid: string },
    cells: readonly string[],
    bound?: AnswerBound,
  ): Promise<ReadThrough | undefined> {
    const { lookup, indexShard, uuid } = through;
    if (cells.length === 0 || !this.layout.contentBeside(uuid, indexShard)) return undefined;
    const maxBodyBytes = this.maxBodyBytes(bound, cells.length);
    const shard = this.layout.contentShard(uuid);
    const table = this.layout.contentTable(model, shard);
    const placed = cells.map((cell): PlacedThrough => ({
      lookup,
      uuid,
      table,
      shard,
      cell,
      maxBodyBytes,
    }));
    const found = await this.throughLoaderOf(this.layout.partitionOf(shard)).load(placed, scope);
    // Every part of one read saw the same row, or none.
    const holder = found[0]?.holder;
    if (found.some((one) => one?.holder !== holder)) return undefined;
    if (holder !== uuid) return { holder, cells: [] };
    return {
      holder,
      cells: await this.finish(
        scope,
        found.map((one) => one?.latest),
        bound,
      ),
    };
  }

  /** The body bound of each of `count` cells sharing `bound`; undefined: every body is read. */
  private maxBodyBytes(bound: AnswerBound | undefined, count: number): number | undefined {
    if (bound === undefined) return undefined;
    const share = Math.max(
      0,
      Math.floor(bound.maxBytes / Math.max(1, count)) - ANSWER_BYTES_PER_CELL,
    );
    return share >= this.maxCellBytes ? undefined : share;
  }

  /**
   * The answer of cells read: refused when over the bound, else with the bodies a bounded read
   * left out read in.
   */
  private async finish(
    scope: CallScope,
    latest: Found<LatestCell>,
    bound: AnswerBound | undefined,
  ): Promise<(StoredCell | undefined)[]> {
    if (bound !== undefined) {
      let bytes = 0;
      for (const found of latest) bytes += ANSWER_BYTES_PER_CELL + (found?.bodyBytes ?? 0);
      if (bytes > bound.maxBytes) throw answerOverBound(bound, bytes);
    }
    // A cell asked for twice is one LatestCell at both positions: its body is read once.
    const unread = new Set<LatestCell>();
    for (const found of latest) if (found?.bodyUnread) unread.add(found);
    await this.readUnreadBodies(scope, [...unread]);
    // The answer holds the cell objects themselves, which a body read afterwards filled in.
    return latest.map((found) => found?.cell);
  }

  /** Each cell's latest version, at its position: each partition's cells in one turn's read. */
  private async load(scope: CallScope, placed: readonly PlacedCell[]): Promise<Found<LatestCell>> {
    const byPartition = this.layout.byPartition(placed.keys(), (i) => placed[i]!.shard);
    if (byPartition.size === 1) {
      const [partition] = byPartition.keys();
      return this.loaderOf(partition!).load(placed, scope);
    }
    const latest = new Array<LatestCell | undefined>(placed.length).fill(undefined);
    await Promise.all(
      [...byPartition].map(async ([partition, positions]) => {
        const found = await this.loaderOf(partition).load(
          positions.map((i) => placed[i]!),
          scope,
        );
        positions.forEach((position, i) => (latest[position] = found[i]));
      }),
    );
    return latest;
  }

  /** One partition's reads through primary-index rows, answered at their positions. */
  private async readThroughOn(
    scope: CallScope,
    partition: number,
    cells: readonly PlacedThrough[],
    apart: boolean,
  ): Promise<Found<FoundThrough>> {
    const rows = await this.partitions
      .at(partition)
      .read(scope, (reader) => readThroughPrimaryRows(reader, cells), apart);
    return rows.map((row, position) =>
      row === undefined
        ? undefined
        : { holder: String(row.holder), latest: latestOf(row, cells[position]!) },
    );
  }

  /** Reads, by id, the bodies left out of a bounded read, into their cells. */
  private async readUnreadBodies(scope: CallScope, unread: readonly LatestCell[]): Promise<void> {
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
          scope,
          this.partitions.at(partition),
          [...byTable].map(([table, list]) => ({ table, cells: list })),
        );
      }),
    );
  }

  /**
   * One partition's read of distinct cells (by {@link placedKey}), answered at their positions;
   * `apart` from the turn's others.
   */
  private async readOn(
    scope: CallScope,
    partition: number,
    cells: readonly PlacedCell[],
    apart: boolean,
  ): Promise<Found<LatestCell>> {
    // One part per table and body bound: a part's cells share one keyed query.
    const parts: ReadPart[] = [];
    const partsOfTable = new Map<string, ReadPart[]>();
    cells.forEach((cell, position) => {
      let ofTable = partsOfTable.get(cell.table);
      if (ofTable === undefined) partsOfTable.set(cell.table, (ofTable = []));
      let part = ofTable.find(({ maxBodyBytes }) => maxBodyBytes === cell.maxBodyBytes);
      if (part === undefined) {
        part = { cells: [], positions: [], maxBodyBytes: cell.maxBodyBytes };
        ofTable.push(part);
        parts.push(part);
      }
      part.cells.push(cell);
      part.positions.push(position);
    });
    const rows = await this.partitions.at(partition).read(
      scope,
      (reader) =>
        readLatestCells(
          reader,
          parts.map(({ cells: keys, maxBodyBytes }) => ({
            table: keys[0]!.table,
            keys,
            maxBodyBytes,
            // The turn's keys are distinct (placedKey), and a part's share a table and bound.
            distinct: true,
          })),
        ),
      apart,
    );
    const found = new Array<LatestCell | undefined>(cells.length).fill(undefined);
    rows.forEach((partRows, t) => {
      const { cells: keys, positions } = parts[t]!;
      const byUuid = positionsByUuid(keys);
      for (const row of partRows) {
        const asked = positionOf(keys, byUuid, String(row.uuid), String(row.column_name));
        // Never so: a row answers a cell asked for.
        if (asked === undefined) continue;
        found[positions[asked]!] = latestOf(row, keys[asked]!);
      }
    });
    return found;
  }
}

/** A latest version as a row answers it, of a cell of `table` in `shard`; undefined: none. */
function latestOf(
  row: Row,
  { table, shard }: { table: string; shard: number },
): LatestCell | undefined {
  if (row.id === null || row.id === undefined) return undefined;
  const bodyBytes = Number(row.body_bytes ?? 0);
  return {
    cell: toStoredCell(row, shard),
    table,
    bodyBytes,
    bodyUnread: row.body === null && bodyBytes > 0,
  };
}

/**
 * Where each record's keys lie among `keys`: a position, or several for a record with several
 * cells asked for. Keyed by the uuid alone, a string each key and row holds already, so that no
 * string is built for each cell.
 */
function positionsByUuid(keys: readonly CellKey[]): Map<string, number | number[]> {
  const byUuid = new Map<string, number | number[]>();
  keys.forEach(({ uuid }, k) => {
    const seen = byUuid.get(uuid);
    if (seen === undefined) byUuid.set(uuid, k);
    else if (typeof seen === 'number') byUuid.set(uuid, [seen, k]);
    else seen.push(k);
  });
  return byUuid;
}

/**
 * The position among `keys` of the key of cell `name` of record `uuid`, which a row answers: a
 * record's only key, or the one of its keys that names the cell.
 */
function positionOf(
  keys: readonly CellKey[],
  byUuid: ReadonlyMap<string, number | number[]>,
  uuid: string,
  name: string,
): number | undefined {
  const at = byUuid.get(uuid);
  return typeof at === 'number' ? at : at?.find((k) => keys[k]!.cell === name);
}

/** The cells of one table read with one body bound, and their positions in the turn's read. */
interface ReadPart {
  readonly cells: PlacedCell[];
  readonly positions: number[];
  readonly maxBodyBytes: number | undefined;
}
