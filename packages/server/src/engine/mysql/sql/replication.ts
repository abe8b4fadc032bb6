// What the server asks of MariaDB's replication: how far a primary's binary log and a replica's
// applying have come (GTID positions, base/gtidPosition.ts), and waiting for a replica to apply
// a position.
import { type Statement, statement } from './statement.js';

/** The primary's position: every transaction it has logged, one GTID per domain. */
export const PRIMARY_POSITION: Statement = statement('SELECT @@GLOBAL.gtid_binlog_pos AS position');

/** The replica's position: every transaction it has applied from its primary. */
export const REPLICA_POSITION: Statement = statement('SELECT @@GLOBAL.gtid_slave_pos AS position');

/**
 * Waits up to `waitMs` for the replica to apply `position`: `reached` is 0 once it has, -1 when
 * the time ran out first.
 */
export function waitForPosition(position: string, waitMs: number): Statement {
  return statement('SELECT MASTER_GTID_WAIT(?, ?) AS reached', [position, waitMs / 1000]);
}
