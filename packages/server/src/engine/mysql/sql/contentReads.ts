// Every read of content tables: single cells, the latest versions of many cells, and pages of
// a shard's log.
import { type RowId, exactInteger } from '../../base/exactInteger.js';
import type { Row, SqlValue } from '../mysqlPool.js';
import { CELL_COLUMNS, type CellKey } from './contentRows.js';
import {
  type Statement,
  type StatementReader,
  preparableStatement,
  statement,
  unionAll,
} from './statement.js';

/** The latest version of a cell, or a given version. */
export async function readCell(
  reader: StatementReader,
  table: string,
  uuid: string,
  cell: string,
  refKey?: number,
): Promise<Row | undefined> {
  const [rows] = (await reader.read([
    refKey === undefined
      ? preparableStatement(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? ORDER BY \`ref_key\` DESC LIMIT 1`,
          [uuid, cell],
        )
      : preparableStatement(
          `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? AND \`ref_key\` = ?`,
          [uuid, cell, refKey],
        ),
  ])) as Row[][];
  return rows?.[0];
}

/** A cell whose latest version is read, and whether its body is wanted (not just its ref_key). */
export interface LatestKey extends CellKey {
  readonly withBody: boolean;
}

/** What is read of one content table: the latest version of cells, and which records exist. */
export interface TableLatest {
  readonly table: string;
  readonly keys: readonly LatestKey[];
  /** Records whose existence is asked for: whether their base cell has a version. */
  readonly records?: readonly string[];
  /**
   * Bodies longer than this many bytes are not read (NULL), only their length (`body_bytes`):
   * a caller whose answer is bounded reads them afterwards by id (readBodies), once it knows
   * they fit. Every body is read when left out.
   */
  readonly maxBodyBytes?: number;
  /** The keys name distinct cells: they are read as they are, without a pass for repeats. */
  readonly distinct?: boolean;
}

/**
 * A table's cells are read with one index dive each when it has this many or fewer, and with
 * one keyed query for all of them above: MariaDB spends less on one or two dives, about the
 * same on three, and less on the keyed query from four.
 */
const DIVES_PER_TABLE = 2;

/**
 * Up to this many records of a table, each record's existence is one dive of its own: MariaDB
 * spends a little less on one dive than on the set query, and more from two.
 */
const RECORD_DIVES_PER_TABLE = 1;

const LATEST_COLUMNS = (body: string, bodyBytes: string) =>
  `'latest' AS \`what\`, \`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, ${body}, \`created_at\`, ${bodyBytes}`;
const EXISTS_COLUMNS =
  "'exists' AS `what`, NULL AS `id`, `uuid`, `column_name`, `ref_key`, NULL AS `body`, NULL AS `created_at`, NULL AS `body_bytes`";

/**
 * The body and body_bytes columns of a latest version (of a table aliased `alias`, if given),
 * and the values their placeholders take, in order.
 */
export function bodyColumns(
  withBody: boolean,
  maxBodyBytes: number | undefined,
  alias = '',
): { body: string; bodyBytes: string; values: number[] } {
  const body = `${alias}\`body\``;
  if (!withBody) return { body: 'NULL AS `body`', bodyBytes: 'NULL AS `body_bytes`', values: [] };
  const bodyBytes = `LENGTH(${body}) AS \`body_bytes\``;
  if (maxBodyBytes === undefined) return { body, bodyBytes, values: [] };
  return {
    body: `IF(LENGTH(${body}) <= ?, ${body}, NULL) AS \`body\``,
    bodyBytes,
    values: [maxBodyBytes],
  };
}

