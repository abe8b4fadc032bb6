// What already exists in a partition's database, read from information_schema: which of the
// store's tables are there, and whether content tables have our `request_id` column.
import type { Row, SqlSession } from '../mysqlPool.js';
import { selectEach } from './contentRows.js';

/** An existing table, as far as the store's schema changes are concerned. */
export interface ExistingTable {
  /** False for a content table the gem created, which lacks our request_id column. */
  hasRequestId: boolean;
}

/** Of the given tables, those that exist in the session's database, by name. */
export async function inspectTables(
  session: SqlSession,
  tables: readonly string[],
): Promise<Map<string, ExistingTable>> {
  const existing = new Map<string, ExistingTable>();
  if (tables.length === 0) return existing;
  const [found, columns] = await selectEach(
    session,
    [
      `SELECT TABLE_NAME AS name FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)`,
      `SELECT TABLE_NAME AS name FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) AND COLUMN_NAME = 'request_id'`,
    ],
    [tables, tables],
  );
  for (const row of found ?? []) {
    existing.set(String(row.name), { hasRequestId: false });
  }
  for (const row of columns ?? ([] as Row[])) {
    const table = existing.get(String(row.name));
    if (table) table.hasRequestId = true;
  }
  return existing;
}
