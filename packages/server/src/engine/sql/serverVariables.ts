// What a partition's MySQL server allows, read once when the store opens.
import type { Row, SqlSession } from '../mysqlPool.js';

/** The largest packet (hence statement) the server accepts, in bytes. */
export async function readMaxAllowedPacket(session: SqlSession): Promise<number> {
  const rows = await session.query<Row[]>('SELECT @@max_allowed_packet AS `bytes`');
  return Number(rows[0]?.bytes);
}

/** The server's version string: `10.11.19-MariaDB-0+deb12u1`, `8.0.36`. */
export async function readServerVersion(session: SqlSession): Promise<string> {
  const rows = await session.query<Row[]>('SELECT VERSION() AS `version`');
  return String(rows[0]?.version ?? '');
}
