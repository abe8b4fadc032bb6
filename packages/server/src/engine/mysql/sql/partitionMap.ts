// All SQL of `<ns>_shameless_partition_map`: the store's partition map, one row per version,
// kept on every partition the map names (so that any of them can tell a server where each shard
// is; model/partitionMap.ts holds what a map means). A version is written once, by INSERT: two
// movers publishing the same version collide on the primary key, and the second is refused.
import type { PartitionMapRecord, ShardRange } from '../../model/partitionMap.js';
import { quoteIdentifier } from '../../model/identifiers.js';
import type { Row, SqlSession } from '../mysqlPool.js';
import { duplicateKeyName } from '../sqlErrors.js';
import { type Statement, statement } from './statement.js';

export function createPartitionMapTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteIdentifier(table)} (
  \`version\` BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  \`partitions\` MEDIUMTEXT NOT NULL,
  \`shards\` MEDIUMTEXT NOT NULL,
  \`created_at\` DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

/**
 * The highest version stored, as one row `{ version }` (0 when the table is empty): the health
 * probe's statement, so that watching the map costs no statement of its own.
 */
export function maxPartitionMapVersion(table: string): Statement {
  return statement(
    `SELECT COALESCE(MAX(\`version\`), 0) AS \`version\` FROM ${quoteIdentifier(table)}`,
  );
}

/** The version a maxPartitionMapVersion statement answered. */
export function versionOf(rows: readonly Row[]): number {
  return Number(rows[0]?.version ?? 0);
}

/** Creates the table where it is missing, and answers the highest version stored (0: none). */
export async function ensurePartitionMapTable(session: SqlSession, table: string): Promise<number> {
  const max = maxPartitionMapVersion(table);
  const [, rows] = await session.query<[unknown, Row[]]>(
    `${createPartitionMapTableSql(table)};\n${max.sql}`,
    max.values,
  );
  return versionOf(rows);
}

/** The highest version stored, or undefined when there is none (or no table). */
export async function readLatestPartitionMap(
  session: SqlSession,
  table: string,
): Promise<PartitionMapRecord | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT \`version\`, \`partitions\`, \`shards\` FROM ${quoteIdentifier(table)} ORDER BY \`version\` DESC LIMIT 1`,
  );
  const row = rows[0];
  if (!row) return undefined;
  const version = Number(row.version);
  const locations = JSON.parse(String(row.partitions)) as unknown;
  const ranges = JSON.parse(String(row.shards)) as unknown;
  if (
    !Array.isArray(locations) ||
    !locations.every((location) => typeof location === 'string') ||
    !Array.isArray(ranges) ||
    !ranges.every(
      (range) =>
        Array.isArray(range) &&
        range.length === 3 &&
        range.every((n) => typeof n === 'number' && Number.isInteger(n)),
    )
  ) {
    throw new Error(`${table} version ${version} is not a partition map`);
  }
  return { version, locations: locations as string[], ranges: ranges as ShardRange[] };
}

/**
 * Inserts one version; false when that version is there already (another publish took it),
 * unless it is the same map (a publish run again after a failure part way).
 */
export async function insertPartitionMap(
  session: SqlSession,
  table: string,
  record: PartitionMapRecord,
): Promise<boolean> {
  const partitions = JSON.stringify(record.locations);
  const shards = JSON.stringify(record.ranges);
  try {
    await session.query(
      `INSERT INTO ${quoteIdentifier(table)} (\`version\`, \`partitions\`, \`shards\`, \`created_at\`) VALUES (?, ?, ?, NOW(6))`,
      [record.version, partitions, shards],
    );
    return true;
  } catch (error) {
    if (duplicateKeyName(error) === undefined) throw error;
    const rows = await session.query<Row[]>(
      `SELECT \`partitions\`, \`shards\` FROM ${quoteIdentifier(table)} WHERE \`version\` = ?`,
      [record.version],
    );
    return String(rows[0]?.partitions) === partitions && String(rows[0]?.shards) === shards;
  }
}
