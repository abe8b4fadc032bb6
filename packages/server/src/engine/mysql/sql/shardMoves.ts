// All SQL of moving shards between partitions (engine/moves/, SPEC §7):
// - `<ns>_shameless_shard_moves`, on partition 0 (the home, which never moves): one row per
//   shard being moved, its phase and cursors, so that a mover killed anywhere resumes from it;
// - `<ns>_shameless_move_changes`, on a source partition: the keys of index rows inserted or
//   deleted while a shard of it moves, appended by triggers on the shard's index tables. Index
//   tables have no id to follow (insert-only, plus the deletes that undo a failed create): the
//   triggers are the database's own change capture, and fire for every writer (a stale server,
//   the gem);
// - the copy, verify and cut-over statements on any table of a shard, built from its shape as
//   information_schema tells it (a gem-made table has other column types and no primary key).
import { createHash } from 'node:crypto';
import type { Row, SqlSession, SqlValue } from '../mysqlPool.js';
import { type Statement, runTogether, statement } from './statement.js';

export type MovePhase =
  'copying' | 'catching_up' | 'verified' | 'cut_over' | 'finished' | 'aborted';

export function createShardMovesTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`move_id\` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  \`shard\` INT NOT NULL,
  \`source\` INT NOT NULL,
  \`target\` INT NOT NULL,
  \`target_location\` TEXT NOT NULL,
  \`phase\` VARCHAR(16) NOT NULL,
  \`content_cursor\` MEDIUMTEXT NOT NULL,
  \`changes_cursor\` BIGINT UNSIGNED NOT NULL DEFAULT 0,
  \`rows_copied\` BIGINT UNSIGNED NOT NULL DEFAULT 0,
  \`hold_ms\` INT NULL,
  \`moved_names\` MEDIUMTEXT NULL,
  \`created_at\` DATETIME(6) NOT NULL,
  \`updated_at\` DATETIME(6) NOT NULL,
  \`error\` TEXT NULL,
  \`reverse_of\` BIGINT UNSIGNED NULL,
  KEY \`shard_phase\` (\`shard\`, \`phase\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

export function createMoveChangesTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`id\` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  \`table_name\` VARCHAR(64) NOT NULL,
  \`key_json\` TEXT NOT NULL,
  KEY \`table_id\` (\`table_name\`, \`id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

// ---- the movers' lock (home partition) ----

/**
 * The name of the session lock one mover of a store holds while it runs: GET_LOCK names are
 * server-wide, so the database is part of it, hashed to stay within the 64 characters allowed.
 */
export function moveLockName(database: string, namespace: string): string {
  const hash = createHash('sha1').update(`${database}\0${namespace}`).digest('hex').slice(0, 24);
  return `shameless_moves_${hash}`;
}

/**
 * Takes the lock, waiting up to `waitSeconds` for it: true when this session holds it now. A
 * short wait, not none: the session of a mover just killed holds it until its server notices
 * the connection gone, and the same command run again at once must not be refused for that.
 */
export async function tryLock(
  session: SqlSession,
  name: string,
  waitSeconds: number,
): Promise<boolean> {
  const rows = await session.query<Row[]>('SELECT GET_LOCK(?, ?) AS `got`', [name, waitSeconds]);
  return Number(rows[0]?.got) === 1;
}

/** The connection id of the session holding the lock, if any (for the refusal's message). */
export async function lockHolder(session: SqlSession, name: string): Promise<number | undefined> {
  const rows = await session.query<Row[]>('SELECT IS_USED_LOCK(?) AS `holder`', [name]);
  const holder = rows[0]?.holder;
  return holder === null || holder === undefined ? undefined : Number(holder);
}

export async function releaseLock(session: SqlSession, name: string): Promise<void> {
  await session.query('DO RELEASE_LOCK(?)', [name]);
}

// ---- the moves' rows (home partition) ----

export interface MoveRow {
  readonly moveId: number;
  readonly shard: number;
  readonly source: number;
  readonly target: number;
  readonly targetLocation: string;
  readonly phase: MovePhase;
  /** JSON: per table, the last key copied and whether its first copy is done. */
  readonly contentCursor: string;
  /** How many captured index changes were applied on the target. */
  readonly changesApplied: number;
  readonly rowsCopied: number;
  readonly holdMs: number | undefined;
  /** JSON: each source table's name after the cut-over renamed it away. */
  readonly movedNames: string | undefined;
  readonly error: string | undefined;
  /** The move this one takes back (an abort after its cut-over), if it is such a reverse move. */
  readonly reverseOf: number | undefined;
}

const MOVE_COLUMNS =
  '`move_id`, `shard`, `source`, `target`, `target_location`, `phase`, `content_cursor`, `changes_cursor`, `rows_copied`, `hold_ms`, `moved_names`, `error`, `reverse_of`';

function toMoveRow(row: Row): MoveRow {
  return {
    moveId: Number(row.move_id),
    shard: Number(row.shard),
    source: Number(row.source),
    target: Number(row.target),
    targetLocation: String(row.target_location),
    phase: String(row.phase) as MovePhase,
    contentCursor: String(row.content_cursor),
    changesApplied: Number(row.changes_cursor),
    rowsCopied: Number(row.rows_copied),
    holdMs: row.hold_ms === null ? undefined : Number(row.hold_ms),
    movedNames: row.moved_names === null ? undefined : String(row.moved_names),
    error: row.error === null ? undefined : String(row.error),
    reverseOf: row.reverse_of === null ? undefined : Number(row.reverse_of),
  };
}

/** Every move not finished or aborted, by shard. */
export async function readActiveMoves(session: SqlSession, table: string): Promise<MoveRow[]> {
  const rows = await session.query<Row[]>(
    `SELECT ${MOVE_COLUMNS} FROM \`${table}\` WHERE \`phase\` NOT IN ('finished', 'aborted') ORDER BY \`shard\`, \`move_id\``,
  );
  return rows.map(toMoveRow);
}

