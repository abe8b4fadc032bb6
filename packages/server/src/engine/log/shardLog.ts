// Reading a model's content shards as ordered logs: single pages (FetchLatestCells) and
// streams that can follow new writes (Each). Gap-freedom comes from the writers (see
// cellWriter.ts); readers simply read `id > cursor`.
import type { CallScope } from '../base/callScope.js';
import type { StoreLayout } from '../model/layout.js';
import { ANSWER_BYTES_PER_CELL } from '../read/latestCells.js';
import type { LogNotifier } from './logNotifier.js';
import type { RowId } from '../base/exactInteger.js';
import type { MaxIdPoller } from './maxIdPoller.js';
import type { CompiledModel } from '../model/model.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { requireLimit, requireShard } from '../base/requestFields.js';
import type { Row } from '../mysql/mysqlPool.js';
import { MAX_HANDED_OVER_BYTES, ShardWatch } from './shardWatch.js';
import { readLogPage, readLogPages } from '../mysql/sql/contentReads.js';
import { type StoredCell, toStoredCell } from '../mysql/sql/contentRows.js';
import { readBodiesInto } from '../read/unreadBodies.js';
import type { PartitionRouting } from '../mysql/partitionRouting.js';

export interface LogPage {
  cells: StoredCell[];
  nextCursor: RowId;
  maxId: RowId;
}

export interface EachInput {
  shards: readonly number[];
  cursors: ReadonlyMap<number, RowId>;
  follow: boolean;
  batchSize: number;
  heartbeatIntervalMs: number;
  /**
   * Bytes of cells the stream holds at most besides its messages: read ahead, and handed over
   * by commits through this server (EACH_CELLS_HELD_BYTES when left out). A consumer group
   * member shares its own among the shards it follows.
   */
  heldBytes?: { readAhead: number; handedOver: number };
}

export type EachEvent =
  | { kind: 'batch'; shard: number; cells: StoredCell[]; cursor: RowId }
  | { kind: 'heartbeat'; at: Date; cursors: Map<number, RowId> };

const DEFAULT_PAGE = 1000;
const DEFAULT_BATCH = 500;
const DEFAULT_HEARTBEAT_MS = 1000;
/**
 * Each reads the next pages of several shards in one round trip per partition, but holds at
 * most about this many cells, and about this many bytes of them, for a consumer that has not
 * taken them yet (a client that does not read holds its stream at that).
 */
const MAX_READ_AHEAD_CELLS = 5000;
const MAX_READ_AHEAD_BYTES = 256 * 1024;
/** The most bytes of cells an Each stream holds besides its messages: read, or handed over. */
export const EACH_CELLS_HELD_BYTES = MAX_READ_AHEAD_BYTES + MAX_HANDED_OVER_BYTES;
/** What a cell is assumed to weigh until streams have read some. */
const ASSUMED_CELL_BYTES = 16 * 1024;
/** Weight of the latest read in the running average of a cell's weight. */
const CELL_BYTES_WEIGHT = 0.3;

