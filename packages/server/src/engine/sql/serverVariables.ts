// What a partition's MySQL server allows, read once when the store opens.
import type { Row, SqlSession } from '../mysqlPool.js';

/** The largest packet (hence statement) the server accepts, in bytes. */
export async function readMaxAllowedPacket(session: SqlSession): Promise<number> {
  const rows = await session.query<Row[]>('SELECT @@max_allowed_packet AS `bytes`');
  return Number(rows[0]?.bytes);
}
