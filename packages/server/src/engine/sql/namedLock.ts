// MySQL named locks (GET_LOCK): held by a session, released explicitly or when it ends.
import type { SqlSession } from '../mysqlPool.js';

/** True when the lock was acquired within the wait. */
export async function getNamedLock(session: SqlSession, name: string, waitSeconds: number) {
  const rows = await session.query<{ locked: number | null }[]>('SELECT GET_LOCK(?, ?) AS locked', [
    name,
    waitSeconds,
  ]);
  return rows[0]?.locked === 1;
}

export async function releaseNamedLock(session: SqlSession, name: string): Promise<void> {
  await session.query('DO RELEASE_LOCK(?)', [name]);
}