export class ShardLog {
  /** What cells read by streams weighed lately, on average: it sizes their next reads. */
  private cellBytes = ASSUMED_CELL_BYTES;
  private cellBytesLearned = false;

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly notifier: LogNotifier,
    /** Reads followed shards' max ids for every follower of the process at once. */
    private readonly poller: MaxIdPoller,
    /** The most cells of one page or batch. */
    private readonly maxPage: number,
    /** The most bytes of cells a FetchLatestCells page answers (at least one cell). */
    private readonly maxAnswerBytes = Infinity,
    /** Where a moved shard went: a stream goes on from its cursors there (see each). */
    private readonly routing?: PartitionRouting,
  ) {}

  /** One page of a shard's log, for the call of `scope`. */
  async fetchPage(
    scope: CallScope,
    model: CompiledModel,
    shard: number,
    cursor: RowId,
    limit: number,
  ): Promise<LogPage> {
    requireShard(shard, this.layout.shardsCount, 'shard');
    const pageSize = requireLimit(
      limit,
      'limit',
      Math.min(DEFAULT_PAGE, this.maxPage),
      this.maxPage,
    );
    // Read no more cells than the answer can hold by what cells weighed lately, and cut the
    // page where its cells reach the answer's bound: a shorter page, whose cursor goes on.
    const fitting = Math.max(1, Math.floor(this.maxAnswerBytes / this.cellBytes));
    const limitRead = Math.min(pageSize, fitting);
    if (!Number.isFinite(this.maxAnswerBytes)) {
      const page = await this.readPage(scope, model, shard, cursor, limitRead);
      this.learnCellBytes(page.cells);
      return page;
    }
    // Bodies past their even share of the answer are read only once the page is cut to fit:
    // the estimate above may be far off (it is what other streams' cells weighed).
    const share = logPageBodyBytes(this.maxAnswerBytes, limitRead);
    const table = this.layout.contentTable(model, shard);
    const partition = this.partitions.forShard(shard);
    const { rows, maxId } = await partition.read(scope, (reader) =>
      readLogPage(reader, { table, cursor, limit: limitRead, maxBodyBytes: share }),
    );
    const { cells, unread } = cutPage(rows, shard, this.maxAnswerBytes);
    await readBodiesInto(scope, partition, [{ table, cells: unread }]);
    this.learnCellBytes(cells);
    return { cells, nextCursor: cells[cells.length - 1]?.id ?? cursor, maxId };
  }

  private async readPage(
    scope: CallScope,
    model: CompiledModel,
    shard: number,
    cursor: RowId,
    limit: number,
  ): Promise<LogPage> {
    const { rows, maxId } = await this.partitions
      .forShard(shard)
      .read(scope, (reader) =>
        readLogPage(reader, { table: this.layout.contentTable(model, shard), cursor, limit }),
      );
    const cells = rows.map((row) => toStoredCell(row, shard));
    return { cells, nextCursor: cells[cells.length - 1]?.id ?? cursor, maxId };
  }

  /**
   * Streams every listed shard from its cursor, one batch at a time and round-robin across
   * shards. Pull-based: nothing is read until the consumer asks for the next event, so a slow
   * consumer holds the stream back instead of filling memory. A shard that moved to another
   * partition (its table gone from the old one: the move's fence) is read there from the
   * cursor the stream reached: ids do not change in a move, so nothing is missed or repeated.
   * Its reads serve the call (or member session) of `scope`, which ends with `signal`.
   */
  async *each(
    scope: CallScope,
    model: CompiledModel,
    input: EachInput,
    signal: AbortSignal,
  ): AsyncGenerator<EachEvent> {
    if (!this.routing) return yield* this.eachOnce(scope, model, input, signal);
    const cursors = new Map(input.cursors);
    for (let attempt = 0; ; attempt++) {
      const before = this.routing.map.version;
      try {
        for await (const event of this.eachOnce(scope, model, { ...input, cursors }, signal)) {
          if (event.kind === 'batch') cursors.set(event.shard, event.cursor);
          else for (const [shard, cursor] of event.cursors) cursors.set(shard, cursor);
          // A stream that went on after a move starts its count again at the next.
          attempt = 0;
          yield event;
        }
        return;
      } catch (error) {
        await this.routing.recover(error, before, attempt, scope);
      }
    }
  }

  private async *eachOnce(
    scope: CallScope,
    model: CompiledModel,
    input: EachInput,
    signal: AbortSignal,
  ): AsyncGenerator<EachEvent> {
    // Checked before a shard listed twice is dropped, so that an error names the field sent.
    const shards =
      input.shards.length > 0
        ? [
            ...new Set(
              input.shards.map((shard, i) =>
                requireShard(shard, this.layout.shardsCount, `shards[${i}]`),
              ),
            ),
          ]
        : Array.from({ length: this.layout.shardsCount }, (_, shard) => shard);
    for (const shard of input.cursors.keys()) {
      requireShard(shard, this.layout.shardsCount, `cursors[${shard}]`);
    }
    const batchSize = requireLimit(
      input.batchSize,
      'batch_size',
      Math.min(DEFAULT_BATCH, this.maxPage),
      this.maxPage,
    );
    // New cells from other servers are seen once a poll: a heartbeat more often would tell the
    // client nothing new (and the proto promises it no shorter than the poll interval).
    const heartbeatMs = Math.max(
      input.heartbeatIntervalMs || DEFAULT_HEARTBEAT_MS,
      this.poller.intervalMs,
    );
    const cursors = new Map<number, RowId>(
      shards.map((shard) => [shard, input.cursors.get(shard) ?? 0]),
    );
    // Watching from the start, not from the first wait: a write that commits while the
    // stream catches up wakes it then, instead of waiting for the next poll.
    const watch = input.follow
      ? new ShardWatch(
          shards.map((shard) => ({
            shard,
            partition: this.layout.partitionOf(shard),
            table: this.layout.contentTable(model, shard),
          })),
          cursors,
          this.notifier,
          this.poller,
          input.heldBytes?.handedOver,
        )
      : undefined;
    const readAheadBytes = input.heldBytes?.readAhead ?? MAX_READ_AHEAD_BYTES;
    // Shards that may have rows past their cursor; all of them to begin with.
    let pending = new Set(shards);
    // The first round, and each after a wait, reads every pending shard at once, sharing the
    // read-ahead evenly: a follower woken by a commit that wrote several shards reads them in
    // one round trip, not one after another. Later rounds read the shards that had more to
    // read, in full pages, as many as the read-ahead holds.
    let sharedRound = true;
    let lastSent = Date.now();

    try {
      while (!signal.aborted) {
        // Several shards' next pages per read (one round trip per partition); each shard's
        // pages still come in id order. Large cells make smaller pages (fewer cells a message).
        const aheadCells = Math.max(
          1,
          Math.floor(Math.min(MAX_READ_AHEAD_CELLS, readAheadBytes / this.cellBytes)),
        );
        const fullPage = Math.max(1, Math.min(batchSize, aheadCells));
        const round = [...pending].slice(
          0,
          sharedRound ? aheadCells : Math.max(1, Math.floor(aheadCells / fullPage)),
        );
        const pageSize = Math.max(1, Math.min(fullPage, Math.floor(aheadCells / round.length)));
        sharedRound = false;
        const pages = await this.nextPages(
          scope,
          model,
          round,
          cursors,
          pageSize,
          watch,
          readAheadBytes,
        );
        this.learnCellBytes(pages.flatMap(({ cells }) => cells));
        const deferred = round.filter((_, i) => pages[i]!.deferred);
        for (const [i, shard] of round.entries()) {
          if (signal.aborted) return;
          const { cells, more } = pages[i]!;
          // A shard with more to read goes to the back: shards take turns.
          pending.delete(shard);
          if (more) pending.add(shard);
          if (cells.length === 0) continue;
          const cursor = cells[cells.length - 1]!.id;
          cursors.set(shard, cursor);
          lastSent = Date.now();
          yield { kind: 'batch', shard, cells, cursor };
        }
        // A shard left out of a full round leads the next, or a shard that always has more
        // could keep it out for ever.
        if (deferred.length > 0) pending = new Set([...deferred, ...pending]);
        if (pending.size > 0) continue;
        if (!watch) return;

        if (Date.now() - lastSent >= heartbeatMs) {
          lastSent = Date.now();
          yield { kind: 'heartbeat', at: new Date(), cursors: new Map(cursors) };
        }
        // Woken by a write through this server, by a poll that read a max id past a cursor, or
        // when the next heartbeat is due; a failed poll of one of the shards throws here, as
        // the stream's own read would.
        pending = await watch.moved(Math.max(1, heartbeatMs - (Date.now() - lastSent)), signal);
        sharedRound = true;
      }
    } finally {
      watch?.close();
    }
  }

  /**
   * The next page of each shard of a round, in order: from the cells commits through this
   * server handed over where they are the next ones, and read (readPages) for the others.
   */
  private async nextPages(
    scope: CallScope,
    model: CompiledModel,
    round: readonly number[],
    cursors: ReadonlyMap<number, RowId>,
    pageSize: number,
    watch: ShardWatch | undefined,
    readAheadBytes: number,
  ): Promise<{ cells: StoredCell[]; more: boolean; deferred: boolean }[]> {
    const handedOver = new Map<number, StoredCell[]>();
    if (watch) {
      for (const shard of round) {
        const cells = watch.handedOverPage(shard, cursors.get(shard)!, pageSize);
        if (cells) handedOver.set(shard, cells);
      }
    }
    const toRead = round.filter((shard) => !handedOver.has(shard));
    watch?.reading(toRead);
    const read =
      toRead.length > 0
        ? await this.readPages(scope, model, toRead, cursors, pageSize, readAheadBytes)
        : [];
    let next = 0;
    return round.map((shard) => {
      const cells = handedOver.get(shard);
      if (!cells) return read[next++]!;
      return { cells, more: watch?.holdsHandedOver(shard) ?? false, deferred: false };
    });
  }

  private learnCellBytes(cells: readonly StoredCell[]): void {
    if (cells.length === 0) return;
    const average = cells.reduce((sum, cell) => sum + cell.body.length + 64, 0) / cells.length;
    this.cellBytes = this.cellBytesLearned
      ? this.cellBytes + CELL_BYTES_WEIGHT * (average - this.cellBytes)
      : average;
    this.cellBytesLearned = true;
  }

  /**
   * The next page of each shard, in order: one round trip per partition, in parallel, then one
   * more for the bodies left out of it. `deferred`: the shard has cells, but none in this
   * round (see below); it should lead the next.
   */
  private async readPages(
    scope: CallScope,
    model: CompiledModel,
    shards: readonly number[],
    cursors: ReadonlyMap<number, RowId>,
    limit: number,
    readAheadBytes: number,
  ): Promise<{ cells: StoredCell[]; more: boolean; deferred: boolean }[]> {
    // The read holds about MAX_READ_AHEAD_BYTES of bodies whatever the cells weigh: each shard
    // its share, each of its cells an even share of that; longer bodies are read afterwards,
    // by id, for the cells of the page cut where its share is full.
    const perShard = Math.max(1, Math.floor(readAheadBytes / Math.max(1, shards.length)));
    const maxBodyBytes = Math.floor(perShard / limit);
    const byPartition = [...this.layout.byPartition(shards.keys(), (i) => shards[i]!)];
    const tables = shards.map((shard) => this.layout.contentTable(model, shard));
    const reads = new Array<Row[]>(shards.length);
    await Promise.all(
      byPartition.map(async ([partition, positions]) => {
        const rows = await this.partitions.at(partition).read(scope, (reader) =>
          readLogPages(
            reader,
            positions.map((i) => ({
              table: tables[i]!,
              cursor: cursors.get(shards[i]!)!,
              limit,
              maxBodyBytes,
            })),
          ),
        );
        positions.forEach((i, p) => (reads[i] = rows[p]!));
      }),
    );
    // A page keeps its first cell past its share (a message holds at least one cell), but only
    // while the round holds no other: were every shard to keep one large cell, the round would
    // hold the shards' count of them. A shard whose first cell alone is past its share then
    // waits for the next round, which it leads.
    let kept = 0;
    const pages = shards.map((shard, i) => {
      const read = reads[i]!;
      const page = cutPage(read, shard, perShard, 0, kept === 0);
      kept += page.cells.length;
      return {
        ...page,
        more: read.length === limit || page.cells.length < read.length,
        deferred: page.cells.length === 0 && read.length > 0,
      };
    });
    await Promise.all(
      byPartition.map(([partition, positions]) =>
        readBodiesInto(
          scope,
          this.partitions.at(partition),
          positions.map((i) => ({ table: tables[i]!, cells: pages[i]!.unread })),
        ),
      ),
    );
    return pages;
  }
}

