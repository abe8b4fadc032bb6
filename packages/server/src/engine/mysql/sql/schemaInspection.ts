// What already exists in a partition's database, read from information_schema: which of the
// store's tables are there, their columns (a table of a model's name that lacks the columns the
// store reads is someone else's), and the two whose presence or type decide what serving the
// store changes (`request_id`) and whether it can write there at all (`created_at`); and the
// type of every column, whose range bounds what an index table can hold.
import type { Row, SqlSession } from '../mysqlPool.js';
import { runTogether, statement } from './statement.js';

/** An existing table, as far as the store's schema changes are concerned. */
export interface ExistingTable {
  /** The DATA_TYPE of its created_at column (`datetime`, `bigint`, …); undefined without one. */
  createdAtType: string | undefined;
  /** The fractional digits of a second its created_at keeps (DATETIME_PRECISION), if a time. */
  createdAtDigits: number | undefined;
  /** False for a content table the gem created, which lacks our request_id column. */
  hasRequestId: boolean;
  /** The names of all its columns. */
  columns: Set<string>;
  /** Every column's COLUMN_TYPE (`int(11)`, `varchar(255)`), by name. */
  columnTypes: Map<string, string>;
}

/** Of the given tables, those that exist in the session's database, by name. */
export async function inspectTables(
  session: SqlSession,
  tables: readonly string[],
): Promise<Map<string, ExistingTable>> {
  const existing = new Map<string, ExistingTable>();
  if (tables.length === 0) return existing;
  const [found, columns] = (await runTogether(session, [
    statement(
      `SELECT TABLE_NAME AS name FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)`,
      [tables],
    ),
    statement(
      `SELECT TABLE_NAME AS name, COLUMN_NAME AS \`column\`, DATA_TYPE AS type,
              COLUMN_TYPE AS columnType, DATETIME_PRECISION AS digits
         FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)`,
      [tables],
    ),
  ])) as Row[][];
  for (const row of found ?? []) {
    existing.set(String(row.name), {
      createdAtType: undefined,
      createdAtDigits: undefined,
      hasRequestId: false,
      columns: new Set(),
      columnTypes: new Map(),
    });
  }
  for (const row of columns ?? ([] as Row[])) {
    const table = existing.get(String(row.name));
    if (!table) continue;
    const column = String(row.column);
    table.columns.add(column);
    table.columnTypes.set(column, String(row.columnType).toLowerCase());
    if (column === 'request_id') table.hasRequestId = true;
    else if (column === 'created_at') {
      table.createdAtType = String(row.type).toLowerCase();
      table.createdAtDigits = row.digits === null ? undefined : Number(row.digits);
    }
  }
  return existing;
}