/** One move by id, whatever its phase. */
export async function readMove(
  session: SqlSession,
  table: string,
  moveId: number,
): Promise<MoveRow | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT ${MOVE_COLUMNS} FROM \`${table}\` WHERE \`move_id\` = ?`,
    [moveId],
  );
  return rows[0] ? toMoveRow(rows[0]) : undefined;
}

export async function insertMove(
  session: SqlSession,
  table: string,
  move: {
    shard: number;
    source: number;
    target: number;
    targetLocation: string;
    reverseOf?: number;
  },
): Promise<number> {
  const result = await session.query<{ insertId: number | string }>(
    `INSERT INTO \`${table}\` (\`shard\`, \`source\`, \`target\`, \`target_location\`, \`phase\`, \`content_cursor\`, \`reverse_of\`, \`created_at\`, \`updated_at\`)
VALUES (?, ?, ?, ?, 'copying', '{}', ?, NOW(6), NOW(6))`,
    [move.shard, move.source, move.target, move.targetLocation, move.reverseOf ?? null],
  );
  return Number(result.insertId);
}

/** What a step of a move changes in its row; left-out fields stay. */
export interface MoveUpdate {
  phase?: MovePhase;
  contentCursor?: string;
  changesApplied?: number;
  rowsCopied?: number;
  holdMs?: number;
  movedNames?: string;
  /** null clears it. */
  error?: string | null;
}

const UPDATE_COLUMNS: Record<keyof MoveUpdate, string> = {
  phase: 'phase',
  contentCursor: 'content_cursor',
  changesApplied: 'changes_cursor',
  rowsCopied: 'rows_copied',
  holdMs: 'hold_ms',
  movedNames: 'moved_names',
  error: 'error',
};

export async function updateMove(
  session: SqlSession,
  table: string,
  moveId: number,
  update: MoveUpdate,
): Promise<void> {
  const sets: string[] = [];
  const values: SqlValue[] = [];
  for (const [field, column] of Object.entries(UPDATE_COLUMNS)) {
    const value = update[field as keyof MoveUpdate];
    if (value === undefined) continue;
    sets.push(`\`${column}\` = ?`);
    values.push(value);
  }
  if (sets.length === 0) return;
  await session.query(
    `UPDATE \`${table}\` SET ${sets.join(', ')}, \`updated_at\` = NOW(6) WHERE \`move_id\` = ?`,
    [...values, moveId],
  );
}

