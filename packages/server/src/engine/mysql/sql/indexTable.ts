// All SQL that touches index tables (`<ns>_<model>_<index>_index_<NNNNNN>`). Field names were
// validated as identifiers when the model was defined; values are always placeholders.
import type { IndexScalar, IndexSpec } from '../../model/model.js';
import type { Row, SqlValue } from '../mysqlPool.js';
import { type Statement, type StatementReader, statement, unionAll } from './statement.js';

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

/** Every field of the index equal to a value (of a table aliased `alias`, if given). */
export function equalsAll(index: IndexSpec, alias = ''): string {
  return index.fields.map((field) => `${alias}\`${field.name}\` = ?`).join(' AND ');
}

/** A tuple of primary values to look up in one table. */
export interface PrimaryLookup {
  readonly table: string;
  readonly index: IndexSpec;
  readonly values: readonly IndexScalar[];
}

/**
 * The uuid each tuple of primary values maps to, for many tuples of any tables of a partition
 * in one statement: rows (`part`, the tuple's position; uuid), none for a tuple no record holds.
 */
export function primaryLookups(lookups: readonly PrimaryLookup[]): Statement {
  return unionAll(
    lookups.map(({ table, index, values }, part) =>
      statement(
        `SELECT ? AS \`part\`, \`uuid\` FROM \`${table}\` WHERE ${equalsAll(index)} LIMIT 1`,
        [part, ...(values as SqlValue[])],
      ),
    ),
  );
}

/** A primary-index row that must lead to `uuid`: the row a put's update found its record through. */
export interface PrimaryRowCheck {
  readonly lookup: PrimaryLookup;
  readonly uuid: string;
}

/**
 * A tuple of primary values of a table as one string: the key of lookups, of the primary-key
 * cache, and of a row checked twice.
 */
export const primaryKeyOf = ({ table, values }: Pick<PrimaryLookup, 'table' | 'values'>) =>
  `${table}/${JSON.stringify(values.map(String))}`;

/**
 * A condition (an SQL expression with its values, to place inside another statement): every
 * row checked exists and leads to its uuid. One COUNT per table over a row-constructor IN list,
 * rather than an EXISTS per row: each subquery costs MariaDB about as much as the row it reads
 * (eight checked appends in one round trip: 113 µs of MariaDB's CPU an append with one
 * subquery, 151 with one each, 76 with none). Summed, not a UNION ALL, which would make MariaDB
 * a temporary table. Inside an INSERT … SELECT they share-lock the rows they read until the
 * transaction ends, as the EXISTS did.
 */
export function primaryRowsLeadTo(checks: readonly PrimaryRowCheck[]): Statement {
  const byTable = new Map<string, { index: IndexSpec; tuples: Map<string, SqlValue[]> }>();
  for (const { lookup, uuid } of checks) {
    let table = byTable.get(lookup.table);
    if (!table) byTable.set(lookup.table, (table = { index: lookup.index, tuples: new Map() }));
    // A row checked twice (two puts of one record) is one row to count.
    table.tuples.set(`${primaryKeyOf(lookup)} ${uuid}`, [...(lookup.values as SqlValue[]), uuid]);
  }
  let rows = 0;
  const counts: string[] = [];
  const values: SqlValue[] = [];
  for (const [table, { index, tuples }] of byTable) {
    rows += tuples.size;
    const columns = columnList([...fieldNames(index), 'uuid']);
    counts.push(`(SELECT COUNT(*) FROM \`${table}\` WHERE (${columns}) IN (?))`);
    values.push([...tuples.values()]);
  }
  return statement(`${counts.join(' + ')} = ?`, [...values, rows]);
}

/** The uuid the primary index maps one tuple of values to, if any. */
export async function lookupPrimary(
  reader: StatementReader,
  lookup: PrimaryLookup,
): Promise<string | undefined> {
  const [rows] = (await reader.read([primaryLookups([lookup])])) as Row[][];
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
 * {@link indexRowHolders}. With `skipTaken` false, a taken key fails the statement instead
 * (a round trip that must not go on then). Callers pass rows in key order, so that
 * transactions inserting the same keys lock them in the same order.
 */
export function insertIndexRows(
  table: string,
  index: IndexSpec,
  rows: readonly IndexRow[],
  skipTaken = true,
): Statement {
  const insert = skipTaken ? 'INSERT IGNORE' : 'INSERT';
  return statement(
    `${insert} INTO \`${table}\` (${columnList([...fieldNames(index), 'uuid'])}) VALUES ?`,
    [rows.map((row) => [...row.values, row.uuid] as SqlValue[])],
  );
}

/** A row a create wrote with INSERT IGNORE, to check. */
export interface IndexRowCheck extends IndexRow {
  readonly table: string;
  readonly index: IndexSpec;
  readonly primary: boolean;
}

/**
 * Who holds each row's values after the INSERT IGNOREs, in one statement: rows (`part`, the
 * row's position; uuid). For a primary-index row, the record holding its values (this create's
 * when its row went in). For a secondary-index row, the row itself when it went in, nothing
 * when another record holds the values in a unique index (one the Ruby gem created). Locking
 * reads, so that they see rows that other transactions committed while this one waited on
 * them, whatever this transaction's snapshot.
 */
export function indexRowHolders(checks: readonly IndexRowCheck[]): Statement {
  return unionAll(
    checks.map(({ table, index, primary, values, uuid }, part) =>
      primary
        ? statement(
            `SELECT ? AS \`part\`, \`uuid\` FROM \`${table}\` WHERE ${equalsAll(index)} LIMIT 1 LOCK IN SHARE MODE`,
            [part, ...(values as SqlValue[])],
          )
        : statement(
            `SELECT ? AS \`part\`, \`uuid\` FROM \`${table}\` WHERE ${equalsAll(index)} AND \`uuid\` = ? LOCK IN SHARE MODE`,
            [part, ...(values as SqlValue[]), uuid],
          ),
    ),
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
