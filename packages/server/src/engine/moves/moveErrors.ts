// The mover's failures, as engine errors: each says which shard, what happened, and what to do
// next (run the same command again, abort, or fix what it names). No SQL error reaches a caller.
import { FailedPreconditionError, UnavailableError } from '../base/errors.js';
import type { ScopedPool, SqlConnection, SqlValue } from '../mysql/mysqlPool.js';
import { isConnectionLost } from '../mysql/sqlErrors.js';

/**
 * The verify found the target different from the source: the move stops before its cut-over;
 * or finish found the frozen source different from the target: nothing is dropped.
 */
export class ShardMoveDifferenceError extends FailedPreconditionError {
  constructor(
    readonly shard: number,
    /** The table that differs (its name on the source). */
    readonly table: string,
    /** The first key whose rows differ, as text in key order. */
    readonly key: readonly (string | null)[],
    detail: string,
    /** Where the difference was found: the verify before the cut-over, or finish after it. */
    readonly stage: 'verify' | 'finish' = 'verify',
  ) {
    super(
      `shard ${shard}: table ${table} differs between source and target at key ${JSON.stringify(key)} (${detail}); ` +
        (stage === 'verify'
          ? 'the move stopped before its cut-over and nothing was switched: find what wrote to the target, then ' +
            'abort the move (move-shards --abort) and start it again'
          : 'the shard is served by the target and its frozen source tables were kept, nothing dropped: find ' +
            'what changed either copy, then run move-shards --finish again'),
    );
  }
}

/** A statement of the move failed on a partition: running the same command again resumes. */
export class ShardMoveInterruptedError extends UnavailableError {
  constructor(shard: number | undefined, partition: number, step: string, cause: unknown) {
    const code = (cause as { code?: string }).code;
    const message = cause instanceof Error ? cause.message : String(cause);
    // A statement on a connection its server dropped fails in the driver's or the socket's
    // words only, which do not say so.
    const what = isConnectionLost(cause)
      ? `the connection was lost: its server went away or closed it (${message})`
      : message;
    super(
      partition,
      `${shard === undefined ? '' : `shard ${shard}: `}${step} failed on partition ${partition}` +
        `${code ? ` (${code})` : ''}: ${what}; the move keeps its state: run the same command again to resume`,
      { cause },
    );
  }
}

const FAILED_ON = Symbol('the partition a statement failed on');

/**
 * `pool`, whose failed statements say which partition they failed on: a copy reads one
 * partition and writes another in one step, and a failure should name the server that failed.
 * The error itself is marked (its code and class unchanged for those that test them).
 */
export function markingFailures(pool: ScopedPool, partition: number): ScopedPool {
  const mark = (error: unknown): unknown => {
    if (typeof error === 'object' && error !== null && !(FAILED_ON in error)) {
      Object.defineProperty(error, FAILED_ON, { value: partition });
    }
    return error;
  };
  return {
    reads: pool.reads,
    query: <T>(sql: Parameters<ScopedPool['query']>[0], values?: readonly SqlValue[]) =>
      pool.query<T>(sql, values).catch((error: unknown) => {
        throw mark(error);
      }),
    getConnection: (): Promise<SqlConnection> =>
      pool.getConnection().catch((error: unknown) => {
        throw mark(error);
      }),
  };
}

/** The partition `markingFailures` marked `error` with, if any. */
export function failedOn(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !(FAILED_ON in error)) return undefined;
  return (error as { [FAILED_ON]: number })[FAILED_ON];
}
