// A named lock (GET_LOCK) per model, held on partition 0 for the whole of a DefineModel: from
// reading the stored definition, through creating the tables, to writing the definition. Two
// servers defining one model at once otherwise both find it undefined and create tables side
// by side: with conflicting definitions, the one stored can be left with some of the other's
// tables (CREATE TABLE IF NOT EXISTS keeps whichever came first), and the refused one's
// tables stay behind. The lock belongs to the connection, so a server that dies holding it
// (a killed process, a lost connection) releases it, and the next define repairs what it left.
import type { Row, SqlSession } from '../mysqlPool.js';

/** How long a define waits for another server's define of the same model (seconds). */
export const DEFINE_LOCK_WAIT_S = 300;

// Named locks are server-wide: the name covers the database and the models table (the
// namespace) as well as the model, hashed, since MySQL allows 64 characters.
const LOCK_NAME = `CONCAT('shameless_define_', LEFT(SHA2(CONCAT(DATABASE(), '.', ?, '.', ?), 256), 40))`;

/** Takes the model's lock; false when another session held it for all of the wait. */
export async function takeDefineLock(
  session: SqlSession,
  modelsTable: string,
  model: string,
): Promise<boolean> {
  const [row] = await session.query<Row[]>(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS \`taken\``, [
    modelsTable,
    model,
    DEFINE_LOCK_WAIT_S,
  ]);
  return Number(row?.taken) === 1;
}

export async function releaseDefineLock(
  session: SqlSession,
  modelsTable: string,
  model: string,
): Promise<void> {
  await session.query(`DO RELEASE_LOCK(${LOCK_NAME})`, [modelsTable, model]);
}