// ---- tables as they are ----

export interface TableColumn {
  readonly name: string;
  /** information_schema DATA_TYPE: `bigint`, `varchar`, `mediumblob`, `datetime`, … */
  readonly type: string;
}

/** A table's columns in order, and the columns of the key that identifies a row. */
export interface TableShape {
  readonly name: string;
  readonly columns: readonly TableColumn[];
  /** The primary key's columns; a table without one, its first unique key's (the gem's index tables). */
  readonly key: readonly TableColumn[];
}

const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint']);
const TIME_TYPES = new Set(['datetime', 'timestamp', 'date', 'time']);

/** Whether a column holds integers: its key values are bound as bigints, exact past 2^53. */
export function isIntegerColumn(column: TableColumn): boolean {
  return INTEGER_TYPES.has(column.type);
}

/** The shapes of the given tables that exist in the session's database, by name. */
export async function readTableShapes(
  session: SqlSession,
  tables: readonly string[],
): Promise<Map<string, TableShape>> {
  const shapes = new Map<string, TableShape>();
  if (tables.length === 0) return shapes;
  const [columns, keys] = (await runTogether(session, [
    statement(
      `SELECT TABLE_NAME AS \`table\`, COLUMN_NAME AS \`column\`, DATA_TYPE AS \`type\`
         FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)
        ORDER BY TABLE_NAME, ORDINAL_POSITION`,
      [tables],
    ),
    statement(
      `SELECT TABLE_NAME AS \`table\`, INDEX_NAME AS \`index\`, COLUMN_NAME AS \`column\`
         FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) AND NON_UNIQUE = 0
        ORDER BY TABLE_NAME, INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`,
      [tables],
    ),
  ])) as Row[][];
  const columnsOf = new Map<string, TableColumn[]>();
  for (const row of columns ?? []) {
    const table = String(row.table);
    let list = columnsOf.get(table);
    if (!list) columnsOf.set(table, (list = []));
    list.push({ name: String(row.column), type: String(row.type).toLowerCase() });
  }
  const keyOf = new Map<string, { index: string; columns: string[] }>();
  for (const row of keys ?? []) {
    const table = String(row.table);
    const index = String(row.index);
    const key = keyOf.get(table);
    if (!key) keyOf.set(table, { index, columns: [String(row.column)] });
    else if (key.index === index) key.columns.push(String(row.column));
  }
  for (const [table, list] of columnsOf) {
    const key = keyOf.get(table);
    const byName = new Map(list.map((column) => [column.name, column]));
    shapes.set(table, {
      name: table,
      columns: list,
      key: key ? key.columns.map((name) => byName.get(name)!) : [],
    });
  }
  return shapes;
}

/** The DDL that creates a table exactly as it is, made idempotent. */
export async function createTableLikeSql(session: SqlSession, table: string): Promise<string> {
  const rows = await session.query<Row[]>(`SHOW CREATE TABLE \`${table}\``);
  const ddl = String(rows[0]?.['Create Table']);
  return ddl.replace(/^CREATE TABLE /, 'CREATE TABLE IF NOT EXISTS ');
}

export function dropTableSql(table: string): string {
  return `DROP TABLE IF EXISTS \`${table}\``;
}

export function renameTableSql(table: string, to: string): string {
  // RENAME TABLE is refused under LOCK TABLES; ALTER … RENAME is allowed, and a statement
  // waiting for the lock then fails at once with ER_NO_SUCH_TABLE: the fence.
  return `ALTER TABLE \`${table}\` RENAME TO \`${to}\``;
}

