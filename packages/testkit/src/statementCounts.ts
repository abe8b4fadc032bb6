// Which server ran a test's statements, told by MariaDB's own counters (SHOW GLOBAL STATUS, which
// counts itself as no SELECT): what a test of read replicas reads to know whether its reads left
// the primary. `Com_select` counts every SELECT; `Master_gtid_wait_count` every MASTER_GTID_WAIT,
// itself a SELECT. The counters are the server's, so every client's statements count.
import { queryRows } from './adminConnection.js';

/** One server's statement counters, since it started. */
export interface StatementCounts {
  /** Com_select: every SELECT, MASTER_GTID_WAIT included. */
  readonly selects: number;
  /** Master_gtid_wait_count: the MASTER_GTID_WAITs. */
  readonly gtidWaits: number;
}

/** The counters of the server at `url` (its database, if any, plays no part). */
export async function readStatementCounts(url: string): Promise<StatementCounts> {
  const rows = await queryRows(
    url,
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_select', 'Master_gtid_wait_count')",
  );
  const value = (name: string) => {
    const row = rows.find((candidate) => candidate.Variable_name === name);
    if (row === undefined) throw new Error(`the server at ${new URL(url).host} has no ${name}`);
    return Number(row.Value);
  };
  return { selects: value('Com_select'), gtidWaits: value('Master_gtid_wait_count') };
}

/** What each server ran between two readings, and how long that was. */
export interface StatementDeltas {
  /** Per server, in the order given: what its counters moved by. */
  readonly servers: readonly StatementCounts[];
  /** From the first reading to the last, both included. */
  readonly elapsedMs: number;
}

/** Reads the counters of `urls` now; `delta()` tells what each ran since. */
export async function watchStatements(
  urls: readonly string[],
): Promise<{ delta(): Promise<StatementDeltas> }> {
  const startedAt = Date.now();
  const before = await Promise.all(urls.map(readStatementCounts));
  return {
    async delta() {
      const now = await Promise.all(urls.map(readStatementCounts));
      return {
        servers: now.map((counts, i) => ({
          selects: counts.selects - before[i]!.selects,
          gtidWaits: counts.gtidWaits - before[i]!.gtidWaits,
        })),
        elapsedMs: Date.now() - startedAt,
      };
    },
  };
}
