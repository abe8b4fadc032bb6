// How fresh a read must be, and the session token that carries read-your-writes between calls.
//
// `strong` reads the partition's primary (every read did before replicas). `session` reads a
// replica that has applied the caller's own writes: every write answers the positions of the
// commits it made, per partition, and a read that carries them is served only where they are
// applied. `bounded` reads any replica no staler than a bound. A call that says nothing is
// strong, so every client written before replicas keeps its meaning.
//
// The token is text a client keeps and sends back; its form is part of the contract
// (docs/consistency.md), so that any client can pass it, and the SDK can merge two: `1:` then,
// per partition, `<index>=<GTID position>`, separated by `;` (`1:0=0-1-42;1=1-2-7`).
import {
  type GtidPosition,
  MalformedPositionError,
  formatPosition,
  mergePositions,
  parsePosition,
} from './gtidPosition.js';

/** Per partition index, the replication position a reader must have applied. */
export type SessionPositions = ReadonlyMap<number, GtidPosition>;

export type ReadConsistency =
  | { readonly mode: 'strong' }
  | {
      readonly mode: 'session';
      readonly after: SessionPositions;
      /**
       * No staler than this as well: set only for a read shared by session and bounded calls
       * (sharedConsistency), which a replica may answer when it satisfies all of them.
       */
      readonly maxStalenessMs?: number;
    }
  | { readonly mode: 'bounded'; readonly maxStalenessMs: number };

export const STRONG: ReadConsistency = { mode: 'strong' };

const TOKEN_VERSION = '1:';
/** A token names a position per partition: far below this for any store. */
export const MAX_TOKEN_LENGTH = 8192;

/** Thrown for a token that is not one this server wrote; the message says what is wrong. */
export class MalformedTokenError extends Error {}

export function formatToken(positions: SessionPositions): string {
  const parts = [...positions.entries()]
    .filter(([, position]) => position.size > 0)
    .sort(([a], [b]) => a - b)
    .map(([partition, position]) => `${partition}=${formatPosition(position)}`);
  return TOKEN_VERSION + parts.join(';');
}

export function parseToken(token: string): SessionPositions {
  if (token.length > MAX_TOKEN_LENGTH) {
    throw new MalformedTokenError(`is ${token.length} characters, more than ${MAX_TOKEN_LENGTH}`);
  }
  if (!token.startsWith(TOKEN_VERSION)) {
    throw new MalformedTokenError(`must start with ${JSON.stringify(TOKEN_VERSION)}`);
  }
  const positions = new Map<number, GtidPosition>();
  const body = token.slice(TOKEN_VERSION.length);
  if (body === '') return positions;
  for (const part of body.split(';')) {
    const equals = part.indexOf('=');
    const partition = Number(part.slice(0, equals));
    if (equals < 1 || !Number.isInteger(partition) || partition < 0 || partition > 65_535) {
      throw new MalformedTokenError(
        `${JSON.stringify(part)} does not start with a partition index`,
      );
    }
    let position: GtidPosition;
    try {
      position = parsePosition(part.slice(equals + 1));
    } catch (error) {
      if (!(error instanceof MalformedPositionError)) throw error;
      throw new MalformedTokenError(`partition ${partition}: ${error.message}`);
    }
    positions.set(partition, mergePositions(positions.get(partition) ?? new Map(), position));
  }
  return positions;
}

/** What a reader must have applied to see the writes of both. */
export function mergeSessions(a: SessionPositions, b: SessionPositions): SessionPositions {
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  const merged = new Map(a);
  for (const [partition, position] of b) {
    merged.set(partition, mergePositions(merged.get(partition) ?? new Map(), position));
  }
  return merged;
}

/** Where the commits of a call's statements are told (mysqlPool.ts reads each commit's GTID). */
export interface CommitSink {
  record(partition: number, position: GtidPosition): void;
}

/** The commits a call made, gathered for the session token its answer carries. */
export class CommitPositions implements CommitSink {
  private positions: SessionPositions = new Map();

  record(partition: number, position: GtidPosition): void {
    this.positions = mergeSessions(this.positions, new Map([[partition, position]]));
  }

  get all(): SessionPositions {
    return this.positions;
  }
}

/**
 * The one consistency that satisfies every caller of shared work (a read coalesced for several
 * calls): strong when one caller is; else session when one caller is (every session caller's
 * positions, and the tightest bound of the bounded ones, if any), else bounded (the tightest
 * bound). So a turn of session and bounded reads still reads a replica that has applied the
 * positions and is within the bound, rather than the primary.
 */
export function sharedConsistency(
  callers: readonly (ReadConsistency | undefined)[],
): ReadConsistency {
  let after: SessionPositions | undefined;
  let maxStalenessMs: number | undefined;
  for (const caller of callers) {
    if (caller === undefined || caller.mode === 'strong') return STRONG;
    if (caller.mode === 'session')
      after = after ? mergeSessions(after, caller.after) : caller.after;
    if (caller.maxStalenessMs !== undefined) {
      maxStalenessMs = Math.min(maxStalenessMs ?? Infinity, caller.maxStalenessMs);
    }
  }
  if (after)
    return { mode: 'session', after, ...(maxStalenessMs === undefined ? {} : { maxStalenessMs }) };
  return maxStalenessMs === undefined ? STRONG : { mode: 'bounded', maxStalenessMs };
}

/** A sink telling each of `sinks` (work shared by several calls: a group commit). */
export function commitsOfAll(sinks: readonly (CommitSink | undefined)[]): CommitSink | undefined {
  const present = sinks.filter((sink) => sink !== undefined);
  if (present.length <= 1) return present[0];
  return {
    record: (partition, position) => present.forEach((sink) => sink.record(partition, position)),
  };
}
