// How the reads that callers make in one turn of the event loop are shared among SELECTs and
// round trips. One round trip carries many callers' reads, but MySQL runs one connection's
// statements on one core, one after another: a turn of 16 GetCells read with one SELECT keeps
// one database core busy for the whole of it while the other waits, and the SDK and the server
// wait on it. Two SELECTs of 8, each in a round trip of its own on its own connection, finish
// sooner, for a few more statements' work. Measured on the project's machine (2 cores, 16
// calls in flight through the SDK, four to five alternating runs): GetCell 2,884–3,014 →
// 3,348–3,448 calls/s, Where (1 record) 1,720–1,796 → 1,917–2,027. Four SELECTs of 4 did no
// better than one of 16 (each SELECT costs the database a parse and a plan), so a turn is
// split only while each part keeps a few keys; and small reads still share one round trip,
// whose fixed cost a second connection would only double.

export interface ReadParts {
  /** Keys per SELECT at most: a larger turn always takes several. */
  readonly maxKeys: number;
  /** SELECTs a turn is spread over when it has enough keys, each on a connection of its own. */
  readonly parallel: number;
  /** Keys per SELECT at least when a turn is spread for parallelism. */
  readonly minKeys: number;
}

/** Two parts of at least 4 keys: what the measurements above favoured on 2 database cores. */
export const PARALLEL_READS = { parallel: 2, minKeys: 4 } as const;

/**
 * `keys` in consecutive parts of nearly equal size: as many as `maxKeys` requires, or more,
 * up to `parallel`, while each keeps `minKeys`.
 */
export function splitKeys<K>(keys: readonly K[], parts: ReadParts): K[][] {
  if (keys.length === 0) return [];
  const count = Math.max(
    Math.ceil(keys.length / parts.maxKeys),
    Math.min(parts.parallel, Math.floor(keys.length / Math.max(1, parts.minKeys))),
    1,
  );
  const split: K[][] = [];
  let start = 0;
  for (let part = 0; part < count; part += 1) {
    const end = start + Math.ceil((keys.length - start) / (count - part));
    split.push(keys.slice(start, end));
    start = end;
  }
  return split;
}

export interface TripLimits {
  /** Statements per round trip at most; more callers' reads go in another. */
  readonly maxStatements: number;
  /** About this many bytes of SQL per round trip at most (values included). */
  readonly maxBytes: number;
}

export interface TripRead {
  readonly statements: readonly unknown[];
  readonly bytes: number;
  /** A part of a split turn (splitKeys): it goes in a round trip of its own. */
  readonly apart: boolean;
}

/**
 * The reads of a turn as round trips: each read `apart` alone, the others together in turn
 * order, in more than one trip only where the limits require. A read's statements stay
 * together; a read alone over the limits goes alone.
 */
export function shareAmongTrips<R extends TripRead>(
  reads: readonly R[],
  limits: TripLimits,
): R[][] {
  const trips: R[][] = [];
  let trip: R[] = [];
  let statements = 0;
  let bytes = 0;
  for (const read of reads) {
    if (read.apart) {
      trips.push([read]);
      continue;
    }
    const fits =
      statements + read.statements.length <= limits.maxStatements &&
      bytes + read.bytes <= limits.maxBytes;
    if (trip.length > 0 && !fits) {
      trips.push(trip);
      trip = [];
      statements = 0;
      bytes = 0;
    }
    trip.push(read);
    statements += read.statements.length;
    bytes += read.bytes;
  }
  if (trip.length > 0) trips.push(trip);
  return trips;
}
