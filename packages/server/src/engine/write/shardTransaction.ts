// The one transaction that writes content rows: every append and every create goes through it,
// alone or grouped with others bound for the same partition (groupCommit.ts). It locks the
// log-lock row of each content table it writes, which gives three guarantees at once:
// - versions are contiguous: the latest ref_key read under the lock is still the latest at
//   insert, so concurrent writers get 0..n-1 with no gap and no duplicate;
// - writes are idempotent: a request id already applied is seen under the lock and answered
//   with the version it created;
// - each shard's log is gap-free: ids are allocated and committed in the same order, so a
//   reader of `id > cursor` never skips a row that commits later.
//
// Two round trips, one commit, for the whole group, in as few statements as possible (each one
// costs MySQL a parse and a result, whatever it does):
// 1. START TRANSACTION; the log locks (in table-name order, so groups sharing tables cannot
//    deadlock on them); one SELECT of the latest version of every cell appended to (with its
//    body for a merge) and of each record's base cell (whether the record exists, unless this
//    server knows it does: knownRecords.ts), across all tables; the primary-index rows that
//    appends were reached through (a put's update), to check they still lead there; per index
//    table that creates write, INSERT IGNORE of their rows (in key order). Where an INSERT
//    IGNORE stored fewer rows than it was given, some create's values were taken: who holds
//    them is read in one more round trip.
// 2. Versions decided in memory (groupPlan.ts); per content table one multi-row INSERT, the
//    index rows of refused creates deleted, COMMIT. The ids of an INSERT's rows follow from
//    the first, which its answer carries, where the partition gives a multi-row INSERT
//    consecutive ids; its created_at is the time it was given, cut to what the column keeps
//    (storedTimes.ts). Where either is not known, the INSERT is followed by the read-back of
//    what it stored (a primary-key range).
//    Inserts are split over round trips of at most MAX_INSERT_BYTES, to stay under
//    max_allowed_packet.
//
// A group of creates, and of appends whose cells this server remembers (versionCache.ts), is
// first written in one round trip instead: START TRANSACTION; the log locks; a savepoint; the
// creates' index rows (a plain INSERT: a key taken fails it); the INSERTs of base version 0 of
// each create and of the versions after the remembered ones; COMMIT. The appends reached
// through primary-index rows (a put's updates) carry the check of those rows, one condition for
// all, inside the INSERT of the first of them (insertCellIf), so that nothing is committed
// unless every one holds. A remembered version that is no longer the latest makes an INSERT fail on the
// (uuid, column_name, ref_key) key, which stops the round trip before its COMMIT: the group
// goes back to a savepoint taken after the locks and is written the usual way in the same
// transaction, so a stale version costs one round trip; so does a create whose values are
// taken, which the usual way answers (the put becomes an update). Refusals and appends the
// cache does not cover go the usual way from the start.
//
// Request ids are not looked up on the first attempt (almost every write is new, and the
// lookups cost as much as the other reads): a write sent before makes an INSERT fail on the
// request-id key, and a refused write may be the retry of one that succeeded (its expected
// version is now stale); either way the transaction is rolled back and run again with the
// lookups, which answer such writes as replays.
import { CellsInFlight } from './cellsInFlight.js';
import { UnavailableError } from '../base/errors.js';
import {
  type CreateFate,
  type Decision,
  type GroupPlan,
  type TableReads,
  type LatestVersion,
  cellKey,
  planGroup,
  requestKey,
} from './groupPlan.js';
import type { KnownRecords } from './knownRecords.js';
import { type Logger, silentLogger } from '../base/logger.js';
import type { StoreLayout } from '../model/layout.js';
import type { LogNotifier } from '../log/logNotifier.js';
import { OneTripBackoff } from '../mysql/oneTripBackoff.js';
import { BASE_CELL } from '../model/model.js';
import { exactInteger, offsetId } from '../base/exactInteger.js';
import type { Row, SqlConnection, SqlSession, WriteResult } from '../mysql/mysqlPool.js';
import type { Partition } from '../mysql/partitions.js';
import { type LatestKey, latestVersionsOf } from '../mysql/sql/contentReads.js';
import {
  type InsertedCell,
  type NewCell,
  type RequestKey,
  type StoredCell,
  toStoredCell,
} from '../mysql/sql/contentRows.js';
import {
  insertCellIf,
  insertCells,
  insertedBytes,
  readInserted,
  lockLogRows,
  lockedTables,
  toInsertedCell,
  writesByRequestId,
} from '../mysql/sql/contentWrites.js';
import { insertLogLocks } from '../mysql/sql/storeTables.js';
import {
  deleteIndexRows,
  indexRowHolders,
  insertIndexRows,
  primaryLookups,
  primaryRowsLeadTo,
} from '../mysql/sql/indexTable.js';
import {
  COMMIT,
  ROLLBACK,
  ROLLBACK_TO_SAVEPOINT,
  SAVEPOINT,
  START_TRANSACTION,
  type Statement,
  runTogether,
} from '../mysql/sql/statement.js';
import { duplicateKeyName, isDeadlock } from '../mysql/sqlErrors.js';
import type { StoredTimes } from '../model/storedTimes.js';
import { NO_VERSION, type VersionCache } from '../base/versionCache.js';
import {
  type CreateRequest,
  type IndexRowWrite,
  type ItemOutcome,
  type WriteItem,
  uniqueIndexCollision,
} from './writeItems.js';

