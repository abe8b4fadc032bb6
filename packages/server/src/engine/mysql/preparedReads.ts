// Reads whose text repeats run as prepared statements: MariaDB parses a text once per
// connection, and each later read sends only the statement's handle and its values (the binary
// protocol). A lone GetCell's statement is the same text for every record of a table, and its
// parse was a fifth of what MariaDB spent on it (docs/performance.md, "Prepared reads").
//
// Only a statement its SQL module marks (Statement.preparable) and sends alone is prepared, and
// only once the connection has sent its text before: a text seen once (a batch's union of
// whatever cells its turn asked for) goes as text, with no round trip spent preparing what would
// never run again. Each connection keeps about `perConnection` statements, those not used lately
// closed, so that a store with a thousand tables cannot exhaust MariaDB's
// max_prepared_stmt_count. A statement that cannot be prepared (that count reached, a construct
// the binary protocol refuses) or whose handle the server forgot runs as text: preparing never
// fails a read.
import type mysql from 'mysql2';
import { GenerationalMap } from '../base/generationalMap.js';

/**
 * Statements a connection keeps prepared unless told otherwise: a partition's pool of 16
 * connections keeps 1,024 at most, a sixteenth of MariaDB's default max_prepared_stmt_count.
 */
export const DEFAULT_PREPARED_READS_PER_CONNECTION = 64;

/** A prepared statement as mysql2 hands it out (`connection.prepare`). */
export type PreparedStatement = mysql.PrepareStatementInfo;

/** How a read's statement goes: by its handle, prepared first, or as text. */
export type ReadRoute =
  | { readonly via: 'handle'; readonly statement: PreparedStatement }
  | { readonly via: 'prepare' }
  | { readonly via: 'text' };

/**
 * Longer texts always go as text: a lone GetCells of cells in hundreds of tables is one union
 * of as many dives, a text of a hundred KB or more that a connection would keep twice over (as
 * a sighting, then with its statement) for a read that seldom repeats.
 */
export const MAX_PREPARED_TEXT_LENGTH = 4096;

const AS_TEXT: ReadRoute = { via: 'text' };
const PREPARE: ReadRoute = { via: 'prepare' };

/** MariaDB/MySQL: no prepared statement of that handle (the session forgot it). */
const ER_UNKNOWN_STMT_HANDLER = 1243;
/** The table changed under the statement more often than the server would prepare it again. */
const ER_NEED_REPREPARE = 1615;

/**
 * Whether `values` bind to placeholders as they would be formatted into the text: strings, null
 * and integers a double holds exactly (mysql2 binds a number as a DOUBLE). A bigint, a Buffer, a
 * Date or a list goes as text, whose formatting the engine's exact types were checked against.
 */
export function bindsExactly(values: readonly unknown[]): boolean {
  for (const value of values) {
    if (typeof value === 'string' || value === null) continue;
    if (typeof value === 'number' && Number.isSafeInteger(value)) continue;
    return false;
  }
  return true;
}

/** Whether a statement run by its handle failed because the handle is gone: run it as text. */
export function isForgottenStatement(error: unknown): boolean {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return errno === ER_UNKNOWN_STMT_HANDLER || errno === ER_NEED_REPREPARE;
}

/** What a pool's preparable reads did since it opened, for metrics: each read counts once. */
export interface PreparedReadCounts {
  /** Reads run by a prepared statement's handle (just prepared, or kept). */
  readonly byHandle: number;
  /** Reads that went as text: a text seen once, one the server refused or forgot, one too long. */
  readonly asText: number;
  /** Statements prepared. */
  readonly prepared: number;
  /** Prepares the server refused (its max_prepared_stmt_count reached, say). */
  readonly refused: number;
}

/** The counts of several pools (a Galera partition's nodes) as one. */
export function addCounts(counts: readonly PreparedReadCounts[]): PreparedReadCounts {
  const sum = { byHandle: 0, asText: 0, prepared: 0, refused: 0 };
  for (const one of counts) {
    sum.byHandle += one.byHandle;
    sum.asText += one.asText;
    sum.prepared += one.prepared;
    sum.refused += one.refused;
  }
  return sum;
}

