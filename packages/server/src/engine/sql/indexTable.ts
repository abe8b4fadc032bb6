// All SQL that touches index tables (`<ns>_<model>_<index>_index_<NNNNNN>`). Field names were
// validated as identifiers when the model was defined; values are always placeholders.
import type { IndexSpec } from '../model.js';
import type { Row, SqlSession, SqlValue } from '../mysqlPool.js';

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
  session: SqlSession,
  table: string,
  index: IndexSpec,
  values: readonly IndexScalar[],
): Promise<string | undefined> {
  const rows = await session.query<Row[]>(
    `SELECT \`uuid\` FROM \`${table}\` WHERE ${equalsAll(index)} LIMIT 1`,
    values as SqlValue[],
  );
  return rows[0] ? String(rows[0].uuid) : undefined;
}

function insertSql(table: string, index: IndexSpec, ignore: boolean): string {
  const columns = [...index.fields.map((field) => field.name), 'uuid'];
  return `INSERT ${ignore ? 'IGNORE ' : ''}INTO \`${table}\` (${columns.map((c) => `\`${c}\``).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
}

/** Inserts a primary-index row; a duplicate-key error means another record owns the values. */
export async function insertPrimaryRow(
  session: SqlSession,
  table: string,
  index: IndexSpec,
  values: readonly IndexScalar[],
  uuid: string,
): Promise<void> {
  await session.query(insertSql(table, index, false), [...values, uuid] as SqlValue[]);
}

/** Inserts a secondary-index row unless this record already has it (idempotent repair). */
export async function insertSecondaryRow(
  session: SqlSession,
  table: string,
  index: IndexSpec,
  values: readonly IndexScalar[],
  uuid: string,
): Promise<void> {
  await session.query(insertSql(table, index, true), [...values, uuid] as SqlValue[]);
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
  session: SqlSession,
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
  return session.query<Row[]>(
    `SELECT ${keyColumns.map((c) => `\`${c}\``).join(', ')} FROM \`${table}\`${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`,
    values,
  );
}