// mysql2 sends a body as hex, so this is about 2 MiB of bodies per round trip: well under
// max_allowed_packet's defaults (16 MiB on MariaDB, 64 MiB on MySQL 8).
const MAX_INSERT_BYTES = 4 * 1024 * 1024;
/** Deadlocks (between creates inserting the same index keys) are retried this often. */
const DEADLOCK_ATTEMPTS = 3;
/** The content tables' unique key on (uuid, column_name, request_id). */
const REQUEST_ID_KEY = 'uuid_column_request_id';

const RETRY_WITH_LOOKUPS = Symbol('retry with request-id lookups');
const RETRY_AFTER_DEADLOCK = Symbol('retry after a deadlock');
/** A key was taken (a remembered version stale, a create's values held): the usual way. */
const STALE = Symbol('stale');
/** A request id had been applied: the group goes the usual way, with the lookups. */
const REQUEST_APPLIED = Symbol('request applied');
type Retry = typeof RETRY_WITH_LOOKUPS | typeof RETRY_AFTER_DEADLOCK;

/** What a transaction that committed did: one outcome per item, and the cells it stored. */
interface Written {
  readonly outcomes: ItemOutcome[];
  /** Every cell the commit stored, by content table, in id order. */
  readonly written: ReadonlyMap<string, readonly StoredCell[]>;
}

/** The items of a group that write one content table. */
interface TableWrites {
  readonly table: string;
  readonly shard: number;
  readonly appends: number[];
}

/** A create's row in one index, with the create's position in the group. */
interface PlacedIndexRow extends IndexRowWrite {
  readonly item: number;
  readonly uuid: string;
}

/**
 * Log-lock rows the lock found missing (a restore that left them out, a manual DELETE): the
 * attempt was rolled back, nothing written; the rows are put back and the group tried again.
 */
class MissingLogLocks extends Error {
  constructor(readonly tables: readonly string[]) {
    super(`log lock rows missing for ${tables.join(', ')}`);
  }
}

