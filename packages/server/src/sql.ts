// The engine's SQL statements and its MySQL pool, for tools that must run exactly what the
// server runs: the benchmark's raw-mysql2 baseline executes these same functions. Not part of
// the service's API; the wire contract is proto/.
export * from './engine/sql/contentDdl.js';
export * from './engine/sql/contentReads.js';
export * from './engine/sql/contentRows.js';
export * from './engine/sql/contentWrites.js';
export * from './engine/sql/indexTable.js';
export * from './engine/sql/namedLock.js';
export {
  createMysqlPool,
  parseMysqlUrl,
  type MysqlPool,
  type Row,
  type SqlSession,
} from './engine/mysqlPool.js';
