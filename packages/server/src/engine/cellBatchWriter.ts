// Appending many versions in one call (WriteCells), with the guarantees of CellWriter (read its
// header): every version is inserted under its content shard's log lock, so versions stay
// contiguous, a request id applies once, and the shard log stays gap-free. What changes is the
// cost: all the writes a batch makes on one partition share one transaction of two round trips
// and one commit, instead of two round trips and a commit each.
//
// A batch is split by partition, and within a partition by content table (model and shard);
// each partition's part is one transaction:
// 1. START TRANSACTION, the log lock of every table it writes (locked in table-name order, so
//    concurrent batches cannot deadlock), and in the same round trip for each table: the latest
//    ref_key of every cell written and of each record's base cell, the latest body of each cell
//    a merge writes, and the versions that earlier writes with the batch's request ids created;
// 2. the versions decided in memory, in request order (see planGroup), inserted with one
//    multi-row INSERT per table, read back (ids, created_at) and committed. Statements are sent
//    in round trips of at most MAX_INSERT_BYTES, to stay under max_allowed_packet.
// Partitions run in parallel. One that fails (its MySQL server is down) fails the call, but
// partitions that committed stay committed: the call is idempotent, and its retry replays them
// by their request ids.
import type { AppendRequest, AppendResult, LatestVersion } from './cellWriter.js';
import { planAppend } from './cellWriter.js';
import { type ConflictError, type NotFoundError, UnavailableError } from './errors.js';
import type { StoreLayout } from './layout.js';
import type { LogNotifier } from './logNotifier.js';
import type { SqlSession } from './mysqlPool.js';
import type { PartitionSet } from './partitions.js';
import {
  type InsertedCell,
  type NewCell,
  type RequestKey,
  type StoredCell,
  toStoredCell,
} from './sql/contentRows.js';
import {
  type TableBatchState,
  type TableInsert,
  beginCellBatchWrite,
  insertCells,
  readUuidsWithBase,
  insertedBytes,
  rollback,
} from './sql/contentWrites.js';
import { duplicateKeyName } from './sqlErrors.js';

/** One write of a batch: an append to an existing record. */
export type BatchWrite = Omit<AppendRequest, 'requireRecord'>;

/** What became of one write: its version, or why it was refused (nothing written for it). */
export type BatchWriteOutcome =
  ({ ok: true } & AppendResult) | { ok: false; error: NotFoundError | ConflictError };

// mysql2 sends a body as hex, so this is about 2 MiB of bodies per round trip: well under
// max_allowed_packet's defaults (16 MiB on MariaDB, 64 MiB on MySQL 8).
const MAX_INSERT_BYTES = 4 * 1024 * 1024;

/** The writes of a batch that go to one content table, with their positions in the batch. */
interface ShardGroup {
  shard: number;
  table: string;
  writes: BatchWrite[];
  positions: number[];
}

/** The tables of a batch that live on one partition: one transaction. */
interface PartitionPart {
  partition: number;
  groups: ShardGroup[];
}

/** The decision for one write of a group, made before anything is inserted. */
type Decision =
  | { kind: 'insert'; index: number; replayed: boolean }
  | { kind: 'stored'; cell: StoredCell }
  | { kind: 'refused'; error: NotFoundError | ConflictError };

