// Copying a shard's rows from its source to its target: content by id (the shard's log is
// gap-free, so `id > cursor` finds everything written since a point), index rows by key, and
// the index changes the source's triggers captured meanwhile.
import type { Row, ScopedPool, SqlSession } from '../mysql/mysqlPool.js';
import {
  type CapturedChange,
  type KeyValues,
  type TableShape,
  bindKey,
  deleteChanges,
  deleteRowsByKeys,
  insertRows,
  keyText,
  maxKey,
  readChangedRows,
  readChanges,
  readRows,
  readRowsByKeys,
  toCapturedChange,
} from '../mysql/sql/shardMoves.js';
import {
  COMMIT,
  START_TRANSACTION,
  type Statement,
  runTogether,
  statement,
} from '../mysql/sql/statement.js';

/** Rows read from the source per statement. */
export const COPY_CHUNK_ROWS = 2000;
/** The most bytes of values one INSERT carries (bodies go as hex: twice this on the wire). */
const INSERT_BYTES = 4 * 1024 * 1024;
/** Captured changes applied per round. */
const CHANGES_PER_ROUND = 2000;

/** Where a table's copy is: the last key copied (as text), and whether the first copy ended. */
export interface TableCursor {
  key?: (string | null)[];
  done?: boolean;
}

/** The highest id of a content table (0 when empty). */
export async function maxId(session: SqlSession, shape: TableShape): Promise<bigint> {
  const [rows] = (await runTogether(session, [maxKey(shape)])) as Row[][];
  return BigInt(String(rows?.[0]?.max ?? 0));
}

