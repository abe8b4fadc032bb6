// What serving a store changes in its databases, decided from what already exists there
// (sql/schemaInspection.ts). Serving applies these changes (applySchemaChanges.ts) and
// `shameless plan` prints them: one source, so that the dry run is exactly what serving does.
// Pure functions; every statement comes from the SQL modules that own it.
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel, FieldType } from '../model/model.js';
import { createDatabaseSql } from '../mysql/mysqlPool.js';
import {
  CREATED_AT_COLUMN_TYPES,
  GEM_CONTENT_COLUMNS,
  addRequestIdColumnSql,
  createContentTableSql,
} from '../mysql/sql/contentDdl.js';
import type { CreatedAtKind } from '../model/layout.js';
import { createIndexTableSql } from '../mysql/sql/indexTable.js';
import type { ExistingTable } from '../mysql/sql/schemaInspection.js';
import {
  createLogLocksTableSql,
  createModelsTableSql,
  createStoreTableSql,
} from '../mysql/sql/storeTables.js';
import { PRIMARY_INDEX } from '../model/tableNames.js';

export type SchemaChangeKind =
  'database' | 'bookkeeping table' | 'content table' | 'index table' | 'request_id column';

/** One change that serving a store makes to one partition's schema, and why. */
export interface SchemaChange {
  partition: number;
  kind: SchemaChangeKind;
  /** The table created or altered (the database, for kind `database`). */
  table: string;
  sql: string;
  /** One line saying why serving needs it. */
  reason: string;
}

/** The tables of a partition that exist, by name, as inspectTables answers. */
export type ExistingTables = ReadonlyMap<string, ExistingTable>;

/** A content table whose created_at is not of the kind the store is configured to write. */
export interface CreatedAtMismatch {
  table: string;
  /** The column's DATA_TYPE, e.g. `bigint`. */
  found: string;
}

/** The database a partition's URL names, when it is missing (serve creates it). */
export function databaseChange(partition: number, database: string): SchemaChange {
  return {
    partition,
    kind: 'database',
    table: database,
    sql: createDatabaseSql(database),
    reason: `database ${database} does not exist; serve creates it`,
  };
}

/** The store's own tables, which serve creates on every partition at start. */
export function bookkeepingTables(layout: StoreLayout): string[] {
  return [layout.storeTable, layout.modelsTable, layout.logLocksTable];
}

/** The bookkeeping tables a partition lacks. */
export function bookkeepingChanges(
  layout: StoreLayout,
  partition: number,
  existing: ExistingTables,
): SchemaChange[] {
  const tables = [
    {
      table: layout.storeTable,
      sql: createStoreTableSql(layout.storeTable),
      why: 'records the shard layout, checked at every start',
    },
    {
      table: layout.modelsTable,
      sql: createModelsTableSql(layout.modelsTable),
      why: 'holds the model definitions every server reads',
    },
    {
      table: layout.logLocksTable,
      sql: createLogLocksTableSql(layout.logLocksTable),
      why: 'holds a row per content table, locked by each write so that the shard log is gap-free',
    },
  ];
  return tables
    .filter(({ table }) => !existing.has(table))
    .map(({ table, sql, why }) => ({
      partition,
      kind: 'bookkeeping table',
      table,
      sql,
      reason: `bookkeeping table ${table} does not exist; serve creates it: it ${why}`,
    }));
}

/** A model's content tables on a partition, one per shard there. */
export function contentTablesOn(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
): string[] {
  return layout.shardsOf(partition).map((shard) => layout.contentTable(model, shard));
}

/** A model's index tables on a partition, one per index and shard there. */
export function indexTablesOn(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
): string[] {
  return layout.shardsOf(partition).flatMap((shard) => indexTablesOfShard(layout, model, shard));
}

/** Every table of a model on a partition: content and index tables. */
export function modelTablesOn(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
): string[] {
  return layout
    .shardsOf(partition)
    .flatMap((shard) => [
      layout.contentTable(model, shard),
      ...indexTablesOfShard(layout, model, shard),
    ]);
}

function indexTablesOfShard(layout: StoreLayout, model: CompiledModel, shard: number): string[] {
  return [model.primaryIndex, ...model.spec.secondaryIndices].map((index) =>
    layout.indexTable(model, index.name, shard),
  );
}

/**
 * What defining a model changes on a partition: the content and index tables it lacks, then
 * the request_id column on content tables the gem created. (It also inserts the log-lock row
 * of each content table: a row, not a schema change.)
 */
export function modelChanges(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
  existing: ExistingTables,
): SchemaChange[] {
  const indices = [model.primaryIndex, ...model.spec.secondaryIndices];
  const creates: SchemaChange[] = [];
  const alters: SchemaChange[] = [];
  for (const shard of layout.shardsOf(partition)) {
    const content = layout.contentTable(model, shard);
    const table = existing.get(content);
    if (!table) {
      creates.push({
        partition,
        kind: 'content table',
        table: content,
        sql: createContentTableSql(content, layout.createdAt),
        reason: `DefineModel ${model.name}: the content table of shard ${shard} does not exist`,
      });
    } else if (!table.hasRequestId) {
      alters.push({
        partition,
        kind: 'request_id column',
        table: content,
        sql: addRequestIdColumnSql(content),
        reason:
          `DefineModel ${model.name}: ${content} has no request_id column (the gem created it); ` +
          `the column and its unique key make retried writes idempotent, the gem's inserts do not name it`,
      });
    }
    for (const index of indices) {
      const name = layout.indexTable(model, index.name, shard);
      if (existing.has(name)) continue;
      creates.push({
        partition,
        kind: 'index table',
        table: name,
        sql: createIndexTableSql(name, index, index.name === PRIMARY_INDEX),
        reason: `DefineModel ${model.name}: the table of index ${index.name}, shard ${shard}, does not exist`,
      });
    }
  }
  return [...creates, ...alters];
}