export class CellBatchWriter {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly notifier: LogNotifier,
  ) {}

  /**
   * Applies the writes, one transaction per partition, and answers one outcome per write in
   * request order. When a partition fails (it is unavailable) the call fails, yet partitions
   * that committed stay committed: callers resend the same writes, whose request ids make the
   * committed ones replay rather than apply twice.
   */
  async write(writes: readonly BatchWrite[]): Promise<BatchWriteOutcome[]> {
    const parts = this.partsByPartition(this.groupByTable(writes));
    // Settle every partition before answering, so that no transaction is still running when
    // the caller sees a failure and retries.
    const settled = await Promise.allSettled(parts.map((part) => this.writePart(part)));
    const outcomes = new Array<BatchWriteOutcome>(writes.length);
    for (const [p, result] of settled.entries()) {
      if (result.status === 'rejected') throw result.reason;
      parts[p]!.groups.forEach((group, g) =>
        result.value[g]!.forEach((outcome, i) => (outcomes[group.positions[i]!] = outcome)),
      );
    }
    return outcomes;
  }

  private groupByTable(writes: readonly BatchWrite[]): ShardGroup[] {
    const groups = new Map<string, ShardGroup>();
    writes.forEach((write, position) => {
      const shard = this.layout.contentShard(write.uuid);
      const table = this.layout.contentTable(write.model, shard);
      let group = groups.get(table);
      if (!group) groups.set(table, (group = { shard, table, writes: [], positions: [] }));
      group.writes.push(write);
      group.positions.push(position);
    });
    return [...groups.values()];
  }

  /**
   * The records of each group known to exist. A record with a version of any cell exists (no
   * cell is written before its record's base), so only records whose written cells have no
   * version yet need their base looked up: one more round trip, when there are any.
   */
  private async existingRecords(
    connection: SqlSession,
    groups: readonly ShardGroup[],
    states: readonly TableBatchState[],
  ): Promise<Set<string>[]> {
    const existing = states.map((state) => new Set(state.latest.map((row) => String(row.uuid))));
    const unknown = groups.map((group, g) => ({
      group: g,
      table: group.table,
      uuids: [...new Set(group.writes.map((write) => write.uuid))].filter(
        (uuid) => !existing[g]!.has(uuid),
      ),
    }));
    const lookups = unknown.filter(({ uuids }) => uuids.length > 0);
    const found = await readUuidsWithBase(connection, lookups);
    lookups.forEach(({ group }, i) => {
      for (const uuid of found[i]!) existing[group]!.add(uuid);
    });
    return existing;
  }

  private partsByPartition(groups: readonly ShardGroup[]): PartitionPart[] {
    const byPartition = this.layout.byPartition(groups, (group) => group.shard);
    return [...byPartition].map(([partition, partGroups]) => ({ partition, groups: partGroups }));
  }

  /**
   * One partition's transaction: the outcomes of each of its groups, in group order.
   *
   * Looking up every write's request id costs the database as much as the rest of the reads,
   * and almost every write is new. So the first attempt does not look: a write sent before
   * makes the INSERT fail on the request-id key, and a refused write may be the retry of one
   * that succeeded (its expected version is now stale); either way the transaction is rolled
   * back and run again with the lookups, which answer such writes as replays.
   */
  private async writePart(part: PartitionPart): Promise<BatchWriteOutcome[][]> {
    const optimistic = await this.writePartOnce(part, false);
    if (optimistic !== RETRY_WITH_LOOKUPS) return optimistic;
    const checked = await this.writePartOnce(part, true);
    // With the lookups made there is nothing left to retry for.
    if (checked === RETRY_WITH_LOOKUPS) throw new Error('a batch asked for lookups twice');
    return checked;
  }

  private async writePartOnce(
    part: PartitionPart,
    lookUpRequestIds: boolean,
  ): Promise<BatchWriteOutcome[][] | typeof RETRY_WITH_LOOKUPS> {
    const partition = this.partitions.at(part.partition);
    const result = await partition.withConnection(async (connection) => {
      let open = true;
      try {
        const states = await beginCellBatchWrite(
          connection,
          this.layout.logLocksTable,
          part.groups.map((group) => ({
            table: group.table,
            ...readsOf(group.writes, lookUpRequestIds),
          })),
        );
        const existing = await this.existingRecords(connection, part.groups, states);
        const plans = part.groups.map((group, g) =>
          planGroup(group.writes, states[g]!, existing[g]!, group.shard),
        );
        if (!lookUpRequestIds && plans.some(({ decisions }) => decisions.some(isRefused))) {
          await rollback(connection);
          open = false;
          return RETRY_WITH_LOOKUPS;
        }
        const inserts = part.groups
          .map((group, g) => ({ group: g, table: group.table, cells: plans[g]!.inserts }))
          .filter(({ cells }) => cells.length > 0);
        if (inserts.length === 0) {
          await rollback(connection);
          open = false;
          return { outcomes: plans.map((plan) => outcomesOf(plan.decisions, [])), written: [] };
        }
        const stored = part.groups.map((): StoredCell[] => []);
        const rounds = roundTripsOf(inserts);
        for (const [r, round] of rounds.entries()) {
          const last = r === rounds.length - 1;
          const rows = await insertCells(connection, round, last, this.layout.createdAt);
          if (last) open = false;
          round.forEach((insert, i) => {
            const group = part.groups[insert.group]!;
            stored[insert.group]!.push(
              ...storedCellsOf(insert.cells, rows[i]!, group.shard, partition.index),
            );
          });
        }
        return {
          outcomes: plans.map((plan, g) => outcomesOf(plan.decisions, stored[g]!)),
          written: inserts.map(({ table }) => table),
        };
      } catch (error) {
        if (open) await rollback(connection).catch(() => connection.destroy());
        const key = duplicateKeyName(error);
        if (key === REQUEST_ID_KEY && !lookUpRequestIds) return RETRY_WITH_LOOKUPS;
        if (key !== undefined) {
          // Only a writer that bypasses the log lock (the gem, a manual INSERT) can race us.
          throw new UnavailableError(
            partition.index,
            `a concurrent write outside Shameless touched partition ${partition.index}; retry`,
            { cause: error },
          );
        }
        throw error;
      }
    });
    if (result === RETRY_WITH_LOOKUPS) return result;
    for (const table of result.written) this.notifier.notify(table);
    return result.outcomes;
  }
}

