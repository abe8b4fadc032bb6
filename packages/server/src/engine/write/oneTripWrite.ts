// A group written in one round trip, where this server remembers what the usual attempt would
// read (versionCache.ts): START TRANSACTION; the log locks; a savepoint; the creates' index
// rows (a plain INSERT: a key taken fails it); the INSERTs of base version 0 of each create and
// of the versions after the remembered ones; COMMIT. The appends reached through
// primary-index rows (a put's updates) carry the check of those rows, one condition for all,
// inside the INSERT of the first of them (insertCellIf), so that nothing is committed unless
// every one holds. A remembered version that is no longer the latest makes an INSERT fail on
// the (uuid, column_name, ref_key) key, which stops the round trip before its COMMIT: the group
// goes back to the savepoint taken after the locks and is written the usual way in the same
// transaction (shardTransaction.ts), so a stale version costs one round trip; so does a create
// whose values are taken, which the usual way answers (the put becomes an update). Refusals
// and appends the cache does not cover go the usual way from the start.
import { NO_VERSION } from '../base/versionCache.js';
import type { Row, SqlConnection, WriteResult } from '../mysql/mysqlPool.js';
import type { NewCell, StoredCell } from '../mysql/sql/contentRows.js';
import { REQUEST_ID_KEY } from '../mysql/sql/contentDdl.js';
import { insertCellIf, insertCells, lockLogRows } from '../mysql/sql/contentWrites.js';
import { insertIndexRows, primaryRowsLeadTo } from '../mysql/sql/indexTable.js';
import {
  COMMIT,
  ROLLBACK,
  SAVEPOINT,
  START_TRANSACTION,
  type Statement,
  runTogether,
} from '../mysql/sql/statement.js';
import { duplicateKeyName, isDeadlock } from '../mysql/sqlErrors.js';
import { type LatestVersion, type TableReads, cellKey, planGroup } from './groupPlan.js';
import { insertedByIds, roundTripsOf, storedCellsOf, timedForTable } from './insertRounds.js';
import { missingLocks, restoreLogLocks } from './lockedReads.js';
import { indexRowsOf } from './placedIndexRows.js';
import { type TransactionParts, type Written, outcomeOf, tableOf } from './transactionParts.js';
import type { WriteItem } from './writeItems.js';

/** A key was taken (a remembered version stale, a create's values held): the usual way. */
export const STALE = Symbol('stale');
/** A request id had been applied: the group goes the usual way, with the lookups. */
export const REQUEST_APPLIED = Symbol('request applied');

/**
 * What the usual attempt would read under the locks, from the version cache: undefined unless
 * every append of the group is to a remembered cell (with its body, for a merge; at the
 * version it expects, if it expects one), or to a cell remembered to have no version, of a
 * record this server created. Creates need nothing read, whether or not the cache remembers
 * anything.
 */
export function oneTripReads(
  parts: TransactionParts,
  items: readonly WriteItem[],
): Map<string, TableReads> | undefined {
  const reads = new Map<
    string,
    TableReads & { latest: Map<string, LatestVersion>; existing: Set<string> }
  >();
  for (const item of items) {
    if (item.kind !== 'append') continue;
    const table = tableOf(parts.layout, item);
    const version = parts.versions.get(table, item.uuid, item.cell);
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
 * The group in one round trip, its appends from the remembered versions. Undefined when it
 * must be written the usual way (a decision other than an insert, a table whose rows must be
 * read back, a deadlock); STALE when a key was taken (a remembered version no longer the
 * latest, a create's values held), and REQUEST_APPLIED when a request id had been applied:
 * the group's cells are forgotten, and the transaction is left open, holding its locks, for
 * the usual attempt to go on from its savepoint.
 */
export async function writeInOneTrip(
  parts: TransactionParts,
  connection: SqlConnection,
  items: readonly WriteItem[],
  reads: ReadonlyMap<string, TableReads>,
): Promise<Written | typeof REQUEST_APPLIED | typeof STALE | undefined> {
  const plan = planGroup(
    items,
    (item) => tableOf(parts.layout, item),
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
  const writes = [...plan.inserts].map(([table, cells]) => timedForTable(parts, table, cells));
  if (writes.some(({ readBack }) => readBack)) return undefined;

  const statements: Statement[] = [
    START_TRANSACTION,
    lockLogRows(parts.layout.logLocksTable, [...plan.inserts.keys()]),
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
      statements.push(insertCells(table, run, parts.layout.createdAt));
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
      statements.push(insertCellIf(table, cell, parts.layout.createdAt, reached, check.refKey));
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
      if (item.kind === 'append')
        parts.versions.forget(tableOf(parts.layout, item), item.uuid, item.cell);
    }
    return key === REQUEST_ID_KEY ? REQUEST_APPLIED : STALE;
  }
  const unlocked = missingLocks(results[1] as Row[], [...plan.inserts.keys()]);
  if (unlocked.length > 0) await restoreLogLocks(parts, connection, unlocked, true);
  const stored = new Map<string, StoredCell[]>();
  for (const { table, cells, at } of inserts) {
    const shard = parts.layout.contentShard(cells[0]!.uuid);
    const rows = insertedByIds(cells, results[at] as WriteResult);
    let list = stored.get(table);
    if (!list) stored.set(table, (list = []));
    list.push(...storedCellsOf(cells, rows, shard, parts.partition.index));
  }
  return {
    outcomes: plan.decisions.map((decision) => outcomeOf(decision, stored)),
    written: stored,
  };
}