/**
 * One connection's prepared statements and the texts it sent once, each bounded as the engine's
 * caches are (generationalMap.ts: what is in use stays, the rest goes a generation at a time).
 */
class ConnectionStatements {
  /** Dropped ones are closed, and forgotten by mysql2's own cache, which would hand them out. */
  readonly prepared: GenerationalMap<PreparedStatement>;
  /** Texts sent as text, and whether preparing them failed (then they always go as text). */
  readonly sightings: GenerationalMap<'once' | 'refused'>;

  constructor(connection: mysql.PoolConnection, perConnection: number) {
    this.prepared = new GenerationalMap<PreparedStatement>(perConnection, undefined, (text) =>
      connection.unprepare(text),
    );
    this.sightings = new GenerationalMap(perConnection);
  }
}

export class PreparedReads {
  readonly #byConnection = new WeakMap<mysql.PoolConnection, ConnectionStatements>();
  readonly #counts = { byHandle: 0, asText: 0, prepared: 0, refused: 0 };

  /** At most `perConnection` statements prepared on each connection (an odd one rounded up). */
  constructor(readonly perConnection: number) {}

  /** How `text` goes on `connection` now; its sighting is counted. */
  route(connection: mysql.PoolConnection, text: string): ReadRoute {
    if (text.length > MAX_PREPARED_TEXT_LENGTH) return this.#asText();
    const own = this.#statementsOf(connection);
    const statement = own.prepared.get(text);
    if (statement !== undefined) {
      this.#counts.byHandle += 1;
      return { via: 'handle', statement };
    }
    const sighting = own.sightings.get(text);
    if (sighting === 'once') {
      own.sightings.delete(text);
      return PREPARE;
    }
    if (sighting === undefined) own.sightings.set(text, 'once');
    return this.#asText();
  }

  /** What the reads did so far. */
  counts(): PreparedReadCounts {
    return { ...this.#counts };
  }

  /** `statement` was prepared for `text` on `connection`: kept while in use. */
  prepared(connection: mysql.PoolConnection, text: string, statement: PreparedStatement): void {
    this.#statementsOf(connection).prepared.set(text, statement);
    this.#counts.prepared += 1;
    this.#counts.byHandle += 1;
  }

  /** Preparing `text` failed on `connection`: it goes as text from now on. */
  refused(connection: mysql.PoolConnection, text: string): void {
    this.#statementsOf(connection).sightings.set(text, 'refused');
    this.#counts.refused += 1;
    this.#counts.asText += 1;
  }

  /** The server no longer knows the statement of `text` (see isForgottenStatement). */
  forgotten(connection: mysql.PoolConnection, text: string): void {
    if (this.#statementsOf(connection).prepared.delete(text)) connection.unprepare(text);
    // Counted as run by its handle when it was sent; it goes as text instead.
    this.#counts.byHandle -= 1;
    this.#counts.asText += 1;
  }

  #asText(): ReadRoute {
    this.#counts.asText += 1;
    return AS_TEXT;
  }

  #statementsOf(connection: mysql.PoolConnection): ConnectionStatements {
    let own = this.#byConnection.get(connection);
    if (own === undefined) {
      own = new ConnectionStatements(connection, this.perConnection);
      this.#byConnection.set(connection, own);
    }
    return own;
  }
}

/**
 * A read's time limit rounded up to two significant digits (1,234 ms → 1,300; 29,987 → 30,000),
 * so that the text carrying it repeats and can be prepared: the server may let a read run up to
 * a tenth longer than its call's deadline, never stop it sooner.
 */
export function repeatableLimitMs(ms: number): number {
  if (!(ms > 10)) return Math.max(1, Math.ceil(ms));
  const step = 10 ** (Math.floor(Math.log10(ms)) - 1);
  return Math.ceil(ms / step) * step;
}
