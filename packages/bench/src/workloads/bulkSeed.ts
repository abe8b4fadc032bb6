// Grows the bench model to millions of records fast, for the scaling curve: rows written
// straight into the tables, exactly as a Put creates them (base version 0 holding every
// value, one primary and one secondary index row), with multi-row INSERTs. Through Put this
// would take the better part of an hour on 2 cores; what is measured afterwards goes through
// the server as usual.
import { randomUUID } from 'node:crypto';
import type { MysqlPool, SqlSession } from '@shameless/server/sql';
import { pack } from 'msgpackr';
import { payloadOf, seededRate } from '../subjects/benchStore.js';
import { forEachConcurrently } from '../load/concurrently.js';
import type { BaselineTables } from '../subjects/mysqlBaseline.js';
import type { ProgressTask } from '../load/progress.js';

const ROWS_PER_INSERT = 500;

/** Records `from .. to-1`: hotel `firstHotel + floor(i / 100)`, its `(i % 100)`th date. */
export async function bulkSeed(
  pool: MysqlPool,
  tables: BaselineTables,
  range: { from: number; to: number; firstHotel: number; bodyBytes: number },
  uuids: string[],
  task: ProgressTask,
): Promise<void> {
  const payload = payloadOf(range.bodyBytes);
  const chunks = Math.ceil((range.to - range.from) / ROWS_PER_INSERT);
  await forEachConcurrently(chunks, 4, async (chunk) => {
    const from = range.from + chunk * ROWS_PER_INSERT;
    const to = Math.min(range.to, from + ROWS_PER_INSERT);
    const content = new Map<string, unknown[][]>();
    const primary = new Map<string, unknown[][]>();
    const secondary = new Map<string, unknown[][]>();
    const add = (rows: Map<string, unknown[][]>, table: string, row: unknown[]) => {
      const list = rows.get(table);
      if (list) list.push(row);
      else rows.set(table, [row]);
    };
    const now = new Date();
    for (let i = from; i < to; i++) {
      const values = seededRate(range.firstHotel + Math.floor(i / 100), i % 100);
      const uuid = randomUUID();
      uuids[i] = uuid;
      add(content, tables.contentOf(uuid), [
        uuid,
        'base',
        0,
        pack({ ...values, ...payload }),
        now,
        `seed-${uuid}`,
      ]);
      add(primary, tables.index('primary', values.hotel_id), [
        values.hotel_id,
        values.room_type,
        values.check_in_date,
        uuid,
      ]);
      add(secondary, tables.index('secondary', values.hotel_id), [
        values.hotel_id,
        values.gateway,
        values.discount_type,
        uuid,
      ]);
    }
    const connection = await pool.getConnection();
    try {
      await connection.query('START TRANSACTION');
      for (const [table, rows] of content) {
        await insertRows(
          connection,
          table,
          ['uuid', 'column_name', 'ref_key', 'body', 'created_at', 'request_id'],
          rows,
        );
      }
      for (const [table, rows] of primary) {
        await insertRows(
          connection,
          table,
          ['hotel_id', 'room_type', 'check_in_date', 'uuid'],
          rows,
        );
      }
      for (const [table, rows] of secondary) {
        await insertRows(connection, table, ['hotel_id', 'gateway', 'discount_type', 'uuid'], rows);
      }
      await connection.query('COMMIT');
    } finally {
      connection.release();
    }
    task.advance(to - from);
  });
}

async function insertRows(
  session: SqlSession,
  table: string,
  columns: readonly string[],
  rows: readonly unknown[][],
): Promise<void> {
  const placeholders = `(${columns.map(() => '?').join(', ')})`;
  await session.query(
    `INSERT INTO \`${table}\` (${columns.map((column) => `\`${column}\``).join(', ')}) VALUES ${rows.map(() => placeholders).join(', ')}`,
    rows.flat() as never,
  );
}