/**
 * The longest body a FetchLatestCells page of `cells` cells reads with its row when its answer
 * may hold `maxAnswerBytes`: an even share of it, less a cell's overhead.
 */
export function logPageBodyBytes(maxAnswerBytes: number, cells: number): number {
  return Math.max(0, Math.floor(maxAnswerBytes / cells) - ANSWER_BYTES_PER_CELL);
}

/**
 * The cells of a page read with a body bound, from the first, while their bodies (and
 * `perCell` bytes each) take at most `maxBytes` (at least one cell, unless `keepFirst` is
 * false); and those of them whose body was left out, to read by id.
 */
function cutPage(
  rows: readonly Row[],
  shard: number,
  maxBytes: number,
  perCell = ANSWER_BYTES_PER_CELL,
  keepFirst = true,
): { cells: StoredCell[]; unread: StoredCell[] } {
  const cells: StoredCell[] = [];
  const unread: StoredCell[] = [];
  let bytes = 0;
  for (const row of rows) {
    const length = Number(row.body_bytes ?? 0);
    bytes += length + perCell;
    if (bytes > maxBytes && (cells.length > 0 || !keepFirst)) break;
    const cell = toStoredCell(row, shard);
    cells.push(cell);
    if (row.body === null && length > 0) unread.push(cell);
  }
  return { cells, unread };
}
