// How the reads that callers make in one turn of the event loop are shared among SELECTs and
// round trips. One round trip carries many callers' reads, but MySQL runs one connection's
// statements on one core, one after another: a turn of 16 GetCells read with one SELECT keeps
// one database core busy for the whole of it while the other waits, and the SDK and the server
// wait on it. Two SELECTs of 8 on two connections finish sooner, for a few more statements'
// work. Measured on the project's machine (2 cores, 16 calls in flight through the SDK, four
// to five alternating runs): GetCell 2,884–3,014 → 3,348–3,448 calls/s, Where (1 record)
// 1,720–1,796 → 1,917–2,027. Four SELECTs of 4 did no better than one of 16 (each SELECT costs
// the database a parse and a plan), so a turn is split only while each part keeps a few keys.

export interface ReadParts {
  /** Keys per SELECT at most: a larger turn always takes several. */
  readonly maxKeys: number;
  /** SELECTs a turn is spread over when it has enough keys, to run on that many connections. */
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
  /** Round trips a turn's reads are spread over when there are several reads. */
  readonly parallel: number;
}

export interface TripRead {
  readonly statements: readonly unknown[];
  readonly bytes: number;
}

/**
 * The reads of a turn as round trips: spread over up to `parallel` trips (each to the one
 * with fewest statements), more only where the limits require. A read's statements stay
 * together, and each trip keeps its reads in turn order. A read alone over the limits goes
 * alone.
 */
export function shareAmongTrips<R extends TripRead>(
  reads: readonly R[],
  limits: TripLimits,
): R[][] {
  interface Trip {
    readonly reads: R[];
    statements: number;
    bytes: number;
  }
  const trips: Trip[] = Array.from({ length: Math.min(limits.parallel, reads.length) }, () => ({
    reads: [],
    statements: 0,
    bytes: 0,
  }));
  const fits = (trip: Trip, read: R) =>
    trip.reads.length === 0 ||
    (trip.statements + read.statements.length <= limits.maxStatements &&
      trip.bytes + read.bytes <= limits.maxBytes);
  for (const read of reads) {
    let lightest: Trip | undefined;
    for (const trip of trips) {
      if (fits(trip, read) && (lightest === undefined || trip.statements < lightest.statements)) {
        lightest = trip;
      }
    }
    if (lightest === undefined) {
      lightest = { reads: [], statements: 0, bytes: 0 };
      trips.push(lightest);
    }
    lightest.reads.push(read);
    lightest.statements += read.statements.length;
    lightest.bytes += read.bytes;
  }
  return trips.filter((trip) => trip.reads.length > 0).map((trip) => trip.reads);
}