/** Renames tables, all or none (not under LOCK TABLES): `[from, to]` pairs. */
export function renameTablesSql(pairs: readonly (readonly [string, string])[]): string {
  return `RENAME TABLE ${pairs.map(([from, to]) => `\`${from}\` TO \`${to}\``).join(', ')}`;
}

export function lockTablesSql(tables: readonly string[]): string {
  return `LOCK TABLES ${tables.map((table) => `\`${table}\` WRITE`).join(', ')}`;
}

export const UNLOCK_TABLES = 'UNLOCK TABLES';

/**
 * The database's clock as the statement runs (SYSDATE, not NOW: NOW is fixed when the statement
 * starts), in seconds: sent just before LOCK TABLES and just after UNLOCK TABLES in their round
 * trips, it times how long the shard's writes were held where they were held, whatever delays
 * the mover's own process has in hearing the answers.
 */
export const DATABASE_CLOCK = 'SELECT UNIX_TIMESTAMP(SYSDATE(6)) AS `at`';

export function databaseClockOf(rows: readonly Row[]): number {
  return Number(rows[0]?.at);
}

/** How long LOCK TABLES may wait for transactions in flight on the tables, in seconds. */
export function lockWaitSql(seconds: number): string {
  return `SET SESSION lock_wait_timeout = ${Math.max(1, Math.round(seconds))}`;
}

// ---- change capture (source partition) ----

/** The two triggers of a table, named for it by hash: a table name may take all 64 characters. */
export function triggerNames(table: string): { insert: string; delete: string } {
  const hash = createHash('sha1').update(table).digest('hex').slice(0, 24);
  return { insert: `shameless_mv_${hash}_i`, delete: `shameless_mv_${hash}_d` };
}

/** Each key column as text, so that integers past 2^53 survive the JSON. */
function keyJson(shape: TableShape, row: 'NEW' | 'OLD'): string {
  return `JSON_ARRAY(${shape.key.map((column) => `CAST(${row}.\`${column.name}\` AS CHAR)`).join(', ')})`;
}

export function createChangeTriggersSql(shape: TableShape, changesTable: string): string[] {
  const names = triggerNames(shape.name);
  const quotedName = shape.name.replace(/'/g, "''");
  return [
    `CREATE TRIGGER IF NOT EXISTS \`${names.insert}\` AFTER INSERT ON \`${shape.name}\` FOR EACH ROW
INSERT INTO \`${changesTable}\` (\`table_name\`, \`key_json\`) VALUES ('${quotedName}', ${keyJson(shape, 'NEW')})`,
    `CREATE TRIGGER IF NOT EXISTS \`${names.delete}\` AFTER DELETE ON \`${shape.name}\` FOR EACH ROW
INSERT INTO \`${changesTable}\` (\`table_name\`, \`key_json\`) VALUES ('${quotedName}', ${keyJson(shape, 'OLD')})`,
  ];
}

/**
 * Of the tables' triggers' names, those attached to another table (a source frozen by an
 * earlier move): CREATE TRIGGER IF NOT EXISTS would keep them and capture nothing.
 */
export async function misplacedTriggers(
  session: SqlSession,
  tables: readonly string[],
): Promise<string[]> {
  const wanted = new Map<string, string>();
  for (const table of tables) {
    const names = triggerNames(table);
    wanted.set(names.insert, table);
    wanted.set(names.delete, table);
  }
  if (wanted.size === 0) return [];
  const rows = await session.query<Row[]>(
    `SELECT TRIGGER_NAME AS \`name\`, EVENT_OBJECT_TABLE AS \`table\` FROM information_schema.TRIGGERS
      WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME IN (?)`,
    [[...wanted.keys()]],
  );
  return rows
    .filter((row) => wanted.get(String(row.name)) !== String(row.table))
    .map((row) => String(row.name));
}

export function dropTriggerSql(name: string): string {
  return `DROP TRIGGER IF EXISTS \`${name}\``;
}

export function dropChangeTriggersSql(table: string): string[] {
  const names = triggerNames(table);
  return [
    `DROP TRIGGER IF EXISTS \`${names.insert}\``,
    `DROP TRIGGER IF EXISTS \`${names.delete}\``,
  ];
}

export interface CapturedChange {
  readonly id: string;
  readonly table: string;
  /** The key's values as text, in key order (null for a NULL). */
  readonly key: readonly (string | null)[];
}

