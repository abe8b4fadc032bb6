// All SQL that touches index tables (`<ns>_<model>_<index>_index_<NNNNNN>`). Field names were
// validated as identifiers when the model was defined; values are always placeholders.
import type { IndexSpec } from '../model.js';
import type { Row, SqlValue } from '../mysqlPool.js';
import { type Statement, type StatementReader, statement } from './statement.js';

export type IndexScalar = number | bigint | string;

const COLUMN_TYPES = { integer: 'BIGINT NOT NULL', string: 'VARCHAR(255) NOT NULL' } as const;

/**
 * The primary index is keyed (and clustered) on its fields: one tuple, one record. Secondary
 * indices add the uuid to the key, so records may share values (the gem's tables do not allow
 * that) while one record still has one row per index.
 */
export function createIndexTableSql(table: string, index: IndexSpec, primary: boolean): string {
  const columns = index.fields.map((field) => `  \`${field.name}\` ${COLUMN_TYPES[field.type]},`);
  const key = [...index.fields.map((field) => field.name), ...(primary ? [] : ['uuid'])]
    .map((name) => `\`${name}\``)
    .join(', ');
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
${columns.join('\n')}
  \`uuid\` VARCHAR(36) NOT NULL,
  PRIMARY KEY (${key})
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

function equalsAll(index: IndexSpec): string {
  return index.fields.map((field) => `\`${field.name}\` = ?`).join(' AND ');
}

/** The uuid the primary index maps these values to, if any. */
export async function lookupPrimary(
  reader: StatementReader,
  table: string,
  index: IndexSpec,
  values: readonly IndexScalar[],
): Promise<string | undefined> {
  const [rows] = (await reader.read([
    statement(
      `SELECT \`uuid\` FROM \`${table}\` WHERE ${equalsAll(index)} LIMIT 1`,
      values as SqlValue[],
    ),
  ])) as Row[][];
  return rows?.[0] ? String(rows[0].uuid) : undefined;
}

/** A record's row in one index: the index's values, in field order, and the record's uuid. */
export interface IndexRow {
  readonly values: readonly IndexScalar[];
  readonly uuid: string;
}

const columnList = (names: readonly string[]) => names.map((name) => `\`${name}\``).join(', ');
const fieldNames = (index: IndexSpec) => index.fields.map((field) => field.name);

/**
 * Inserts rows, skipping any whose key is already taken (INSERT IGNORE): a create's rows, in
 * the transaction that creates the record. Which rows went in is then read with
 * {@link primaryOwners} or {@link indexRowsPresent}. Callers pass rows in key order, so that
 * transactions inserting the same keys lock them in the same order.
 */
export function insertIndexRows(
  table: string,
  index: IndexSpec,
  rows: readonly IndexRow[],
): Statement {
  return statement(
    `INSERT IGNORE INTO \`${table}\` (${columnList([...fieldNames(index), 'uuid'])}) VALUES ?`,
    [rows.map((row) => [...row.values, row.uuid] as SqlValue[])],
  );
}

/**
 * The record each of these tuples of primary values belongs to: rows (fields..., uuid). A
 * locking read, so that it sees a row another transaction committed while this one waited on
 * it, whatever this transaction's snapshot.
 */
export function primaryOwners(
  table: string,
  index: IndexSpec,
  tuples: readonly (readonly IndexScalar[])[],
): Statement {
  const fields = fieldNames(index);
  return statement(
    `SELECT ${columnList([...fields, 'uuid'])} FROM \`${table}\` WHERE (${columnList(fields)}) IN (?) LOCK IN SHARE MODE`,
    [tuples.map((values) => [...values] as SqlValue[])],
  );
}

/**
 * Which of these rows the index holds: rows (uuid). A secondary index the Ruby gem created is
 * unique on its fields, so a row of another record with the same values keeps ours out. A
 * locking read, as primaryOwners.
 */
export function indexRowsPresent(
  table: string,
  index: IndexSpec,
  rows: readonly IndexRow[],
): Statement {
  const key = [...fieldNames(index), 'uuid'];
  return statement(
    `SELECT \`uuid\` FROM \`${table}\` WHERE (${columnList(key)}) IN (?) LOCK IN SHARE MODE`,
    [rows.map((row) => [...row.values, row.uuid] as SqlValue[])],
  );
}

/** Deletes exactly these rows (values and uuid), e.g. those of a create that was refused. */
export function deleteIndexRows(
  table: string,
  index: IndexSpec,
  rows: readonly IndexRow[],
): Statement {
  const key = [...fieldNames(index), 'uuid'];
  return statement(`DELETE FROM \`${table}\` WHERE (${columnList(key)}) IN (?)`, [
    rows.map((row) => [...row.values, row.uuid] as SqlValue[]),
  ]);
}

export type Operator = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge' | 'in' | 'between';

export interface IndexCondition {
  field: string;
  op: Operator;
  values: readonly IndexScalar[];
}

const COMPARISON: Record<Exclude<Operator, 'in' | 'between'>, string> = {
  eq: '=',
  ne: '<>',
  lt: '<',
  le: '<=',
  gt: '>',
  ge: '>=',
};

export interface IndexQuery {
  conditions: readonly IndexCondition[];
  descending: boolean;
  limit: number;
  /** Resume strictly after this key (the index's field values, then the uuid). */
  after?: readonly IndexScalar[];
}

/**
 * Matching rows ordered by the index's fields then uuid: a total order, so pages resume with a
 * keyset condition rather than an offset.
 */
export async function queryIndex(
  reader: StatementReader,
  table: string,
  index: IndexSpec,
  query: IndexQuery,
): Promise<Row[]> {
  const where: string[] = [];
  const values: SqlValue[] = [];
  for (const condition of query.conditions) {
    const column = `\`${condition.field}\``;
    if (condition.op === 'in') {
      where.push(`${column} IN (${condition.values.map(() => '?').join(', ')})`);
    } else if (condition.op === 'between') {
      where.push(`${column} BETWEEN ? AND ?`);
    } else {
      where.push(`${column} ${COMPARISON[condition.op]} ?`);
    }
    values.push(...(condition.values as SqlValue[]));
  }
  const keyColumns = [...index.fields.map((field) => field.name), 'uuid'];
  if (query.after) {
    // (k1, k2, ...) > (a1, a2, ...) spelled out, which every MySQL version can range-scan.
    const direction = query.descending ? '<' : '>';
    const alternatives = keyColumns.map((column, i) => {
      const equal = keyColumns.slice(0, i).map((previous) => `\`${previous}\` = ?`);
      return `(${[...equal, `\`${column}\` ${direction} ?`].join(' AND ')})`;
    });
    where.push(`(${alternatives.join(' OR ')})`);
    keyColumns.forEach((_, i) => values.push(...(query.after!.slice(0, i + 1) as SqlValue[])));
  }
  const order = keyColumns
    .map((column) => `\`${column}\` ${query.descending ? 'DESC' : 'ASC'}`)
    .join(', ');
  values.push(query.limit);
  const [rows = []] = (await reader.read([
    statement(
      `SELECT ${keyColumns.map((c) => `\`${c}\``).join(', ')} FROM \`${table}\`${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`,
      values,
    ),
  ])) as Row[][];
  return rows;
}