const cellKey = (uuid: string, cell: string) => `${uuid}/${cell}`;
// Unambiguous: uuids, cell names and request ids never contain '/'.
const requestKey = (uuid: string, cell: string, requestId: string) =>
  `${uuid}/${cell}/${requestId}`;

/** The content tables' unique key on (uuid, column_name, request_id). */
const REQUEST_ID_KEY = 'uuid_column_request_id';
const RETRY_WITH_LOOKUPS = Symbol('retry with request-id lookups');

const isRefused = (decision: Decision) => decision.kind === 'refused';

/** What a group's transaction must read, each list without duplicates. */
function readsOf(writes: readonly BatchWrite[], lookUpRequestIds: boolean) {
  const versionsOf = { uuids: new Set<string>(), cells: new Set<string>() };
  const bodiesOf = { uuids: new Set<string>(), cells: new Set<string>() };
  const requests = new Map<string, RequestKey>();
  for (const { uuid, cell, content, requestId } of writes) {
    versionsOf.uuids.add(uuid);
    versionsOf.cells.add(cell);
    if (content.mode === 'merge') {
      bodiesOf.uuids.add(uuid);
      bodiesOf.cells.add(cell);
    }
    if (lookUpRequestIds)
      requests.set(requestKey(uuid, cell, requestId), { uuid, cell, requestId });
  }
  return {
    versionsOf: { uuids: [...versionsOf.uuids], cells: [...versionsOf.cells] },
    bodiesOf:
      bodiesOf.uuids.size > 0
        ? { uuids: [...bodiesOf.uuids], cells: [...bodiesOf.cells] }
        : undefined,
    requests: [...requests.values()],
  };
}

/**
 * Decides every write of a group in request order, as if each were a WriteCell sent after the
 * one before: a write whose request id was applied earlier replays that version; one whose
 * request id appeared earlier in the batch (for the same cell, and succeeded) replays that
 * write; any other is decided by planAppend against the cell's latest version, which the
 * batch's own earlier writes advance (so their ref_keys chain, and a merge applies onto the
 * body written just before it). A refused write changes nothing for the ones after it.
 */