/**
 * One SELECT for the latest version of each cell of several tables of one partition, and for
 * whether records exist: rows (`part`, the table's position in `tables`; `what`, 'latest' or
 * 'exists'; id, uuid, column_name, ref_key, body, created_at, body_bytes). Body and body_bytes
 * are NULL where the body was not asked for (and created_at too, in a table read for more than
 * DIVES_PER_TABLE cells); body alone is NULL where it is longer than the table's maxBodyBytes.
 * A cell has one row however many times it is asked for, and none without a version. A record
 * exists when its base cell has a version, and versions start at 0 (at 1 in stores of the
 * gem's first releases), so the set query for existence is two dives per record into the
 * (uuid, column_name, ref_key) key, however many versions the base cell has.
 */
export function latestVersionsOf(tables: readonly TableLatest[]): Statement {
  const branches: Statement[] = [];
  tables.forEach(({ table, keys: asked, records = [], maxBodyBytes, distinct }, part) => {
    const keys = distinct ? asked : distinctKeys(asked);
    if (keys.length <= DIVES_PER_TABLE) {
      for (const key of keys) {
        const { body, bodyBytes, values } = bodyColumns(key.withBody, maxBodyBytes);
        branches.push(
          preparableStatement(
            `SELECT ? AS \`part\`, ${LATEST_COLUMNS(body, bodyBytes)}
               FROM \`${table}\` WHERE \`uuid\` = ? AND \`column_name\` = ? ORDER BY \`ref_key\` DESC LIMIT 1`,
            [part, ...values, key.uuid, key.cell],
          ),
        );
      }
    } else {
      for (const withBody of [true, false]) {
        const some = keys.filter((key) => key.withBody === withBody);
        if (some.length > 0) branches.push(latestOfMany(table, part, some, withBody, maxBodyBytes));
      }
    }
    if (records.length === 0) return;
    if (records.length <= RECORD_DIVES_PER_TABLE) {
      for (const uuid of records) {
        branches.push(
          preparableStatement(
            `SELECT ? AS \`part\`, ${EXISTS_COLUMNS} FROM \`${table}\`
              WHERE \`uuid\` = ? AND \`column_name\` = 'base' LIMIT 1`,
            [part, uuid],
          ),
        );
      }
      return;
    }
    // The same ranges as a row-constructor IN list of (uuid, 'base', 0 or 1), which MariaDB
    // plans for about twice as long (31 records: 700 µs of its CPU against 400).
    branches.push(
      statement(
        `SELECT ? AS \`part\`, ${EXISTS_COLUMNS} FROM \`${table}\`
          WHERE \`uuid\` IN (?) AND \`column_name\` = 'base' AND \`ref_key\` IN (0, 1)`,
        [part, records],
      ),
    );
  });
  return unionAll(branches);
}

/** Each cell once, with its body if any of its keys wants it. */
function distinctKeys(keys: readonly LatestKey[]): readonly LatestKey[] {
  if (keys.length < 2) return keys;
  const byCell = new Map<string, LatestKey>();
  for (const key of keys) {
    const id = `${key.uuid}/${key.cell}`;
    const seen = byCell.get(id);
    if (!seen || (key.withBody && !seen.withBody)) byCell.set(id, key);
  }
  return byCell.size === keys.length ? keys : [...byCell.values()];
}

/**
 * The latest version of many cells of one table, which all want their body or none does. The
 * cells are a derived table of constants, each joined to its row through its latest ref_key,
 * which a correlated subquery finds with one backward dive into the (uuid, column_name,
 * ref_key) key: one index entry read per cell, however many versions it has. (A GROUP BY of
 * MAX(ref_key) reads every version: MariaDB does not use a loose index scan under an IN list.)
 * Without bodies only that key is read, never the rows, so id and ref_key come back but not
 * created_at. The constants are ASCII literals (`_ascii`: uuids and cell names are validated
 * to be ASCII), which a column of any character set takes without loss: they compare in the
 * column's collation, on its index, as a literal would. (MySQL refuses to compare a utf8mb4
 * column of a derived table with a latin1 one, as in a table the gem made: "Illegal mix of
 * collations".)
 */
