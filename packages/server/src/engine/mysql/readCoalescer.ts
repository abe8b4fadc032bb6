// Reads that arrive for a partition in the same turn of the event loop travel together: one
// round trip carries every caller's statements (as Vitess's query consolidator and DataLoader
// share work), so that concurrent GetCells, Put lookups and Where pages cost one exchange with
// MySQL instead of one each. A read made while no round trip is out goes once the current task
// has run; one made while a round trip is out, at the end of the turn (batchTiming.ts).
// The parts of a turn split for the database's cores (readSplit.ts) go apart: each in a round
// trip of its own, on its own connection. A read whose caller has gone before its turn ends is
// not sent; a round trip shared by several callers goes as long as one of them is there.
import { scheduleFlush } from '../base/batchTiming.js';
import { type CallScope, isAbandoned, sharedScope } from '../base/callScope.js';
import { type MysqlPool, unsendable } from './mysqlPool.js';
import { isConnectionError, isServerStatementTimeout } from './sqlErrors.js';
import { type TripLimits, shareAmongTrips } from './readSplit.js';
import type { ReadTimeLimit } from './sql/readTimeLimit.js';
import { type Statement, type StatementReader, runTogether } from './sql/statement.js';

export const DEFAULT_COALESCING_LIMITS: TripLimits = {
  maxStatements: 256,
  maxBytes: 4 * 1024 * 1024,
};

interface PendingRead {
  readonly statements: readonly Statement[];
  readonly bytes: number;
  readonly apart: boolean;
  /** The caller's call: a shared round trip runs until the last of its callers gives up. */
  readonly scope: CallScope;
  resolve(results: unknown[]): void;
  reject(error: unknown): void;
}

export class ReadCoalescer {
  private pending: PendingRead[] = [];
  private scheduled = false;
  /** Round trips sent and not yet answered. */
  private out = 0;

  constructor(
    /** Where the reads go: a trip's on behalf of its callers (`for(scope).reads`). */
    private readonly pool: Pick<MysqlPool, 'for'>,
    private readonly limits: TripLimits = DEFAULT_COALESCING_LIMITS,
    /** How the partition's server is told to stop a read itself; the client's timer only if unset. */
    private readonly timeLimit?: ReadTimeLimit,
  ) {}

  /**
   * Reads for the call of `scope`: shared with the turn's other reads, or, `apart`, each in a
   * round trip of its own (the parts of a split turn).
   */
  readerFor(scope: CallScope, apart = false): StatementReader {
    return { read: (statements) => this.enqueue(statements, apart, scope) };
  }

  private enqueue(
    statements: readonly Statement[],
    apart: boolean,
    scope: CallScope,
  ): Promise<unknown[]> {
    if (statements.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ statements, bytes: sizeOf(statements), apart, scope, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        scheduleFlush(() => this.flush(), this.out === 0);
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    let pending = this.pending;
    this.pending = [];
    if (pending.some(callerGone)) {
      for (const read of pending) {
        if (callerGone(read)) read.reject(unsendable(read.scope, true));
      }
      pending = pending.filter((read) => !callerGone(read));
    }
    for (const trip of shareAmongTrips(pending, this.limits)) {
      this.out += 1;
      void this.send(trip).finally(() => (this.out -= 1));
    }
  }

  private async send(trip: readonly PendingRead[]): Promise<void> {
    if (trip.length === 1) {
      // A lone read runs under its own scope, without an array made for it.
      const [read] = trip;
      return runTogether(this.pool.for(read!.scope).reads, read!.statements, this.timeLimit).then(
        read!.resolve,
        read!.reject,
      );
    }
    let results: unknown[];
    try {
      const statements: Statement[] = [];
      for (const read of trip) statements.push(...read.statements);
      const session = this.pool.for(sharedScope(trip.map(scopeOf))).reads;
      results = await runTogether(session, statements, this.timeLimit);
    } catch (error) {
      // A trip runs until the last of its callers' deadlines: stopped, it is too late for all.
      if (isConnectionError(error) || isServerStatementTimeout(error)) {
        for (const read of trip) read.reject(error);
        return;
      }
      // One caller's statement failed (MySQL stops at the first error): each caller alone
      // gets its own answer.
      await Promise.all(trip.map((read) => this.send([read])));
      return;
    }
    let offset = 0;
    for (const read of trip) {
      read.resolve(results.slice(offset, offset + read.statements.length));
      offset += read.statements.length;
    }
  }
}

const scopeOf = (read: PendingRead): CallScope => read.scope;
const callerGone = (read: PendingRead): boolean => isAbandoned(read.scope);

/** About how many bytes the statements take on the wire (a Buffer goes as hex). */
function sizeOf(statements: readonly Statement[]): number {
  let bytes = 0;
  const add = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(add);
    else if (Buffer.isBuffer(value)) bytes += 2 * value.length;
    else bytes += String(value).length + 3;
  };
  for (const { sql, values } of statements) {
    bytes += sql.length;
    values.forEach(add);
  }
  return bytes;
}