/** The rows, cut into INSERTs of at most INSERT_BYTES of values each. */
function batches(rows: readonly Row[]): Row[][] {
  const out: Row[][] = [];
  let batch: Row[] = [];
  let bytes = 0;
  for (const row of rows) {
    let size = 64;
    for (const value of Object.values(row)) {
      if (Buffer.isBuffer(value) || typeof value === 'string') size += value.length;
    }
    if (batch.length > 0 && bytes + size > INSERT_BYTES) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(row);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/**
 * Copies the table's rows after `cursor.key` in key order, `COPY_CHUNK_ROWS` at a time, reading
 * the next chunk while the last is written. Content goes by plain INSERT (an id copied twice is
 * a mistake to hear of); index rows by INSERT IGNORE (a chunk copied again after a resume).
 * `onChunk` hears of each chunk written, with the cursor already moved past it. Answers the
 * rows copied.
 */
export async function copyRows(
  source: SqlSession,
  target: SqlSession,
  shape: TableShape,
  cursor: TableCursor,
  mode: 'insert' | 'ignore',
  onChunk: (rows: number) => Promise<void> | void,
  upTo?: KeyValues,
): Promise<number> {
  let after = cursor.key ? bindKey(shape, cursor.key) : undefined;
  let writing: Promise<void> | undefined;
  let copied = 0;
  try {
    for (;;) {
      const [rows = []] = (await runTogether(source, [
        readRows(shape, { after, upTo }, COPY_CHUNK_ROWS),
      ])) as Row[][];
      if (writing) await writing;
      writing = undefined;
      if (rows.length === 0) break;
      const last = keyText(shape, rows[rows.length - 1]!);
      writing = (async () => {
        for (const batch of batches(rows))
          await runTogether(target, [insertRows(shape, batch, mode)]);
        cursor.key = last;
        copied += rows.length;
        await onChunk(rows.length);
      })();
      // Awaited below, after the next read: until then its failure is not unhandled.
      writing.catch(() => {});
      after = bindKey(shape, last);
      if (rows.length < COPY_CHUNK_ROWS) break;
    }
    if (writing) await writing;
  } catch (error) {
    // The write in flight, if any, is waited for: its failure is the one worth telling.
    await writing?.catch(() => {});
    throw error;
  }
  return copied;
}

/**
 * Applies the captured changes of `tables` to the target: each key changed is read again on the
 * source, and the target's row of that key replaced by it (or deleted, when the source has none
 * now), in one transaction per round; then the changes applied are deleted on the source. A
 * change captured while a round ran stays for the next. Answers how many changes were applied.
 */
export async function applyChanges(
  source: SqlSession,
  target: ScopedPool,
  changesTable: string,
  shapes: ReadonlyMap<string, TableShape>,
  onRound?: (changes: number) => Promise<void> | void,
): Promise<number> {
  const tables = [...shapes.keys()];
  if (tables.length === 0) return 0;
  let applied = 0;
  for (;;) {
    const [rows = []] = (await runTogether(source, [
      readChanges(changesTable, tables, CHANGES_PER_ROUND),
    ])) as Row[][];
    if (rows.length === 0) break;
    const changes = rows.map(toCapturedChange);
    const statements = [START_TRANSACTION];
    for (const { shape, keys } of keysByTable(changes, shapes)) {
      const [now = []] = (await runTogether(source, [readRowsByKeys(shape, keys)])) as Row[][];
      statements.push(deleteRowsByKeys(shape, keys));
      if (now.length > 0) statements.push(insertRows(shape, now));
    }
    statements.push(COMMIT);
    await inOneTransaction(target, statements);
    await runTogether(source, [
      deleteChanges(
        changesTable,
        changes.map((change) => change.id),
      ),
    ]);
    applied += changes.length;
    await onRound?.(changes.length);
    if (rows.length < CHANGES_PER_ROUND) break;
  }
  return applied;
}

/** What {@link lastPass} works from: the shard's tables, and where the pass before left them. */
export interface LastRowsPlan {
  readonly content: readonly { readonly shape: TableShape; readonly cursor: TableCursor }[];
  readonly changesTable: string;
  readonly indexShapes: ReadonlyMap<string, TableShape>;
}

/** What the cut-over's last pass writes on the target, and what it leaves for the source. */
export interface LastRows {
  /** One transaction: the content written since the pass before the lock, the index changes. */
  readonly onTarget: readonly Statement[];
  readonly copied: number;
  readonly applied: number;
  /** Deletes the changes applied, on the source, once the target has them. */
  readonly settle: readonly Statement[];
  /** The content cursors past what `onTarget` writes, by table. */
  readonly cursors: ReadonlyMap<TableCursor, (string | null)[]>;
}

/** The cut-over's last pass: the reads it sends under the lock, and what their answers make. */
export interface LastPass {
  /**
   * The content rows after each cursor, the index changes captured since the pass before the
   * lock and the rows of the keys they name: sent in the round trip that takes the lock.
   */
  readonly reads: readonly Statement[];
  /**
   * From the answers to `reads`, in their order: the target's transaction (with `alsoOnTarget`,
   * the consumer groups' rows, in it) for {@link writeLastRows}. Undefined when a table has more
   * than one chunk to copy: the chunked copy is for that.
   */
  rows(answers: readonly Row[][], alsoOnTarget?: readonly Statement[]): LastRows | undefined;
}

/** The last pass over `plan`'s tables, its reads made now. */
export function lastPass(plan: LastRowsPlan): LastPass {
  const { content, changesTable, indexShapes } = plan;
  const shapes = [...indexShapes.values()];
  const reads = content.map(({ shape, cursor }) =>
    readRows(
      shape,
      { after: cursor.key ? bindKey(shape, cursor.key) : undefined },
      COPY_CHUNK_ROWS,
    ),
  );
  // Where each kind of answer lies among the reads' answers: set here, beside the reads.
  const changesAt = reads.length;
  if (shapes.length > 0)
    reads.push(readChanges(changesTable, [...indexShapes.keys()], CHANGES_PER_ROUND));
  const changedRowsAt = reads.length;
  for (const shape of shapes) reads.push(readChangedRows(shape, changesTable, CHANGES_PER_ROUND));
  return {
    reads,
    rows: (answers, alsoOnTarget = []) =>
      lastRows(
        plan,
        {
          content: content.map((_, i) => answers[i] ?? []),
          changes: shapes.length > 0 ? (answers[changesAt] ?? []) : [],
          changedRows: shapes.map((_, i) => answers[changedRowsAt + i] ?? []),
        },
        alsoOnTarget,
      ),
  };
}

/** The last pass's answers, by kind: each content table's, the changes', each index table's. */
interface LastPassAnswers {
  readonly content: readonly Row[][];
  readonly changes: readonly Row[];
  /** By index table, in the plan's order. */
  readonly changedRows: readonly Row[][];
}

function lastRows(
  { content, indexShapes, changesTable }: LastRowsPlan,
  answers: LastPassAnswers,
  alsoOnTarget: readonly Statement[],
): LastRows | undefined {
  const { content: contentRows, changes: changeRows } = answers;
  const contentInserts = content.map(({ shape }, i) =>
    batches(contentRows[i]!).map((batch) => insertRows(shape, batch, 'insert')),
  );
  if (
    contentRows.some((rows) => rows.length >= COPY_CHUNK_ROWS) ||
    contentInserts.some((inserts) => inserts.length > 1) ||
    changeRows.length >= CHANGES_PER_ROUND
  ) {
    return undefined;
  }
  const changes = changeRows.map(toCapturedChange);
  // The rows of the changed keys, by table, each once (two keys a collation holds equal name
  // one row).
  const now = new Map<string, Row[]>();
  [...indexShapes.values()].forEach((shape, i) => {
    const seen = new Set<string>();
    now.set(
      shape.name,
      answers.changedRows[i]!.filter((row) => {
        const key = JSON.stringify(keyText(shape, row));
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      }),
    );
  });
  const onTarget = [START_TRANSACTION, ...contentInserts.flat()];
  for (const { shape, keys } of keysByTable(changes, indexShapes)) {
    onTarget.push(deleteRowsByKeys(shape, keys));
    const rows = now.get(shape.name)!;
    if (rows.length > 0) onTarget.push(insertRows(shape, rows));
  }
  onTarget.push(...alsoOnTarget, COMMIT);
  let copied = 0;
  const cursors = new Map<TableCursor, (string | null)[]>();
  content.forEach(({ shape, cursor }, i) => {
    const rows = contentRows[i]!;
    if (rows.length === 0) return;
    cursors.set(cursor, keyText(shape, rows[rows.length - 1]!));
    copied += rows.length;
  });
  const settle =
    changes.length > 0
      ? [
          deleteChanges(
            changesTable,
            changes.map((change) => change.id),
          ),
        ]
      : [];
  return { onTarget, copied, applied: changes.length, settle, cursors };
}

/**
 * Commits the last pass on the target, then moves the cursors past what it wrote. With nothing
 * to write, the target is asked all the same: a map is never published naming a server that has
 * not answered since the cut-over took its lock.
 */
export async function writeLastRows(target: ScopedPool, last: LastRows): Promise<void> {
  if (last.onTarget.length > 2) await inOneTransaction(target, last.onTarget);
  else await runTogether(target, [statement('SELECT 1')]);
  for (const [cursor, key] of last.cursors) cursor.key = key;
}

/** The keys the changes name, one entry per table (a key changed twice is applied once). */
function keysByTable(
  changes: readonly CapturedChange[],
  shapes: ReadonlyMap<string, TableShape>,
): { shape: TableShape; keys: KeyValues[] }[] {
  const byTable = new Map<string, Map<string, CapturedChange>>();
  for (const change of changes) {
    let keys = byTable.get(change.table);
    if (!keys) byTable.set(change.table, (keys = new Map()));
    keys.set(JSON.stringify(change.key), change);
  }
  return [...byTable].map(([table, keys]) => {
    const shape = shapes.get(table)!;
    return { shape, keys: [...keys.values()].map((change) => bindKey(shape, change.key)) };
  });
}

/** Sends a transaction's statements (START … COMMIT) on one connection of `pool`. */
async function inOneTransaction(pool: ScopedPool, statements: readonly Statement[]): Promise<void> {
  const connection = await pool.getConnection();
  try {
    await runTogether(connection, statements);
    connection.release();
  } catch (error) {
    // Maybe mid-transaction: closed, so that nothing half-done goes back to the pool.
    connection.destroy();
    throw error;
  }
}