function latestOfMany(
  table: string,
  part: number,
  keys: readonly LatestKey[],
  withBody: boolean,
  maxBodyBytes: number | undefined,
): Statement {
  const { body, bodyBytes, values } = bodyColumns(withBody, maxBodyBytes, 'c.');
  const createdAt = withBody ? 'c.`created_at`' : 'NULL AS `created_at`';
  const cells = keys
    .map((_, k) =>
      k === 0
        ? 'SELECT _ascii ? AS `uuid`, _ascii ? AS `column_name`'
        : 'SELECT _ascii ?, _ascii ?',
    )
    .join(' UNION ALL ');
  return statement(
    `SELECT ? AS \`part\`, 'latest' AS \`what\`, c.\`id\`, c.\`uuid\`, c.\`column_name\`, c.\`ref_key\`, ${body}, ${createdAt}, ${bodyBytes}
       FROM (${cells}) cells JOIN \`${table}\` c
         ON c.\`uuid\` = cells.\`uuid\` AND c.\`column_name\` = cells.\`column_name\`
        AND c.\`ref_key\` = (SELECT v.\`ref_key\` FROM \`${table}\` v
              WHERE v.\`uuid\` = cells.\`uuid\` AND v.\`column_name\` = cells.\`column_name\`
              ORDER BY v.\`ref_key\` DESC LIMIT 1)`,
    cellValues([part, ...values], keys),
  );
}

/** `values` followed by each key's uuid and cell name: a loop, not a flatMap of pairs. */
function cellValues(values: SqlValue[], keys: readonly LatestKey[]): SqlValue[] {
  for (const key of keys) values.push(key.uuid, key.cell);
  return values;
}

/**
 * The latest version of each cell of several tables of one partition, in one statement (see
 * latestVersionsOf): the rows of each table, in order.
 */
export async function readLatestCells(
  reader: StatementReader,
  tables: readonly TableLatest[],
): Promise<Row[][]> {
  if (tables.length === 0) return [];
  const [rows = []] = (await reader.read([latestVersionsOf(tables)])) as Row[][];
  const byTable = tables.map((): Row[] => []);
  for (const row of rows) byTable[Number(row.part)]!.push(row);
  return byTable;
}

/** Rows of content tables of one partition whose bodies are wanted, by id. */
export interface TableIds {
  readonly table: string;
  readonly ids: readonly RowId[];
}

/**
 * The bodies of rows given by id (rows never change once written), in one statement: one map
 * per table, in order, from the id (as a string) to the body.
 */
export async function readBodies(
  reader: StatementReader,
  tables: readonly TableIds[],
): Promise<Map<string, Buffer>[]> {
  const byTable = tables.map(() => new Map<string, Buffer>());
  if (tables.length === 0) return byTable;
  const [rows = []] = (await reader.read([
    unionAll(
      tables.map(({ table, ids }, part) =>
        statement(`SELECT ? AS \`part\`, \`id\`, \`body\` FROM \`${table}\` WHERE \`id\` IN (?)`, [
          part,
          ids,
        ]),
      ),
    ),
  ])) as Row[][];
  for (const row of rows) {
    const body = row.body instanceof Buffer ? row.body : Buffer.alloc(0);
    byTable[Number(row.part)]!.set(String(row.id), body);
  }
  return byTable;
}

/** Where to read a page of one table's log. */
export interface LogPageRead {
  table: string;
  cursor: RowId;
  limit: number;
  /** Bodies longer than this are not read (NULL), only their length (`body_bytes`). */
  maxBodyBytes?: number;
}

/** A page of the shard's log: rows with id > cursor in id order, and the shard's max id. */
export async function readLogPage(
  reader: StatementReader,
  page: LogPageRead,
): Promise<{ rows: Row[]; maxId: RowId }> {
  const [rows, max] = (await reader.read([
    logPageStatement(page),
    statement(`SELECT COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${page.table}\``),
  ])) as Row[][];
  return { rows: rows ?? [], maxId: maxIdOf(max?.[0]) };
}

