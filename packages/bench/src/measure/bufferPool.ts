// What a reader of a run should know about the database's buffer pool. Every write inserts into
// two unique keys that start with the record's uuid, so writes to many records touch index pages
// all over a content table; once the suite's tables outgrow InnoDB's pool, writes go at the pace
// of its page flushing, for the store and the baselines alike, and each run reads its pages back
// from disk, which costs the store's batched reads more: a statement of several finds answers
// with its slowest row. Measured on the project's machine (docs/operations.md, "MySQL's buffer
// pool"):
// WriteCells of 500 cells, back to back, 8,250 cells/s with 128 MiB and 20,993 with 2 GiB;
// GetCell at 16 in flight in full runs 0.45x the gem-shaped baseline with 128 MiB, 0.78x with
// 2 GiB.

/** The pool a full suite's tables fit in (they reach about 1.2 GiB). */
export const SIZED_POOL_BYTES = 2 * 1024 * 1024 * 1024;

/** A note on a pool too small for the suite's tables; undefined for one large enough. */
export function bufferPoolNote(poolBytes: number): string | undefined {
  if (!(poolBytes < SIZED_POOL_BYTES)) return undefined;
  const mib = Math.round(poolBytes / 1024 / 1024);
  return (
    `MySQL's buffer pool is ${mib} MiB: once the runs' tables outgrow it, writes (WriteCells most) ` +
    'go at the pace of its page flushing, and each run reads its pages back from disk, which stalls ' +
    "a batch of the store's reads for its slowest row where a baseline's miss delays one statement. " +
    'For the figures of a database sized for its tables, give it 2 GiB: ' +
    `SET GLOBAL innodb_buffer_pool_size = ${SIZED_POOL_BYTES} ` +
    `(docs/operations.md, "MySQL's buffer pool").`
  );
}