function planGroup(
  writes: readonly BatchWrite[],
  state: TableBatchState,
  existing: ReadonlySet<string>,
  shard: number,
): { decisions: Decision[]; inserts: NewCell[] } {
  const latest = new Map<string, LatestVersion>();
  for (const row of state.latest) {
    latest.set(cellKey(String(row.uuid), String(row.column_name)), {
      refKey: Number(row.ref_key),
      body: undefined,
    });
  }
  for (const row of state.latestBodies) {
    const version = latest.get(cellKey(String(row.uuid), String(row.column_name)));
    // Both reads ran under the log lock: the body is the one of the version just read.
    if (version && row.body instanceof Buffer) version.body = row.body;
  }
  const applied = new Map<string, StoredCell>();
  for (const row of state.replayed) {
    applied.set(
      requestKey(String(row.uuid), String(row.column_name), String(row.request_id)),
      toStoredCell(row, shard),
    );
  }

  const createdAt = new Date();
  const inserts: NewCell[] = [];
  const insertOf = new Map<string, number>();
  const decisions = writes.map((write): Decision => {
    const request = requestKey(write.uuid, write.cell, write.requestId);
    const earlier = applied.get(request);
    if (earlier) return { kind: 'stored', cell: earlier };
    const inBatch = insertOf.get(request);
    if (inBatch !== undefined) return { kind: 'insert', index: inBatch, replayed: true };

    const key = cellKey(write.uuid, write.cell);
    const plan = planAppend(
      { ...write, requireRecord: true },
      latest.get(key),
      existing.has(write.uuid),
    );
    if ('refused' in plan) return { kind: 'refused', error: plan.refused };
    const index = inserts.length;
    inserts.push({
      uuid: write.uuid,
      name: write.cell,
      refKey: plan.refKey,
      body: plan.body,
      createdAt,
      requestId: write.requestId,
    });
    insertOf.set(request, index);
    latest.set(key, { refKey: plan.refKey, body: plan.body });
    return { kind: 'insert', index, replayed: false };
  });
  return { decisions, inserts };
}

/** A table's inserts, with the index of its group in the partition's part. */
type GroupInsert = TableInsert & { group: number; cells: NewCell[] };

/**
 * The inserts split into round trips of at most MAX_INSERT_BYTES each (at least one version
 * each), in order; a table's versions may be split over several.
 */
function roundTripsOf(inserts: readonly GroupInsert[]): GroupInsert[][] {
  const rounds: GroupInsert[][] = [];
  let round: GroupInsert[] = [];
  let bytes = 0;
  for (const insert of inserts) {
    let current: GroupInsert | undefined;
    for (const cell of insert.cells) {
      const size = insertedBytes(cell);
      if (bytes > 0 && bytes + size > MAX_INSERT_BYTES) {
        rounds.push(round);
        round = [];
        bytes = 0;
        current = undefined;
      }
      if (!current) round.push((current = { ...insert, cells: [] }));
      current.cells.push(cell);
      bytes += size;
    }
  }
  if (round.length > 0) rounds.push(round);
  return rounds;
}

/**
 * The stored versions of a chunk, from the rows read back by id range. Under the log lock no
 * other Shameless writer inserts into the table, so the range holds exactly the chunk's rows.
 * Only a writer that bypasses the lock (the gem) could have taken ids inside it, and only when
 * InnoDB interleaves auto-increment values (innodb_autoinc_lock_mode = 2): the rows then do
 * not line up, and the call fails UNAVAILABLE. Its retry replays what committed.
 */
function storedCellsOf(
  chunk: readonly NewCell[],
  rows: readonly InsertedCell[],
  shard: number,
  partition: number,
): StoredCell[] {
  const lined =
    rows.length === chunk.length &&
    rows.every(
      (row, i) =>
        row.uuid === chunk[i]!.uuid &&
        row.name === chunk[i]!.name &&
        row.refKey === chunk[i]!.refKey,
    );
  if (!lined) {
    throw new UnavailableError(
      partition,
      `a concurrent insert outside Shameless interleaved with a batch on shard ${shard}; retry`,
    );
  }
  return rows.map((row, i) => ({ ...row, shard, body: chunk[i]!.body }));
}

function outcomesOf(
  decisions: readonly Decision[],
  stored: readonly StoredCell[],
): BatchWriteOutcome[] {
  return decisions.map((decision) => {
    switch (decision.kind) {
      case 'stored':
        return { ok: true, cell: decision.cell, replayed: true };
      case 'insert':
        return { ok: true, cell: stored[decision.index]!, replayed: decision.replayed };
      case 'refused':
        return { ok: false, error: decision.error };
    }
  });
}