/** The oldest captured changes of the tables given. */
export function readChanges(changesTable: string, tables: readonly string[], limit: number) {
  return statement(
    `SELECT \`id\`, \`table_name\`, \`key_json\` FROM \`${changesTable}\` WHERE \`table_name\` IN (?) ORDER BY \`id\` LIMIT ?`,
    [tables, limit],
  );
}

export function toCapturedChange(row: Row): CapturedChange {
  return {
    id: String(row.id),
    table: String(row.table_name),
    key: JSON.parse(String(row.key_json)) as (string | null)[],
  };
}

/**
 * Deletes the changes applied, by id: ids are not committed in order (auto-increment), so a
 * cursor could pass a change a slower transaction commits later; what is not deleted is read
 * again.
 */
export function deleteChanges(changesTable: string, ids: readonly string[]): Statement {
  return statement(`DELETE FROM \`${changesTable}\` WHERE \`id\` IN (?)`, [ids]);
}

export function deleteChangesOf(changesTable: string, tables: readonly string[]): Statement {
  return statement(`DELETE FROM \`${changesTable}\` WHERE \`table_name\` IN (?)`, [tables]);
}

/** The keys of a table's changes waiting to be applied (at most `limit`). */
export function pendingChangeKeys(changesTable: string, table: string, limit: number): Statement {
  return statement(
    `SELECT \`key_json\` FROM \`${changesTable}\` WHERE \`table_name\` = ? LIMIT ?`,
    [table, limit],
  );
}

/** How many changes of the tables wait to be applied. */
export function countChanges(changesTable: string, tables: readonly string[]): Statement {
  return statement(
    `SELECT COUNT(*) AS \`n\` FROM \`${changesTable}\` WHERE \`table_name\` IN (?)`,
    [tables],
  );
}

// ---- rows by key ----

/** A key's values as bound: integers as bigints (exact), the rest as given. */
export type KeyValues = readonly SqlValue[];

/** The text of a key, as stored in cursors and changes, bound with its columns' types. */
export function bindKey(shape: TableShape, key: readonly (string | null)[]): SqlValue[] {
  return shape.key.map((column, i) => {
    const value = key[i];
    if (value === null || value === undefined) return null;
    return isIntegerColumn(column) ? BigInt(value) : value;
  });
}

/** A row's key as text, for cursors and comparisons. */
export function keyText(shape: TableShape, row: Row): (string | null)[] {
  return shape.key.map((column) => {
    const value = row[column.name];
    return value === null || value === undefined ? null : String(value);
  });
}

/**
 * Every column as copied: times as text, so that DATETIME(6) keeps its microseconds (a driver's
 * Date has milliseconds) and no time zone is applied on the way; the rest as the driver reads
 * them (bodies as Buffers, integers past 2^53 as strings).
 */
function selectColumns(shape: TableShape, qualified = false): string {
  const of = qualified ? `\`${shape.name}\`.` : '';
  return shape.columns
    .map((column) =>
      TIME_TYPES.has(column.type)
        ? `CAST(${of}\`${column.name}\` AS CHAR) AS \`${column.name}\``
        : `${of}\`${column.name}\``,
    )
    .join(', ');
}

const keyColumns = (shape: TableShape) => shape.key.map((column) => `\`${column.name}\``);

/** `key > after` spelled out column by column, which every MySQL version can range-scan. */
function keyAfter(shape: TableShape, after: KeyValues, orEqual = false): Statement {
  const names = keyColumns(shape);
  const parts = names.map((name, i) => {
    const equal = names.slice(0, i).map((previous) => `${previous} = ?`);
    const last = i === names.length - 1 && orEqual ? '>=' : '>';
    return `(${[...equal, `${name} ${last} ?`].join(' AND ')})`;
  });
  const values: SqlValue[] = [];
  names.forEach((_, i) => values.push(...after.slice(0, i + 1)));
  return statement(`(${parts.join(' OR ')})`, values);
}

