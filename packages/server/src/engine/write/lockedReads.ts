// Round trip 1 of a shard transaction (shardTransaction.ts): START TRANSACTION; the log locks
// (in table-name order, so groups sharing tables cannot deadlock on them); one SELECT of the
// latest version of every cell appended to (with its body for a merge) and of each record's
// base cell (whether the record exists, unless this server knows it does: knownRecords.ts),
// across all tables; the primary-index rows that appends were reached through (a put's
// update), to check they still lead there; per index table that creates write, INSERT IGNORE
// of their rows (in key order). Where an INSERT IGNORE stored fewer rows than it was given,
// some create's values were taken: who holds them is read in one more round trip.
import { UnavailableError } from '../base/errors.js';
import type { StoreLayout } from '../model/layout.js';
import { BASE_CELL } from '../model/model.js';
import type { Row, SqlConnection, SqlSession, WriteResult } from '../mysql/mysqlPool.js';
import { type LatestKey, latestVersionsOf } from '../mysql/sql/contentReads.js';
import { type RequestKey, type StoredCell, toStoredCell } from '../mysql/sql/contentRows.js';
import {
  lockLogRows,
  lockedTables,
  rewriteLogLocks,
  writesByRequestId,
} from '../mysql/sql/contentWrites.js';
import { indexRowHolders, insertIndexRows, primaryLookups } from '../mysql/sql/indexTable.js';
import { TRANSACTION_STILL_OPEN, stillOpen } from '../mysql/sql/galera.js';
import { type Statement, runTogether } from '../mysql/sql/statement.js';
import { insertLogLocks } from '../mysql/sql/storeTables.js';
import {
  type CreateFate,
  type LatestVersion,
  type TableReads,
  cellKey,
  requestKey,
} from './groupPlan.js';
import type { KnownRecords } from './knownRecords.js';
import type { PlacedIndexRow } from './placedIndexRows.js';
import { type TransactionParts, TransactionLost, tableOf } from './transactionParts.js';
import { type CreateRequest, type WriteItem, uniqueIndexCollision } from './writeItems.js';

/** The items of a group that write one content table. */
export interface TableWrites {
  readonly table: string;
  readonly shard: number;
  readonly appends: number[];
}

/** What round trip 1 read: each table's latest versions, each create's fate, the stale reaches. */
export interface LockedReads {
  readonly tables: Map<string, TableReads>;
  readonly fates: Map<number, CreateFate>;
  readonly unreachable: Set<number>;
}

/**
 * Log-lock rows the lock found missing (a restore that left them out, a manual DELETE): the
 * attempt was rolled back, nothing written; the rows are put back and the group tried again.
 */
export class MissingLogLocks extends Error {
  constructor(readonly tables: readonly string[]) {
    super(`log lock rows missing for ${tables.join(', ')}`);
  }
}

/** The content tables the items write, in table-name order (the lock order). */
export function tablesOf(
  layout: StoreLayout,
  items: readonly WriteItem[],
): Map<string, TableWrites> {
  const tables = new Map<string, TableWrites>();
  items.forEach((item, i) => {
    const table = tableOf(layout, item);
    let writes = tables.get(table);
    if (!writes) {
      writes = { table, shard: layout.contentShard(item.uuid), appends: [] };
      tables.set(table, writes);
    }
    if (item.kind === 'append') writes.appends.push(i);
  });
  return new Map([...tables].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Round trip 1: begin, lock, read what the appends depend on, place the creates' index rows. */
export async function readUnderLocks(
  parts: TransactionParts,
  connection: SqlConnection,
  items: readonly WriteItem[],
  tables: ReadonlyMap<string, TableWrites>,
  indexRows: ReadonlyMap<string, PlacedIndexRow[]>,
  lookUpRequestIds: boolean,
  begin: Statement,
): Promise<LockedReads> {
  const statements: Statement[] = [
    begin,
    lockLogRows(parts.layout.logLocksTable, [...tables.keys()]),
  ];
  if (parts.partition.galera) {
    statements.push(...rewriteLogLocks(parts.layout.logLocksTable, [...tables.keys()]));
  }
  const appended = [...tables.values()].filter(({ appends }) => appends.length > 0);
  const reads = appended.map(({ appends }) =>
    readsOf(
      items[appends[0]!]!.model.name,
      appends.map((i) => items[i]!),
      lookUpRequestIds,
      parts.knownRecords,
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

  // Last: on Galera, whether an abort no statement reported ended the transaction (sql/galera.ts).
  const galera = parts.partition.galera !== undefined;
  if (galera) statements.push(TRANSACTION_STILL_OPEN);

  const results = (await runTogether(connection, statements)) as Row[][];
  if (galera && !stillOpen(results[statements.length - 1])) {
    throw new TransactionLost('its locks and reads');
  }
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
      if (row.what === 'exists') parts.knownRecords.add(reads[t]!.model, String(row.uuid));
      else {
        const body = row.body instanceof Buffer ? row.body : undefined;
        const [uuid, cell] = [String(row.uuid), String(row.column_name)];
        parts.versions.set(table, uuid, cell, Number(row.ref_key), body);
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
  const fates = await fatesOf(
    parts,
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
async function fatesOf(
  parts: TransactionParts,
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

/**
 * Puts back log-lock rows found missing, so that the next writes lock their tables again
 * (DefineModel would too). `committed`: a one-trip write committed without them (its lock
 * statement cannot stop the round trip), so a follower may have seen its table's log out of
 * order meanwhile.
 */
export async function restoreLogLocks(
  { layout, partition, logger }: TransactionParts,
  session: SqlSession,
  tables: readonly string[],
  committed: boolean,
): Promise<void> {
  await insertLogLocks(session, layout.logLocksTable, tables);
  const fields = { partition: partition.index, tables };
  if (committed) {
    logger.error('a write committed without its log lock rows, missing: restored', fields);
  } else logger.warn('log lock rows were missing: restored, the write went on', fields);
}

/** The tables among `tables` that the lock statement's rows do not name. */
export function missingLocks(rows: readonly Row[], tables: readonly string[]): string[] {
  const locked = lockedTables(rows);
  return tables.filter((table) => !locked.has(table));
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
