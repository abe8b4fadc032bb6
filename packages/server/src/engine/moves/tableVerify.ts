// Comparing a table on the source with its copy on the target, chunk by chunk over the source's
// keys: a count and two checksums per chunk on each side (one statement each, computed by the
// servers), and, where a chunk differs, each row's fingerprint, to name the first key that
// differs.
import type { Row, SqlSession } from '../mysql/mysqlPool.js';
import {
  type KeyRange,
  type KeyValues,
  type TableShape,
  bindKey,
  chunkEnd,
  keyText,
  rangeChecksum,
  rowFingerprints,
} from '../mysql/sql/shardMoves.js';
import { runTogether } from '../mysql/sql/statement.js';

/** Rows per compared chunk. */
export const VERIFY_CHUNK_ROWS = 5000;

export interface Difference {
  /** The first key, in key order, whose rows differ. */
  readonly key: readonly (string | null)[];
  readonly detail: string;
}

export interface CompareOptions {
  /** Compare only rows up to this key (content: up to the copy's cursor). */
  readonly upTo?: KeyValues;
  /**
   * Called before a chunk that differs is compared again (index tables, written meanwhile:
   * their captured changes applied first); that many times at most, then the difference holds.
   */
  readonly beforeRecheck?: () => Promise<void>;
  readonly rechecks?: number;
  /**
   * The keys (JSON of their text) whose changes the source captured and the target has not
   * applied yet: a row that differs at one of them is a write in flight, not a difference.
   */
  readonly pendingKeys?: () => Promise<ReadonlySet<string>>;
  /** Told of each chunk compared: the rows in it on the source. */
  readonly onChunk?: (rows: number) => Promise<void> | void;
  /**
   * Only that every source row is on the target, equal (the target may hold more: a frozen
   * source after its cut-over, against a target written since).
   */
  readonly sourceSubset?: boolean;
}

async function one(session: SqlSession, statement: ReturnType<typeof rangeChecksum>) {
  const [rows = []] = (await runTogether(session, [statement])) as Row[][];
  return rows;
}

const sameSums = (a: Row | undefined, b: Row | undefined) =>
  String(a?.n) === String(b?.n) && String(a?.x) === String(b?.x) && String(a?.s) === String(b?.s);

/** The first difference between the table's rows on both sides, or undefined when equal. */
export async function compareTable(
  source: SqlSession,
  target: SqlSession,
  shape: TableShape,
  options: CompareOptions = {},
  /** The table's name on the target, when not the same (a frozen source renamed away). */
  targetName = shape.name,
): Promise<Difference | undefined> {
  const theirs: TableShape = { ...shape, name: targetName };
  let after: KeyValues | undefined;
  for (;;) {
    const [end] = await one(
      source,
      chunkEnd(shape, { after, upTo: options.upTo }, VERIFY_CHUNK_ROWS),
    );
    const range: KeyRange = {
      after,
      upTo: end ? bindKey(shape, keyText(shape, end)) : options.upTo,
    };
    for (let attempt = 0; ; attempt++) {
      const difference = options.sourceSubset
        ? await subsetDifference(source, target, shape, theirs, range)
        : await chunkDifference(source, target, shape, theirs, range, options.pendingKeys);
      if (!difference) break;
      if (attempt >= (options.rechecks ?? 0) || !options.beforeRecheck) return difference;
      await options.beforeRecheck();
    }
    await options.onChunk?.(VERIFY_CHUNK_ROWS);
    if (!end) return undefined;
    after = range.upTo;
  }
}

async function chunkDifference(
  source: SqlSession,
  target: SqlSession,
  shape: TableShape,
  targetShape: TableShape,
  range: KeyRange,
  pendingKeys?: () => Promise<ReadonlySet<string>>,
): Promise<Difference | undefined> {
  const [[ours], [theirs]] = await Promise.all([
    one(source, rangeChecksum(shape, range)),
    one(target, rangeChecksum(targetShape, range)),
  ]);
  if (sameSums(ours, theirs)) return undefined;
  const [left, right] = await Promise.all([
    one(source, rowFingerprints(shape, range)),
    one(target, rowFingerprints(targetShape, range)),
  ]);
  // Read after the rows: a source row seen above has its change committed with it, so its
  // key is here unless the change was applied (and the target read before it was: a recheck).
  const pending = (await pendingKeys?.()) ?? new Set<string>();
  const targetCrc = new Map(
    right.map((row) => [JSON.stringify(keyText(shape, row)), String(row.crc)]),
  );
  const sourceKeys = new Set<string>();
  let differences = 0;
  let first: Difference | undefined;
  for (const row of left) {
    const key = keyText(shape, row);
    const text = JSON.stringify(key);
    sourceKeys.add(text);
    const crc = targetCrc.get(text);
    if (crc === String(row.crc) || pending.has(text)) continue;
    differences += 1;
    first ??= {
      key,
      detail: crc === undefined ? 'the row is missing on the target' : 'the rows differ',
    };
  }
  for (const row of right) {
    const key = keyText(shape, row);
    const text = JSON.stringify(key);
    if (sourceKeys.has(text) || pending.has(text)) continue;
    differences += 1;
    first ??= { key, detail: 'the row is on the target only' };
  }
  if (first) return first;
  if (differences === 0 && pendingKeys) return undefined;
  // Equal rows, different sums: a checksum of rows the fingerprints cannot tell apart.
  return {
    key: [],
    detail: `counts or checksums differ (${JSON.stringify(ours)} against ${JSON.stringify(theirs)})`,
  };
}

async function subsetDifference(
  source: SqlSession,
  target: SqlSession,
  shape: TableShape,
  targetShape: TableShape,
  range: KeyRange,
): Promise<Difference | undefined> {
  const [left, right] = await Promise.all([
    one(source, rowFingerprints(shape, range)),
    one(target, rowFingerprints(targetShape, range)),
  ]);
  const targetCrc = new Map(
    right.map((row) => [JSON.stringify(keyText(shape, row)), String(row.crc)]),
  );
  for (const row of left) {
    const key = keyText(shape, row);
    const crc = targetCrc.get(JSON.stringify(key));
    if (crc === undefined) return { key, detail: 'the row is missing on the target' };
    if (crc !== String(row.crc)) return { key, detail: 'the rows differ' };
  }
  return undefined;
}
