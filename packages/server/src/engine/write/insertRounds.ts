// Round trip 2 of a shard transaction (shardTransaction.ts), or more for a large group: the
// versions decided in memory (groupPlan.ts) go in as one multi-row INSERT per content table,
// the index rows of refused creates are deleted, and the transaction commits. The ids of an
// INSERT's rows follow from the first, which its answer carries, where the partition gives a
// multi-row INSERT consecutive ids; its created_at is the time it was given, cut to what the
// column keeps (storedTimes.ts). Where either is not known, the INSERT is followed by the
// read-back of what it stored (a primary-key range). Inserts are split over round trips of at
// most MAX_INSERT_BYTES, to stay under max_allowed_packet. On Galera each round trip proves the
// transaction still open, and the last one that its COMMIT stored the rows (sql/galera.ts): a BF
// abort can roll it back unreported, and a COMMIT after that answers OK having committed nothing.
import { UnavailableError } from '../base/errors.js';
import { exactInteger, offsetId } from '../base/exactInteger.js';
import type { Row, SqlConnection, WriteResult } from '../mysql/mysqlPool.js';
import type { InsertedCell, NewCell, StoredCell } from '../mysql/sql/contentRows.js';
import {
  insertCells,
  insertedBytes,
  readInserted,
  toInsertedCell,
} from '../mysql/sql/contentWrites.js';
import { deleteIndexRows } from '../mysql/sql/indexTable.js';
import {
  type InsertedVersion,
  TRANSACTION_STILL_OPEN,
  committedRows,
  stillOpen,
} from '../mysql/sql/galera.js';
import { COMMIT, type Statement, runTogether } from '../mysql/sql/statement.js';
import type { CreateFate, GroupPlan } from './groupPlan.js';
import type { TableWrites } from './lockedReads.js';
import { indexRowsOf } from './placedIndexRows.js';
import { type TransactionParts, TransactionLost } from './transactionParts.js';
import type { WriteItem } from './writeItems.js';

// mysql2 sends a body as hex, so this is about 2 MiB of bodies per round trip: well under
// max_allowed_packet's defaults (16 MiB on MariaDB, 64 MiB on MySQL 8).
const MAX_INSERT_BYTES = 4 * 1024 * 1024;

/** Round trip 2 (or more, for large groups): the inserts, the clean-up, and the commit. */
export async function insertAndCommit(
  parts: TransactionParts,
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
  const galera = parts.partition.galera !== undefined;
  // The first version of every INSERT, looked for after a Galera COMMIT: an INSERT stores all
  // its rows or none, and one run outside the transaction after an unreported abort commits
  // on its own, so each is checked.
  const firstOfEach: InsertedVersion[] = [];
  for (const [r, round] of rounds.entries()) {
    const last = r === rounds.length - 1;
    const writes = round.map(({ table, cells }) => timedForTable(parts, table, cells));
    const statements: Statement[] = [];
    const insertAt = writes.map(({ table, cells, readBack }) => {
      const at = statements.length;
      statements.push(insertCells(table, cells, parts.layout.createdAt));
      if (readBack) statements.push(readInserted(table, cells.length));
      const first = cells[0]!;
      firstOfEach.push({ table, uuid: first.uuid, cell: first.name, requestId: first.requestId });
      return at;
    });
    if (last) statements.push(...cleanUp, COMMIT);
    if (galera) statements.push(last ? committedRows(firstOfEach) : TRANSACTION_STILL_OPEN);
    const results = await runTogether(connection, statements);
    if (galera) {
      const check = results[statements.length - 1] as Row[];
      if (last && Number(check[0]?.stored) !== firstOfEach.length) {
        throw new TransactionLost('its COMMIT answered OK and stored nothing');
      }
      if (!last && !stillOpen(check)) {
        throw new TransactionLost(`round trip ${r + 1} of its inserts`);
      }
    }
    writes.forEach(({ table, cells, readBack }, i) => {
      const { shard } = tables.get(table)!;
      const at = insertAt[i]!;
      const rows = readBack
        ? ((results[at + 1] ?? []) as Row[]).map(toInsertedCell)
        : insertedByIds(cells, results[at] as WriteResult);
      let list = stored.get(table);
      if (!list) stored.set(table, (list = []));
      list.push(...storedCellsOf(cells, rows, shard, parts.partition.index));
    });
  }
  return stored;
}

/**
 * A table's new versions with created_at as the table will store it, and whether what it
 * stores (ids, created_at) must be read back after the INSERT.
 */
export function timedForTable(
  parts: TransactionParts,
  table: string,
  cells: readonly NewCell[],
): { table: string; cells: readonly NewCell[]; readBack: boolean } {
  if (!parts.partition.insertIdsConsecutive) return { table, cells, readBack: true };
  const stored = cells.map((cell) => {
    const createdAt = parts.times.asStored(table, cell.createdAt);
    return createdAt && withCreatedAt(cell, createdAt);
  });
  return stored.every((cell) => cell !== undefined)
    ? { table, cells: stored, readBack: false }
    : { table, cells, readBack: true };
}

/**
 * The inserts split into round trips of at most MAX_INSERT_BYTES each (at least one version
 * each), in order; a table's versions may be split over several.
 */
export function roundTripsOf(
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
export function insertedByIds(cells: readonly NewCell[], header: WriteResult): InsertedCell[] {
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
export function storedCellsOf(
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
