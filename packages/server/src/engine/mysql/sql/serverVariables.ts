// What a partition's MySQL server allows, read once when the store opens.
import type { Row, SqlSession } from '../mysqlPool.js';

/** The largest packet (hence statement) the server accepts, in bytes. */
export async function readMaxAllowedPacket(session: SqlSession): Promise<number> {
  const rows = await session.query<Row[]>('SELECT @@max_allowed_packet AS `bytes`');
  return Number(rows[0]?.bytes);
}

/**
 * Whether a multi-row INSERT's rows take the ids LAST_INSERT_ID(), LAST_INSERT_ID() + 1, …:
 * InnoDB promises consecutive values to such an insert in the "traditional" (0) and
 * "consecutive" (1, MariaDB's default) lock modes, not in "interleaved" (2, MySQL 8's
 * default), and only a step of 1 makes them neighbours.
 */
export async function readConsecutiveInsertIds(session: SqlSession): Promise<boolean> {
  const rows = await session.query<Row[]>(
    'SELECT @@innodb_autoinc_lock_mode AS `mode`, @@auto_increment_increment AS `step`',
  );
  return Number(rows[0]?.mode) <= 1 && Number(rows[0]?.step) === 1;
}

/** The server's version string: `10.11.19-MariaDB-0+deb12u1`, `8.0.36`. */
export async function readServerVersion(session: SqlSession): Promise<string> {
  const rows = await session.query<Row[]>('SELECT VERSION() AS `version`');
  return String(rows[0]?.version ?? '');
}

/** Whether the server logs its commits (log_bin), so that they have GTIDs replicas can apply. */
export async function readLogsGtids(session: SqlSession): Promise<boolean> {
  const rows = await session.query<Row[]>('SELECT @@log_bin AS `on`');
  return Number(rows[0]?.on) === 1;
}