export class ShardTransaction {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partition: Partition,
    private readonly notifier: LogNotifier,
    private readonly times: StoredTimes,
    private readonly knownRecords: KnownRecords,
    private readonly versions: VersionCache,
    private readonly logger: Logger = silentLogger,
  ) {}

  private readonly oneTrip = new OneTripBackoff();
  private readonly inFlight = new CellsInFlight();

  /**
   * Applies the items, all on this partition, in one transaction and answers one outcome per
   * item, in order, once no earlier group of this server writes any of their cells. Fails as a
   * whole only when the partition fails (UnavailableError).
   */
  async run(items: readonly WriteItem[]): Promise<ItemOutcome[]> {
    const leave = await this.inFlight.enter(
      items.flatMap((item) =>
        item.kind === 'append' ? [`${this.tableOf(item)}/${cellKey(item.uuid, item.cell)}`] : [],
      ),
    );
    try {
      try {
        return await this.runAlone(items);
      } catch (error) {
        if (!(error instanceof MissingLogLocks)) throw error;
        await this.partition.run((pool) => this.restoreLogLocks(pool, error.tables, false));
        return await this.runAlone(items);
      }
    } finally {
      leave();
    }
  }

  /**
   * Puts back log-lock rows found missing, so that the next writes lock their tables again
   * (DefineModel would too). `committed`: a one-trip write committed without them (its lock
   * statement cannot stop the round trip), so a follower may have seen its table's log out of
   * order meanwhile.
   */
  private async restoreLogLocks(
    session: SqlSession,
    tables: readonly string[],
    committed: boolean,
  ): Promise<void> {
    await insertLogLocks(session, this.layout.logLocksTable, tables);
    const fields = { partition: this.partition.index, tables };
    if (committed) {
      this.logger.error('a write committed without its log lock rows, missing: restored', fields);
    } else this.logger.warn('log lock rows were missing: restored, the write went on', fields);
  }

  private async runAlone(items: readonly WriteItem[]): Promise<ItemOutcome[]> {
    let lookUpRequestIds = false;
    let deadlocks = 0;
    const remembered = this.oneTripReads(items);
    if (remembered && this.oneTrip.shouldTry()) {
      const result = await this.partition.withConnection((connection) =>
        this.attemptOneTripFirst(connection, items, remembered),
      );
      if (result === RETRY_WITH_LOOKUPS) lookUpRequestIds = true;
      else if (result === RETRY_AFTER_DEADLOCK) deadlocks += 1;
      else if (result !== undefined) return this.committed(items, result);
    }
    for (;;) {
      const result = await this.partition.withConnection((connection) =>
        this.attempt(connection, items, lookUpRequestIds),
      );
      if (result === RETRY_WITH_LOOKUPS) {
        // With the lookups made there is nothing left to retry for.
        if (lookUpRequestIds) throw new Error('a group asked for request-id lookups twice');
        lookUpRequestIds = true;
      } else if (result === RETRY_AFTER_DEADLOCK) {
        deadlocks += 1;
        if (deadlocks >= DEADLOCK_ATTEMPTS) {
          throw new UnavailableError(
            this.partition.index,
            `partition ${this.partition.index} is busy (concurrent creates of the same values); retry`,
          );
        }
      } else {
        return this.committed(items, result);
      }
    }
  }

  /** Tells the log's followers, and remembers what the group's commit made known. */
  private committed(items: readonly WriteItem[], result: Written): ItemOutcome[] {
    for (const [table, cells] of result.written) this.notifier.notify(table, cells);
    result.outcomes.forEach((outcome, i) => {
      const item = items[i]!;
      if (outcome.status !== 'written') return;
      // Records written to before were known or read to exist; created ones are new.
      if (item.kind === 'create') this.knownRecords.add(item.model.name, item.uuid);
      // A replay answers an earlier version, not the latest.
      if (outcome.replayed) return;
      const { cell } = outcome;
      const table = this.tableOf(item);
      if (item.kind !== 'create') {
        this.versions.set(table, cell.uuid, cell.name, cell.refKey, cell.body);
        return;
      }
      this.versions.setCreated(table, cell.uuid, cell.name, cell.refKey, cell.body);
      for (const other of item.model.spec.cells) {
        this.versions.setCreated(table, cell.uuid, other, NO_VERSION, undefined);
      }
    });
    return result.outcomes;
  }

  private tableOf(item: WriteItem): string {
    return this.layout.contentTable(item.model, this.layout.contentShard(item.uuid));
  }

  /**
   * What the usual attempt would read under the locks, from the version cache: undefined unless
   * every append of the group is to a remembered cell (with its body, for a merge; at the
   * version it expects, if it expects one), or to a cell remembered to have no version, of a
   * record this server created. Creates need nothing read, whether or not the cache remembers
   * anything.
   */
  private oneTripReads(items: readonly WriteItem[]): Map<string, TableReads> | undefined {
    const reads = new Map<
      string,
      TableReads & { latest: Map<string, LatestVersion>; existing: Set<string> }
    >();
    for (const item of items) {
      if (item.kind !== 'append') continue;
      const table = this.tableOf(item);
      const version = this.versions.get(table, item.uuid, item.cell);
      if (!version) return undefined;
      // Only cells other than base are remembered without a version: a Put's check through the
      // primary index (insertCellIf) writes base, so it always has a version to fail on.
      const none = version.refKey === NO_VERSION;
      if (item.content.mode === 'merge' && version.body === undefined && !none) return undefined;
      if (item.expectedRefKey !== undefined && item.expectedRefKey !== version.refKey) {
        return undefined;
      }
      let read = reads.get(table);
      if (!read) {
        read = { latest: new Map(), applied: new Map(), existing: new Set() };
        reads.set(table, read);
      }
      // Remembered without a version only when this server created the record.
      if (none) read.existing.add(item.uuid);
      else read.latest.set(cellKey(item.uuid, item.cell), version);
    }
    return reads;
  }

  /**
   * The group in one round trip, or where a key was taken (a remembered version stale, a
   * create's values held, a request id applied), the usual way in the same transaction, from
   * the savepoint after its locks. Undefined when it is to be written the usual way from the
   * start.
   */
  private async attemptOneTripFirst(
    connection: SqlConnection,
    items: readonly WriteItem[],
    reads: ReadonlyMap<string, TableReads>,
  ): Promise<Written | Retry | undefined> {
    const tried = await this.attemptInOneTrip(connection, items, reads);
    if (tried !== STALE && tried !== REQUEST_APPLIED) {
      if (tried !== undefined) this.oneTrip.succeeded();
      return tried;
    }
    if (tried === STALE) this.oneTrip.failed();
    return this.attempt(connection, items, tried === REQUEST_APPLIED, ROLLBACK_TO_SAVEPOINT);
  }

  /**
   * The group in one round trip, its appends from the remembered versions. Undefined when it
   * must be written the usual way (a decision other than an insert, a table whose rows must be
   * read back, a deadlock); STALE when a key was taken (a remembered version no longer the
   * latest, a create's values held), and REQUEST_APPLIED when a request id had been applied:
   * the group's cells are forgotten, and the transaction is left open, holding its locks, for
   * the usual attempt to go on from its savepoint.
   */
  private async attemptInOneTrip(
    connection: SqlConnection,
    items: readonly WriteItem[],
    reads: ReadonlyMap<string, TableReads>,
  ): Promise<Written | typeof REQUEST_APPLIED | typeof STALE | undefined> {
    const plan = planGroup(
      items,
      (item) => this.tableOf(item),
      reads,
      new Map(),
      new Set(),
      new Date(),
    );
    // Refusals are decided on what the usual attempt reads, not on a hint.
    if (plan.decisions.some((decision) => decision.kind !== 'insert')) return undefined;
    const checks = new Map<string, { item: WriteItem & { kind: 'append' }; refKey: number }>();
    plan.decisions.forEach((decision, i) => {
      const item = items[i]!;
      if (decision.kind !== 'insert' || decision.replayed || item.kind !== 'append') return;
      if (!item.reachedThrough) return;
      const read = reads.get(decision.table)!.latest.get(cellKey(item.uuid, item.cell))!;
      checks.set(`${decision.table}#${decision.position}`, { item, refKey: read.refKey });
    });
    // A group too large for one round trip goes in several, the usual way.
    if (roundTripsOf(plan.inserts).length > 1) return undefined;
    const writes = [...plan.inserts].map(([table, cells]) => this.timedForTable(table, cells));
    if (writes.some(({ readBack }) => readBack)) return undefined;

    const statements: Statement[] = [
      START_TRANSACTION,
      lockLogRows(this.layout.logLocksTable, [...plan.inserts.keys()]),
      SAVEPOINT,
    ];
    for (const [table, rows] of indexRowsOf(items)) {
      statements.push(insertIndexRows(table, rows[0]!.index, rows, false));
    }
    // Every row checked, in one condition that the INSERT of the first checked version carries:
    // its locks hold the rows until the COMMIT, so the versions after it need no check of their own.
    let reached =
      checks.size === 0
        ? undefined
        : primaryRowsLeadTo(
            [...checks.values()].map(({ item }) => ({
              lookup: item.reachedThrough!,
              uuid: item.uuid,
            })),
          );
    // Each INSERT with its table and the versions it stores, in the table's order.
    const inserts: { table: string; cells: NewCell[]; at: number }[] = [];
    for (const { table, cells } of writes) {
      let run: NewCell[] = [];
      const flush = () => {
        if (run.length === 0) return;
        inserts.push({ table, cells: run, at: statements.length });
        statements.push(insertCells(table, run, this.layout.createdAt));
        run = [];
      };
      for (const [position, cell] of cells.entries()) {
        const check = checks.get(`${table}#${position}`);
        if (!check || !reached) {
          run.push(cell);
          continue;
        }
        flush();
        inserts.push({ table, cells: [cell], at: statements.length });
        statements.push(insertCellIf(table, cell, this.layout.createdAt, reached, check.refKey));
        reached = undefined;
      }
      flush();
    }
    statements.push(COMMIT);

    let results: unknown[];
    try {
      results = await runTogether(connection, statements);
    } catch (error) {
      if (isDeadlock(error)) return undefined; // InnoDB rolled it back
      const key = duplicateKeyName(error);
      if (key === undefined) {
        await runTogether(connection, [ROLLBACK]).catch(() => connection.destroy());
        throw error;
      }
      for (const item of items) {
        if (item.kind === 'append') this.versions.forget(this.tableOf(item), item.uuid, item.cell);
      }
      return key === REQUEST_ID_KEY ? REQUEST_APPLIED : STALE;
    }
    const unlocked = missingLocks(results[1] as Row[], [...plan.inserts.keys()]);
    if (unlocked.length > 0) await this.restoreLogLocks(connection, unlocked, true);
    const stored = new Map<string, StoredCell[]>();
    for (const { table, cells, at } of inserts) {
      const shard = this.layout.contentShard(cells[0]!.uuid);
      const rows = insertedByIds(cells, results[at] as WriteResult);
      let list = stored.get(table);
      if (!list) stored.set(table, (list = []));
      list.push(...storedCellsOf(cells, rows, shard, this.partition.index));
    }
    return {
      outcomes: plan.decisions.map((decision) => outcomeOf(decision, stored)),
      written: stored,
    };
  }

  /**
   * The usual attempt: `begin` starts the transaction, or goes back to the savepoint of one
   * that already holds the group's locks (attemptOneTripFirst).
   */
  private async attempt(
    connection: SqlConnection,
    items: readonly WriteItem[],
    lookUpRequestIds: boolean,
    begin: Statement = START_TRANSACTION,
  ): Promise<Written | Retry> {
    const tableOf = (item: WriteItem) => this.tableOf(item);
    const tables = this.tablesOf(items, tableOf);
    const indexRows = indexRowsOf(items);
    let open = true;
    try {
      const reads = await this.readUnderLocks(
        connection,
        items,
        tables,
        indexRows,
        lookUpRequestIds,
        begin,
      );
      const plan = planGroup(
        items,
        tableOf,
        reads.tables,
        reads.fates,
        reads.unreachable,
        new Date(),
      );
      // An append not written may be the retry of one that was: look its request id up.
      const unwrittenAppend = plan.decisions.some(
        (decision, i) =>
          (decision.kind === 'refused' || decision.kind === 'unreachable') &&
          items[i]!.kind === 'append',
      );
      if (!lookUpRequestIds && unwrittenAppend) {
        await runTogether(connection, [ROLLBACK]);
        open = false;
        return RETRY_WITH_LOOKUPS;
      }
      if (plan.inserts.size === 0) {
        await runTogether(connection, [ROLLBACK]);
        open = false;
        return { outcomes: plan.decisions.map((d) => outcomeOf(d, new Map())), written: new Map() };
      }
      const stored = await this.insertAndCommit(connection, plan, tables, items, reads.fates);
      open = false;
      return {
        outcomes: plan.decisions.map((decision) => outcomeOf(decision, stored)),
        written: stored,
      };
    } catch (error) {
      if (isDeadlock(error)) return RETRY_AFTER_DEADLOCK; // InnoDB rolled it back
      if (open) await runTogether(connection, [ROLLBACK]).catch(() => connection.destroy());
      const key = duplicateKeyName(error);
      if (key === REQUEST_ID_KEY && !lookUpRequestIds) return RETRY_WITH_LOOKUPS;
      if (key !== undefined) {
        // Only a writer that bypasses the log lock (the gem, a manual INSERT) can race us.
        throw new UnavailableError(
          this.partition.index,
          `a concurrent write outside Shameless touched partition ${this.partition.index}; retry`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** The content tables the items write, in table-name order (the lock order). */
  private tablesOf(
    items: readonly WriteItem[],
    tableOf: (item: WriteItem) => string,
  ): Map<string, TableWrites> {
    const tables = new Map<string, TableWrites>();
    items.forEach((item, i) => {
      const table = tableOf(item);
      let writes = tables.get(table);
      if (!writes) {
        writes = { table, shard: this.layout.contentShard(item.uuid), appends: [] };
        tables.set(table, writes);
      }
      if (item.kind === 'append') writes.appends.push(i);
    });
    return new Map([...tables].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** Round trip 1: begin, lock, read what the appends depend on, place the creates' index rows. */
  private async readUnderLocks(
    connection: SqlConnection,
    items: readonly WriteItem[],
    tables: ReadonlyMap<string, TableWrites>,
    indexRows: ReadonlyMap<string, PlacedIndexRow[]>,
    lookUpRequestIds: boolean,
    begin: Statement,
  ): Promise<{
    tables: Map<string, TableReads>;
    fates: Map<number, CreateFate>;
    unreachable: Set<number>;
  }> {
    const statements: Statement[] = [
      begin,
      lockLogRows(this.layout.logLocksTable, [...tables.keys()]),
    ];
    const appended = [...tables.values()].filter(({ appends }) => appends.length > 0);
    const reads = appended.map(({ appends }) =>
      readsOf(
        items[appends[0]!]!.model.name,
        appends.map((i) => items[i]!),
        lookUpRequestIds,
        this.knownRecords,
      ),
    );
    let latestAt: number | undefined;
    if (appended.length > 0) {
      latestAt = statements.length;
      statements.push(
        latestVersionsOf(
          appended.map(({ table }, t) => ({
            table,
            keys: reads[t]!.latest,
            records: reads[t]!.records,
          })),
        ),
      );
    }
    let requestsAt: number | undefined;
    if (lookUpRequestIds && appended.length > 0) {
      requestsAt = statements.length;
      statements.push(
        writesByRequestId(appended.map(({ table }, t) => ({ table, keys: reads[t]!.requests }))),
      );
    }
    // Who holds the primary values that appends were reached through.
    const reached = items.flatMap((item, i) =>
      item.kind === 'append' && item.reachedThrough ? [{ item: i, row: item.reachedThrough }] : [],
    );
    let reachedAt: number | undefined;
    if (reached.length > 0) {
      reachedAt = statements.length;
      statements.push(primaryLookups(reached.map(({ row }) => row)));
    }
    // The creates' index rows: INSERT IGNORE, per table in key order.
    const inserts = [...indexRows.values()].map((rows) => {
      statements.push(insertIndexRows(rows[0]!.table, rows[0]!.index, rows));
      return { rows, at: statements.length - 1 };
    });

    const results = (await runTogether(connection, statements)) as Row[][];
    const missing = missingLocks(results[1] ?? [], [...tables.keys()]);
    if (missing.length > 0) throw new MissingLogLocks(missing);

    const byPart = (at: number | undefined) => {
      const parts = appended.map((): Row[] => []);
      if (at !== undefined) for (const row of results[at] ?? []) parts[Number(row.part)]!.push(row);
      return parts;
    };
    const latestRows = byPart(latestAt);
    const replayRows = byPart(requestsAt);
    const tableReads = new Map<string, TableReads>();
    appended.forEach(({ table, shard }, t) => {
      for (const row of latestRows[t]!) {
        if (row.what === 'exists') this.knownRecords.add(reads[t]!.model, String(row.uuid));
        else {
          const body = row.body instanceof Buffer ? row.body : undefined;
          const [uuid, cell] = [String(row.uuid), String(row.column_name)];
          this.versions.set(table, uuid, cell, Number(row.ref_key), body);
        }
      }
      tableReads.set(table, tableReadsOf(latestRows[t]!, replayRows[t]!, shard, reads[t]!.known));
    });
    const reachedHolders = new Map<number, string>();
    if (reachedAt !== undefined) {
      for (const row of results[reachedAt] ?? []) {
        reachedHolders.set(Number(row.part), String(row.uuid));
      }
    }
    const unreachable = new Set<number>();
    reached.forEach(({ item }, part) => {
      if (reachedHolders.get(part) !== items[item]!.uuid) unreachable.add(item);
    });
    const fates = await this.fatesOf(
      connection,
      items,
      inserts.map(({ rows, at }) => ({
        rows,
        stored: (results[at] as unknown as WriteResult).affectedRows,
      })),
    );
    return { tables: tableReads, fates, unreachable };
  }

  /**
   * What each create's index rows came to. An INSERT IGNORE that stored all its rows needs no
   * more: each of its creates holds those values. Where one stored fewer, some values were
   * taken (by another record's primary row, or in a unique index of the gem's): who holds the
   * rows of such INSERTs is read, with locking reads, in one more round trip.
   */
  private async fatesOf(
    connection: SqlConnection,
    items: readonly WriteItem[],
    inserts: readonly { rows: readonly PlacedIndexRow[]; stored: number }[],
  ): Promise<Map<number, CreateFate>> {
    const fates = new Map<number, CreateFate>();
    items.forEach((item, i) => item.kind === 'create' && fates.set(i, { kind: 'won' }));
    const unsure = inserts
      .filter(({ rows, stored }) => stored < rows.length)
      .flatMap(({ rows }) => rows);
    if (unsure.length === 0) return fates;
    const [found = []] = (await runTogether(connection, [indexRowHolders(unsure)])) as Row[][];
    const holders = new Map<number, string>();
    for (const row of found) holders.set(Number(row.part), String(row.uuid));
    unsure.forEach((row, part) => {
      const fate = fateOf(row, holders.get(part), items[row.item] as CreateRequest);
      // Losing the primary values wins over a secondary collision: the put becomes an update.
      if (fate && (fates.get(row.item)!.kind === 'won' || fate.kind === 'taken')) {
        fates.set(row.item, fate);
      }
    });
    return fates;
  }

  /** Round trip 2 (or more, for large groups): the inserts, the clean-up, and the commit. */
  private async insertAndCommit(
    connection: SqlConnection,
    plan: GroupPlan,
    tables: ReadonlyMap<string, TableWrites>,
    items: readonly WriteItem[],
    fates: ReadonlyMap<number, CreateFate>,
  ): Promise<Map<string, StoredCell[]>> {
    const cleanUp: Statement[] = [];
    for (const [table, rows] of indexRowsOf(
      items.filter((item, i) => item.kind === 'create' && fates.get(i)?.kind !== 'won'),
    )) {
      cleanUp.push(deleteIndexRows(table, rows[0]!.index, rows));
    }
    // The inserts go in round trips of at most MAX_INSERT_BYTES, each INSERT followed by the
    // read-back of what it stored where that is not known without; the last round trip also
    // cleans up and commits.
    const stored = new Map<string, StoredCell[]>();
    const rounds = roundTripsOf(plan.inserts);
    for (const [r, round] of rounds.entries()) {
      const writes = round.map(({ table, cells }) => this.timedForTable(table, cells));
      const statements: Statement[] = [];
      const insertAt = writes.map(({ table, cells, readBack }) => {
        const at = statements.length;
        statements.push(insertCells(table, cells, this.layout.createdAt));
        if (readBack) statements.push(readInserted(table, cells.length));
        return at;
      });
      if (r === rounds.length - 1) statements.push(...cleanUp, COMMIT);
      const results = await runTogether(connection, statements);
      writes.forEach(({ table, cells, readBack }, i) => {
        const { shard } = tables.get(table)!;
        const at = insertAt[i]!;
        const rows = readBack
          ? ((results[at + 1] ?? []) as Row[]).map(toInsertedCell)
          : insertedByIds(cells, results[at] as WriteResult);
        let list = stored.get(table);
        if (!list) stored.set(table, (list = []));
        list.push(...storedCellsOf(cells, rows, shard, this.partition.index));
      });
    }
    return stored;
  }

  /**
   * A table's new versions with created_at as the table will store it, and whether what it
   * stores (ids, created_at) must be read back after the INSERT.
   */
  private timedForTable(
    table: string,
    cells: readonly NewCell[],
  ): { table: string; cells: readonly NewCell[]; readBack: boolean } {
    if (!this.partition.insertIdsConsecutive) return { table, cells, readBack: true };
    const stored = cells.map((cell) => {
      const createdAt = this.times.asStored(table, cell.createdAt);
      return createdAt && withCreatedAt(cell, createdAt);
    });
    return stored.every((cell) => cell !== undefined)
      ? { table, cells: stored, readBack: false }
      : { table, cells, readBack: true };
  }
}

/**
 * What a table's appends must read: the latest version of each cell appended to (with its body
 * for a merge), whether the records of appends to other cells than base exist (unless known),
 * and, with the lookups, the writes made earlier with their request ids; each list without
 * duplicates. `appends` are of one table, so all of `model`.
 */
function readsOf(
  model: string,
  appends: readonly WriteItem[],
  lookUpRequestIds: boolean,
  knownRecords: KnownRecords,
) {
  const latest = new Map<string, LatestKey>();
  const records = new Set<string>();
  const requests = new Map<string, RequestKey>();
  for (const item of appends) {
    if (item.kind !== 'append') continue;
    const key = cellKey(item.uuid, item.cell);
    const withBody = item.content.mode === 'merge' || latest.get(key)?.withBody === true;
    latest.set(key, { uuid: item.uuid, cell: item.cell, withBody });
    if (item.cell !== BASE_CELL) records.add(item.uuid);
    if (lookUpRequestIds) {
      requests.set(requestKey(item.uuid, item.cell, item.requestId), {
        uuid: item.uuid,
        cell: item.cell,
        requestId: item.requestId,
      });
    }
  }
  // A record whose base cell is read anyway needs no separate look, nor one known to exist.
  const known: string[] = [];
  for (const uuid of records) {
    if (latest.has(cellKey(uuid, BASE_CELL))) records.delete(uuid);
    else if (knownRecords.has(model, uuid)) {
      records.delete(uuid);
      known.push(uuid);
    }
  }
  return {
    model,
    latest: [...latest.values()],
    records: [...records],
    known,
    requests: [...requests.values()],
  };
}

function tableReadsOf(
  latestRows: readonly Row[],
  replays: readonly Row[],
  shard: number,
  known: readonly string[],
): TableReads {
  const latest = new Map<string, LatestVersion>();
  const existing = new Set<string>(known);
  for (const row of latestRows) {
    if (row.what === 'exists') {
      existing.add(String(row.uuid));
      continue;
    }
    latest.set(cellKey(String(row.uuid), String(row.column_name)), {
      refKey: Number(row.ref_key),
      // Read under the log lock: the body of the version just read, where it was asked for.
      body: row.body instanceof Buffer ? row.body : undefined,
    });
  }
  const applied = new Map<string, StoredCell>();
  for (const row of replays) {
    applied.set(
      requestKey(String(row.uuid), String(row.column_name), String(row.request_id)),
      toStoredCell(row, shard),
    );
  }
  return { latest, applied, existing };
}

/** The index rows the creates among `items` write, per index table in name order, each list in key order. */
function indexRowsOf(items: readonly WriteItem[]): Map<string, PlacedIndexRow[]> {
  const byTable = new Map<string, PlacedIndexRow[]>();
  items.forEach((item, i) => {
    if (item.kind !== 'create') return;
    for (const row of item.indexRows) {
      let rows = byTable.get(row.table);
      if (!rows) byTable.set(row.table, (rows = []));
      rows.push({
        index: row.index,
        table: row.table,
        values: row.values,
        primary: row.primary,
        item: i,
        uuid: item.uuid,
      });
    }
  });
  for (const rows of byTable.values()) rows.sort((a, b) => compareKeys(a.values, b.values));
  return new Map([...byTable].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Index keys in a total order (numbers by value, strings by UTF-8 bytes, as utf8mb4_bin). */
function compareKeys(a: readonly unknown[], b: readonly unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (typeof x === 'string' && typeof y === 'string') {
      const order = Buffer.compare(Buffer.from(x), Buffer.from(y));
      if (order !== 0) return order;
    } else if (x !== y) {
      return (x as number | bigint) < (y as number | bigint) ? -1 : 1;
    }
  }
  return 0;
}

/**
 * What one index row of a create came to, from who holds its values after its INSERT IGNORE:
 * undefined when it went in.
 */
function fateOf(
  row: PlacedIndexRow,
  holder: string | undefined,
  create: CreateRequest,
): CreateFate | undefined {
  if (holder === row.uuid) return undefined;
  if (!row.primary) {
    return { kind: 'collided', error: uniqueIndexCollision(create.model.name, row) };
  }
  if (holder === undefined) {
    // The row could be neither written nor read: not a state a committed store can be in.
    throw new UnavailableError(-1, 'an index row could be neither written nor read; retry');
  }
  return { kind: 'taken', owner: holder };
}

/**
 * The inserts split into round trips of at most MAX_INSERT_BYTES each (at least one version
 * each), in order; a table's versions may be split over several.
 */
function roundTripsOf(
  inserts: ReadonlyMap<string, NewCell[]>,
): { table: string; cells: NewCell[] }[][] {
  const rounds: { table: string; cells: NewCell[] }[][] = [];
  let round: { table: string; cells: NewCell[] }[] = [];
  let bytes = 0;
  for (const [table, cells] of inserts) {
    let current: { table: string; cells: NewCell[] } | undefined;
    for (const cell of cells) {
      const size = insertedBytes(cell);
      if (bytes > 0 && bytes + size > MAX_INSERT_BYTES) {
        rounds.push(round);
        round = [];
        bytes = 0;
        current = undefined;
      }
      if (!current) round.push((current = { table, cells: [] }));
      current.cells.push(cell);
      bytes += size;
    }
  }
  if (round.length > 0) rounds.push(round);
  return rounds;
}

/**
 * The rows a multi-row INSERT stored, from its answer: consecutive ids from the first, and the
 * values it was given (created_at already as the column keeps it).
 */
function insertedByIds(cells: readonly NewCell[], header: WriteResult): InsertedCell[] {
  if (header.affectedRows !== cells.length) {
    throw new Error(`an INSERT of ${cells.length} rows stored ${header.affectedRows}`);
  }
  const first = exactInteger(header.insertId);
  return cells.map((cell, i) => ({
    id: offsetId(first, i),
    uuid: cell.uuid,
    name: cell.name,
    refKey: cell.refKey,
    createdAt: cell.createdAt,
  }));
}

/**
 * The stored versions of a chunk, from the rows read back by id range (or known from the
 * INSERT's answer). Under the log lock no other Shameless writer inserts into the table, so
 * the range holds exactly the chunk's rows. Only a writer that bypasses the lock (the gem)
 * could have taken ids inside it, and only when InnoDB interleaves auto-increment values
 * (innodb_autoinc_lock_mode = 2, where the rows are read back): the rows then do not line up,
 * and the group fails UNAVAILABLE. Its retry replays what committed.
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
      `a concurrent insert outside Shameless interleaved with a write on shard ${shard}; retry`,
    );
  }
  return rows.map((row, i) => ({
    id: row.id,
    shard,
    uuid: row.uuid,
    name: row.name,
    refKey: row.refKey,
    createdAt: row.createdAt,
    body: chunk[i]!.body,
  }));
}

/**
 * The cell with another created_at. Objects made per version are spelled out, field by field:
 * an object spread of them cost V8 about 2 µs each here, a literal 0.01.
 */
function withCreatedAt(cell: NewCell, createdAt: Date): NewCell {
  return {
    uuid: cell.uuid,
    name: cell.name,
    refKey: cell.refKey,
    body: cell.body,
    createdAt,
    requestId: cell.requestId,
  };
}

function outcomeOf(decision: Decision, stored: ReadonlyMap<string, StoredCell[]>): ItemOutcome {
  switch (decision.kind) {
    case 'stored':
      return { status: 'written', cell: decision.cell, replayed: true };
    case 'insert':
      return {
        status: 'written',
        cell: stored.get(decision.table)![decision.position]!,
        replayed: decision.replayed,
      };
    case 'refused':
      return { status: 'refused', error: decision.error };
    case 'taken':
      return { status: 'taken', owner: decision.owner };
    case 'unreachable':
      return { status: 'unreachable' };
  }
}

/** The tables among `tables` that the lock statement's rows do not name. */
function missingLocks(rows: readonly Row[], tables: readonly string[]): string[] {
  const locked = lockedTables(rows);
  return tables.filter((table) => !locked.has(table));
}