/**
 * Pages of several tables' logs of one partition in one round trip: for each, rows with
 * id > cursor in id order, at most `limit`. One row list per page, in order.
 */
export async function readLogPages(
  reader: StatementReader,
  pages: readonly LogPageRead[],
): Promise<Row[][]> {
  return (await reader.read(pages.map(logPageStatement))) as Row[][];
}

/** A log page's rows; with a body bound, longer bodies NULL and every body's length. */
function logPageStatement({ table, cursor, limit, maxBodyBytes }: LogPageRead): Statement {
  if (maxBodyBytes === undefined) {
    return statement(
      `SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?`,
      [cursor, limit],
    );
  }
  const { body, bodyBytes, values } = bodyColumns(true, maxBodyBytes);
  return statement(
    `SELECT \`id\`, \`uuid\`, \`column_name\`, \`ref_key\`, ${body}, \`created_at\`, ${bodyBytes}
       FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?`,
    [...values, cursor, limit],
  );
}

/**
 * The max id of several content tables of one partition (0 for an empty one), in one
 * statement; in the order of `tables`.
 */
export async function readMaxIds(
  reader: StatementReader,
  tables: readonly string[],
): Promise<RowId[]> {
  if (tables.length === 0) return [];
  const sql = tables
    .map((table) => `SELECT ? AS part, COALESCE(MAX(\`id\`), 0) AS max_id FROM \`${table}\``)
    .join(' UNION ALL ');
  const [rows = []] = (await reader.read([
    statement(
      sql,
      tables.map((_, part) => part),
    ),
  ])) as Row[][];
  const maxIds = new Array<RowId>(tables.length).fill(0);
  for (const row of rows) maxIds[Number(row.part)] = maxIdOf(row);
  return maxIds;
}

/** Cells of one content table given by id, whole, in id order (ids not there are left out). */
export async function readCellsById(
  reader: StatementReader,
  table: string,
  ids: readonly RowId[],
): Promise<Row[]> {
  if (ids.length === 0) return [];
  const [rows = []] = (await reader.read([
    statement(`SELECT ${CELL_COLUMNS} FROM \`${table}\` WHERE \`id\` IN (?) ORDER BY \`id\``, [
      ids,
    ]),
  ])) as Row[][];
  return rows;
}

/** How far a log runs past a cursor in one content table of a partition. */
export interface LogBacklog {
  readonly maxId: RowId;
  /** Rows with id > cursor, counted up to the cap given. */
  readonly count: number;
}

/**
 * The max id of each table and its rows past a cursor, counted up to `cap` (a count reads every
 * row it counts: the cap bounds what a look at a long backlog costs), in one statement.
 */
export async function readLogBacklogs(
  reader: StatementReader,
  logs: readonly { table: string; cursor: RowId }[],
  cap: number,
): Promise<LogBacklog[]> {
  if (logs.length === 0) return [];
  const [rows = []] = (await reader.read([
    unionAll(
      logs.map(({ table, cursor }, part) =>
        statement(
          `SELECT ? AS \`part\`, (SELECT COALESCE(MAX(\`id\`), 0) FROM \`${table}\`) AS \`max_id\`,
             (SELECT COUNT(*) FROM (SELECT 1 FROM \`${table}\` WHERE \`id\` > ? ORDER BY \`id\` LIMIT ?) AS \`behind\`) AS \`backlog\``,
          [part, cursor, cap],
        ),
      ),
    ),
  ])) as Row[][];
  const backlogs = logs.map((): LogBacklog => ({ maxId: 0, count: 0 }));
  for (const row of rows) {
    backlogs[Number(row.part)] = { maxId: maxIdOf(row), count: Number(row.backlog) };
  }
  return backlogs;
}

/** A `COALESCE(MAX(id), 0) AS max_id` column. */
function maxIdOf(row: Row | undefined): RowId {
  return exactInteger((row?.max_id ?? 0) as number | string);
}