/** `key <= upTo`, spelled out. */
function keyAtMost(shape: TableShape, upTo: KeyValues): Statement {
  const names = keyColumns(shape);
  const parts = names.map((name, i) => {
    const equal = names.slice(0, i).map((previous) => `${previous} = ?`);
    const last = i === names.length - 1 ? '<=' : '<';
    return `(${[...equal, `${name} ${last} ?`].join(' AND ')})`;
  });
  const values: SqlValue[] = [];
  names.forEach((_, i) => values.push(...upTo.slice(0, i + 1)));
  return statement(`(${parts.join(' OR ')})`, values);
}

/** A key range (after, upTo], either end open when left out. */
export interface KeyRange {
  readonly after?: KeyValues;
  readonly upTo?: KeyValues;
}

function whereRange(shape: TableShape, range: KeyRange): Statement {
  const conditions: Statement[] = [];
  if (range.after) conditions.push(keyAfter(shape, range.after));
  if (range.upTo) conditions.push(keyAtMost(shape, range.upTo));
  if (conditions.length === 0) return statement('');
  return statement(
    ` WHERE ${conditions.map(({ sql }) => sql).join(' AND ')}`,
    conditions.flatMap(({ values }) => values),
  );
}

const orderByKey = (shape: TableShape) => keyColumns(shape).join(', ');

/** The next rows after `after` in key order, every column, at most `limit`. */
export function readRows(shape: TableShape, range: KeyRange, limit: number): Statement {
  const where = whereRange(shape, range);
  return statement(
    `SELECT ${selectColumns(shape)} FROM \`${shape.name}\`${where.sql} ORDER BY ${orderByKey(shape)} LIMIT ?`,
    [...where.values, limit],
  );
}

/**
 * The rows of the keys the table's captured changes name (its first `limit` changes), every
 * column, in the round trip that reads the changes: each change's key looked up in the table
 * (STRAIGHT_JOIN from the changes, one key lookup each), integer key columns as exact
 * decimals. A key matches as the trigger wrote it (the text compares binary): every row
 * written since the capture began has a change of its own key. No alias for the table, which
 * LOCK TABLES would refuse.
 */
export function readChangedRows(shape: TableShape, changesTable: string, limit: number): Statement {
  const on = shape.key.map((column, i) => {
    const value = `JSON_VALUE(\`changed\`.\`key_json\`, '$[${i}]')`;
    const exact = isIntegerColumn(column) ? `CAST(${value} AS DECIMAL(20,0))` : value;
    return `\`${shape.name}\`.\`${column.name}\` = ${exact}`;
  });
  return statement(
    `SELECT STRAIGHT_JOIN ${selectColumns(shape, true)}
      FROM (SELECT DISTINCT \`key_json\` FROM (SELECT \`key_json\` FROM \`${changesTable}\`
        WHERE \`table_name\` = ? ORDER BY \`id\` LIMIT ?) AS \`recent\`) AS \`changed\`
      JOIN \`${shape.name}\` ON ${on.join(' AND ')}`,
    [shape.name, limit],
  );
}

/** The rows with these keys, every column. */
export function readRowsByKeys(shape: TableShape, keys: readonly KeyValues[]): Statement {
  return statement(
    `SELECT ${selectColumns(shape)} FROM \`${shape.name}\` WHERE (${keyColumns(shape).join(', ')}) IN (?)`,
    [keys.map((key) => [...key])],
  );
}

export function deleteRowsByKeys(shape: TableShape, keys: readonly KeyValues[]): Statement {
  return statement(`DELETE FROM \`${shape.name}\` WHERE (${keyColumns(shape).join(', ')}) IN (?)`, [
    keys.map((key) => [...key]),
  ]);
}

