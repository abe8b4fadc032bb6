// How a read tells the MySQL server to stop it by itself: MariaDB's max_statement_time, MySQL's
// MAX_EXECUTION_TIME hint. Then a read that outlives its call is aborted where it runs, and its
// connection stays usable (no need to destroy it, as the client-side timer must).

/** The SELECT, rewritten so that the server stops it after `ms` milliseconds. */
export type ReadTimeLimit = (select: string, ms: number) => string;

/** MariaDB: any statement, in seconds with microsecond precision (0 would mean no limit). */
const mariaDbLimit: ReadTimeLimit = (select, ms) =>
  `SET STATEMENT max_statement_time=${(Math.max(1, Math.ceil(ms)) / 1000).toFixed(3)} FOR ${select}`;

/**
 * MySQL 5.7.8 and later: a hint after the first SELECT keyword, which bounds the whole
 * statement (unions and subqueries included).
 */
const mySqlLimit: ReadTimeLimit = (select, ms) =>
  select.replace(
    /^(\s*\(*\s*SELECT)\b/i,
    `$1 /*+ MAX_EXECUTION_TIME(${Math.max(1, Math.ceil(ms))}) */`,
  );

/**
 * The time limit a server of this version (`SELECT VERSION()`) understands, or undefined for a
 * MySQL older than 5.7.8 (its reads are bounded by the client-side timer only).
 */
export function readTimeLimitFor(version: string): ReadTimeLimit | undefined {
  if (/mariadb/i.test(version)) return mariaDbLimit;
  const [major = 0, minor = 0, patch = 0] = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? [])
    .slice(1)
    .map(Number);
  const atLeast578 = major > 5 || (major === 5 && (minor > 7 || (minor === 7 && patch >= 8)));
  return atLeast578 ? mySqlLimit : undefined;
}