/**
 * An existing table named as one of a model's that lacks columns the store reads, or whose
 * column of an index field holds another kind of value than the field.
 */
export interface ForeignTable {
  table: string;
  missing: string[];
  /** Columns of index fields of the wrong kind, with their COLUMN_TYPE. */
  mistyped: { column: string; found: string; type: FieldType }[];
}

// The kinds of column that hold a field's values: the gem's INT and our BIGINT (any integer
// type), the gem's and our VARCHAR(255) (any character type).
const FIELD_COLUMN: Record<FieldType, RegExp> = {
  integer: /^(tiny|small|medium|big)?int\b/,
  string: /^((var)?char|(tiny|medium|long)?text)\b/,
};

/**
 * The model's existing tables that are not its tables (another application's, or of another
 * model definition, e.g. what a define of another shape left when its server died): a content
 * table without the gem's columns, an index table without uuid or one of the index's fields,
 * or with a field's column of the other kind. DefineModel would fail on their first statement,
 * or their writes later.
 */
export function foreignTables(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
  existing: ExistingTables,
): ForeignTable[] {
  const indices = [model.primaryIndex, ...model.spec.secondaryIndices];
  return layout
    .shardsOf(partition)
    .flatMap((shard) => [
      { table: layout.contentTable(model, shard), needs: GEM_CONTENT_COLUMNS, fields: [] },
      ...indices.map((index) => ({
        table: layout.indexTable(model, index.name, shard),
        needs: [...index.fields.map((field) => field.name), 'uuid'],
        fields: index.fields,
      })),
    ])
    .flatMap(({ table, needs, fields }) => {
      const found = existing.get(table);
      if (!found) return [];
      const missing = needs.filter((column) => !found.columns.has(column));
      const mistyped = fields.flatMap(({ name, type }) => {
        const columnType = found.columnTypes.get(name);
        return columnType === undefined || FIELD_COLUMN[type].test(columnType)
          ? []
          : [{ column: name, found: columnType, type }];
      });
      return missing.length > 0 || mistyped.length > 0 ? [{ table, missing, mistyped }] : [];
    });
}

/** Why a model cannot be defined over tables that are not its own, and what to do. */
export function foreignTableMessage(model: string, tables: readonly ForeignTable[]): string {
  const [first] = tables;
  if (!first) return '';
  const more = tables.length > 1 ? ` (and ${tables.length - 1} more tables)` : '';
  const [mistyped] = first.mistyped;
  const what =
    first.missing.length > 0 || !mistyped
      ? `it has no column ${first.missing.join(', ')}`
      : `its column ${mistyped.column} is ${mistyped.found}, not ${mistyped.type === 'integer' ? 'an integer' : 'a string'} column`;
  return (
    `table ${first.table} exists but is not a table of model ${model}: ${what}${more}; ` +
    `rename or drop it, or name the model otherwise`
  );
}

/** The model's existing content tables whose created_at is not of the store's kind. */
export function createdAtMismatches(
  layout: StoreLayout,
  model: CompiledModel,
  partition: number,
  existing: ExistingTables,
): CreatedAtMismatch[] {
  return contentTablesOn(layout, model, partition).flatMap((table) => {
    const found = existing.get(table)?.createdAtType;
    return found === undefined || kindOf(found) === layout.createdAt ? [] : [{ table, found }];
  });
}

function kindOf(dataType: string): CreatedAtKind | undefined {
  return dataType === 'datetime' || dataType === 'bigint' ? dataType : undefined;
}

/** How a kind is named to an operator. */
export function describeCreatedAt(kind: CreatedAtKind): string {
  return kind === 'bigint'
    ? `${CREATED_AT_COLUMN_TYPES.bigint} milliseconds (setting legacyCreatedAtIsBigint)`
    : `${CREATED_AT_COLUMN_TYPES.datetime} (the default)`;
}

/**
 * Why the store cannot write the tables: the first table, what it holds, how the store is
 * configured and the setting that fits. The setting's names are the CLI's (settings.ts).
 */
export function createdAtMismatchMessage(
  layout: StoreLayout,
  mismatches: readonly CreatedAtMismatch[],
): string {
  const [first] = mismatches;
  if (!first) return '';
  const more = mismatches.length > 1 ? ` (and ${mismatches.length - 1} more tables)` : '';
  const found = kindOf(first.found);
  const advice =
    found === 'bigint'
      ? `the gem made it with legacy_created_at_is_bigint: serve this store with the setting ` +
        `legacyCreatedAtIsBigint (--legacy-created-at-is-bigint, ` +
        `SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT=true) on every server`
      : found === 'datetime'
        ? `serve this store without the setting legacyCreatedAtIsBigint ` +
          `(--legacy-created-at-is-bigint, SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT)`
        : `Shameless writes DATETIME, or BIGINT milliseconds with the setting ` +
          `legacyCreatedAtIsBigint; change the column to one of them`;
  return (
    `table ${first.table} has created_at ${first.found.toUpperCase()}${more}, but this store ` +
    `is configured to write ${describeCreatedAt(layout.createdAt)}: ${advice}`
  );
}