/** Rows as read by readRows, written with their keys (ids included) as they were. */
export function insertRows(
  shape: TableShape,
  rows: readonly Row[],
  mode: 'insert' | 'ignore' | 'replace' = 'insert',
): Statement {
  const names = shape.columns.map((column) => `\`${column.name}\``).join(', ');
  const integers = shape.columns.map(isIntegerColumn);
  const tuples = rows.map((row) =>
    shape.columns.map((column, i) => {
      const value = row[column.name] as SqlValue;
      // mysql2 reads integers past 2^53 as strings: bound as bigints they stay exact.
      return integers[i] && typeof value === 'string' ? BigInt(value) : value;
    }),
  );
  return statement(
    `${{ insert: 'INSERT', ignore: 'INSERT IGNORE', replace: 'REPLACE' }[mode]} INTO \`${shape.name}\` (${names}) VALUES ?`,
    [tuples],
  );
}

/** The table's highest value of its (integer, single-column) key; 0 when empty. */
export function maxKey(shape: TableShape): Statement {
  return statement(
    `SELECT COALESCE(MAX(\`${shape.key[0]!.name}\`), 0) AS \`max\` FROM \`${shape.name}\``,
  );
}

// ---- checksums ----

/**
 * One row's fingerprint: CRC32 of every column's bytes, with which of them are NULL. Each
 * column is cast to bytes, so that columns of different collations (a gem table's) mix.
 */
function rowCrc(shape: TableShape): string {
  const columns = shape.columns.map((column) => `CAST(\`${column.name}\` AS BINARY)`);
  const nulls = shape.columns.map((column) => `ISNULL(\`${column.name}\`)`);
  return `CRC32(CONCAT_WS(0x1f, ${columns.join(', ')}, CONCAT(${nulls.join(', ')})))`;
}

/** Count and checksums (XOR and sum of the rows' CRC32s) of the rows in the range. */
export function rangeChecksum(shape: TableShape, range: KeyRange): Statement {
  const where = whereRange(shape, range);
  const crc = rowCrc(shape);
  return statement(
    `SELECT COUNT(*) AS \`n\`, COALESCE(BIT_XOR(${crc}), 0) AS \`x\`, COALESCE(SUM(${crc}), 0) AS \`s\` FROM \`${shape.name}\`${where.sql}`,
    where.values,
  );
}

/** The key of the `count`th row of the range (a chunk's last key), if there are that many. */
export function chunkEnd(shape: TableShape, range: KeyRange, count: number): Statement {
  const where = whereRange(shape, range);
  return statement(
    `SELECT ${keyColumns(shape).join(', ')} FROM \`${shape.name}\`${where.sql} ORDER BY ${orderByKey(shape)} LIMIT 1 OFFSET ?`,
    [...where.values, count - 1],
  );
}

/** Each row's key and fingerprint in the range, in key order: to find where two tables differ. */
export function rowFingerprints(shape: TableShape, range: KeyRange): Statement {
  const where = whereRange(shape, range);
  return statement(
    `SELECT ${keyColumns(shape).join(', ')}, ${rowCrc(shape)} AS \`crc\` FROM \`${shape.name}\`${where.sql} ORDER BY ${orderByKey(shape)}`,
    where.values,
  );
}

// ---- consumer-group rows of a shard ----

/** The group rows of one shard, every column as readRows reads it: they move with it. */
export function readGroupRows(shape: TableShape, shard: number): Statement {
  return statement(`SELECT ${selectColumns(shape)} FROM \`${shape.name}\` WHERE \`shard\` = ?`, [
    shard,
  ]);
}

/**
 * On the source at cut-over: the shard's cursors fenced (epoch + 1, owner none), so that a
 * member still holding the shard there fails its next commit and the shard is leased anew.
 */
export function fenceGroupShards(table: string, shard: number): Statement {
  return statement(
    `UPDATE \`${table}\` SET \`epoch\` = \`epoch\` + 1, \`owner\` = NULL, \`updated_at\` = NOW(6) WHERE \`shard\` = ?`,
    [shard],
  );
}

/** Whether each of the tables exists in the session's database. */
export async function existingTables(
  session: SqlSession,
  tables: readonly string[],
): Promise<Set<string>> {
  if (tables.length === 0) return new Set();
  const rows = await session.query<Row[]>(
    `SELECT TABLE_NAME AS \`name\` FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)`,
    [tables],
  );
  return new Set(rows.map((row) => String(row.name)));
}
