// The test kit's own statements against the servers it starts (setting up replication, polling
// Galera's state): one short-lived root connection each, never a pool that could outlive a test.
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';

const CONNECT_TIMEOUT_MS = 2_000;

/** Opens a connection to `url`, hands it to `use`, and closes it whatever happens. */
export async function withConnection<T>(
  url: string,
  use: (connection: Connection) => Promise<T>,
): Promise<T> {
  const connection = await createConnection({ uri: url, connectTimeout: CONNECT_TIMEOUT_MS });
  try {
    return await use(connection);
  } finally {
    // A polite quit: a dropped connection leaves an "Aborted connection" warning in the server's
    // log, which the test kit quotes when something fails.
    await connection.end().catch(() => connection.destroy());
  }
}

/** The rows of one statement run on `url`. */
export function queryRows<T extends RowDataPacket>(
  url: string,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  return withConnection(url, async (connection) => {
    const [rows] = await connection.query<T[]>(sql, values);
    return rows;
  });
}
