// The DDL of content tables: the gem's columns and keys plus ours, and the change that brings
// a table the gem created up to them.
import type { CreatedAtKind } from '../../model/layout.js';

/** The fractional digits of a second that the DATETIME of tables we create keeps. */
export const CREATED_AT_DIGITS = 6;

/** The created_at column of each kind, as the tables we create declare it. */
export const CREATED_AT_COLUMN_TYPES: Record<CreatedAtKind, string> = {
  datetime: `DATETIME(${CREATED_AT_DIGITS})`,
  // The gem's legacy_created_at_is_bigint: Sequel's :bigint, milliseconds since the epoch.
  bigint: 'BIGINT',
};

/** The content tables' unique key on (uuid, column_name, request_id): a write applied twice fails on it. */
export const REQUEST_ID_KEY = 'uuid_column_request_id';

/** The gem's columns of a content table, which the store reads and writes. */
export const GEM_CONTENT_COLUMNS = ['id', 'uuid', 'column_name', 'ref_key', 'body', 'created_at'];

// The gem's columns and keys, plus `request_id` for idempotent writes. The gem's inserts name
// only its own columns, so they keep working; its tables get the column from
// addRequestIdColumnSql.
export function createContentTableSql(table: string, createdAt: CreatedAtKind): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`id\` BIGINT NOT NULL AUTO_INCREMENT,
  \`uuid\` VARCHAR(36),
  \`column_name\` VARCHAR(255) NOT NULL,
  \`ref_key\` INT NOT NULL,
  \`body\` MEDIUMBLOB,
  \`created_at\` ${CREATED_AT_COLUMN_TYPES[createdAt]} NOT NULL,
  \`request_id\` VARCHAR(64) NULL,
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`uuid_column_ref_key\` (\`uuid\`, \`column_name\`, \`ref_key\`),
  UNIQUE KEY \`${REQUEST_ID_KEY}\` (\`uuid\`, \`column_name\`, \`request_id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

// The column's own collation: the gem's tables take their database's, often case-blind
// (utf8mb4_general_ci), where request ids differing only in case would collide.
export function addRequestIdColumnSql(table: string): string {
  return `ALTER TABLE \`${table}\` ADD COLUMN \`request_id\` VARCHAR(64) COLLATE utf8mb4_bin NULL,
  ADD UNIQUE KEY \`${REQUEST_ID_KEY}\` (\`uuid\`, \`column_name\`, \`request_id\`)`;
}
