// All SQL that touches the store's consumer-group tables, created on the first use of any group
// (so that a store that never has one keeps the tables it had):
// - `<ns>_shameless_group_members`, on partition 0: each live member of each group, the session
//   (stream) that holds it, and when that session ends by the database's clock unless its
//   server hears from the member again;
// - `<ns>_shameless_group_shards`, on every partition: per (model, group, shard) of the shards
//   that partition holds, the cursor (every cell with an id at or below it is handled), the
//   owning member and the epoch that fences it: a claim bumps the epoch, and every write of an
//   owner names the epoch it holds, so a member that lost a shard moves nothing;
// - `<ns>_shameless_group_cells`, on the same partitions: cells of those shards whose delivery
//   failed (how often, and why) and cells parked, with a replay asked for or not.
// Times are the database's (NOW(6)), never a server's clock: any server may judge a session.
import type { RowId } from '../../base/exactInteger.js';
import { exactInteger } from '../../base/exactInteger.js';
import type { Row, SqlValue, WriteResult } from '../mysqlPool.js';
import { type Statement, statement } from './statement.js';

/** Member and group names are stored as values (placeholders), never as identifiers. */
const NAME_COLUMN = 'VARCHAR(64) COLLATE utf8mb4_bin NOT NULL';
/** The longest error text kept for a failed or parked cell. */
export const GROUP_ERROR_MAX_BYTES = 2048;

export function createGroupMembersTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`model\` ${NAME_COLUMN},
  \`group_name\` ${NAME_COLUMN},
  \`member_id\` ${NAME_COLUMN},
  \`session\` CHAR(36) NOT NULL,
  \`server\` VARCHAR(255) NOT NULL,
  \`peer\` VARCHAR(255) NOT NULL,
  \`joined_at\` DATETIME(6) NOT NULL,
  \`expires_at\` DATETIME(6) NOT NULL,
  PRIMARY KEY (\`model\`, \`group_name\`, \`member_id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

export function createGroupShardsTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`model\` ${NAME_COLUMN},
  \`group_name\` ${NAME_COLUMN},
  \`shard\` INT NOT NULL,
  \`cursor\` BIGINT UNSIGNED NOT NULL,
  \`owner\` VARCHAR(64) COLLATE utf8mb4_bin NULL,
  \`epoch\` BIGINT UNSIGNED NOT NULL,
  \`updated_at\` DATETIME(6) NOT NULL,
  PRIMARY KEY (\`model\`, \`group_name\`, \`shard\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

export function createGroupCellsTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  \`model\` ${NAME_COLUMN},
  \`group_name\` ${NAME_COLUMN},
  \`shard\` INT NOT NULL,
  \`cell_id\` BIGINT UNSIGNED NOT NULL,
  \`attempts\` INT NOT NULL,
  \`error\` VARCHAR(${GROUP_ERROR_MAX_BYTES}) NOT NULL,
  \`parked_at\` DATETIME(6) NULL,
  \`replay\` TINYINT NOT NULL DEFAULT 0,
  \`updated_at\` DATETIME(6) NOT NULL,
  PRIMARY KEY (\`model\`, \`group_name\`, \`shard\`, \`cell_id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;
}

/** A group, as every statement names it. */
export interface GroupKey {
  readonly model: string;
  readonly group: string;
}

// ---- members (partition 0) ----

export interface MemberSessionRow {
  readonly memberId: string;
  readonly session: string;
  readonly server: string;
  readonly peer: string;
  /** How long the session lasts from now without news of the member. */
  readonly timeoutMs: number;
}

/**
 * Makes `session` the member's: a new member, or one that joins again (its earlier session,
 * wherever it is, finds on its next renewal that it was replaced).
 */
export function joinMember(table: string, group: GroupKey, member: MemberSessionRow): Statement {
  return statement(
    `INSERT INTO \`${table}\` (\`model\`, \`group_name\`, \`member_id\`, \`session\`, \`server\`, \`peer\`, \`joined_at\`, \`expires_at\`)
     VALUES (?, ?, ?, ?, ?, ?, NOW(6), NOW(6) + INTERVAL ? MICROSECOND)
     ON DUPLICATE KEY UPDATE \`session\` = VALUES(\`session\`), \`server\` = VALUES(\`server\`),
       \`peer\` = VALUES(\`peer\`), \`joined_at\` = VALUES(\`joined_at\`), \`expires_at\` = VALUES(\`expires_at\`)`,
    [
      group.model,
      group.group,
      member.memberId,
      member.session,
      member.server,
      member.peer,
      member.timeoutMs * 1000,
    ],
  );
}

/**
 * Extends a live session to `leftMs` from now. Matches no row once the session expired or was
 * replaced: an expiry is final, so no session comes back to life after others judged it dead.
 */
export function renewMember(
  table: string,
  group: GroupKey,
  memberId: string,
  session: string,
  leftMs: number,
): Statement {
  return statement(
    `UPDATE \`${table}\` SET \`expires_at\` = NOW(6) + INTERVAL ? MICROSECOND
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`member_id\` = ? AND \`session\` = ? AND \`expires_at\` > NOW(6)`,
    [Math.max(0, Math.round(leftMs * 1000)), group.model, group.group, memberId, session],
  );
}

export function removeMember(
  table: string,
  group: GroupKey,
  memberId: string,
  session: string,
): Statement {
  return statement(
    `DELETE FROM \`${table}\` WHERE \`model\` = ? AND \`group_name\` = ? AND \`member_id\` = ? AND \`session\` = ?`,
    [group.model, group.group, memberId, session],
  );
}

export function removeExpiredMembers(table: string, group: GroupKey): Statement {
  return statement(
    `DELETE FROM \`${table}\` WHERE \`model\` = ? AND \`group_name\` = ? AND \`expires_at\` <= NOW(6)`,
    [group.model, group.group],
  );
}

export interface MemberRow {
  readonly memberId: string;
  readonly session: string;
  readonly server: string;
  readonly peer: string;
  readonly joinedAt: Date;
  readonly expiresAt: Date;
  /** Whether the session had not expired when read, by the database's clock. */
  readonly alive: boolean;
}

export function readMembers(table: string, group: GroupKey): Statement {
  return statement(
    `SELECT \`member_id\`, \`session\`, \`server\`, \`peer\`, \`joined_at\`, \`expires_at\`,
       \`expires_at\` > NOW(6) AS \`alive\`
     FROM \`${table}\` WHERE \`model\` = ? AND \`group_name\` = ? ORDER BY \`member_id\``,
    [group.model, group.group],
  );
}

export function toMemberRow(row: Row): MemberRow {
  return {
    memberId: String(row.member_id),
    session: String(row.session),
    server: String(row.server),
    peer: String(row.peer),
    joinedAt: row.joined_at as Date,
    expiresAt: row.expires_at as Date,
    alive: Number(row.alive) === 1,
  };
}

/** The group's members whose sessions are live (a reset needs there to be none). */
export function readLiveMembers(table: string, group: GroupKey): Statement {
  return statement(
    `SELECT \`member_id\` FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`expires_at\` > NOW(6) ORDER BY \`member_id\``,
    [group.model, group.group],
  );
}

// ---- shards (every partition, for its own shards) ----

export interface GroupShardRow {
  readonly shard: number;
  readonly cursor: RowId;
  readonly owner: string | undefined;
  readonly epoch: RowId;
}

/** A group's row for each shard given, at its starting cursor; rows already there stay. */
export function createGroupShards(
  table: string,
  group: GroupKey,
  starts: readonly { shard: number; cursor: RowId }[],
): Statement {
  const values: SqlValue[] = [];
  for (const { shard, cursor } of starts) values.push(group.model, group.group, shard, cursor);
  return statement(
    `INSERT IGNORE INTO \`${table}\` (\`model\`, \`group_name\`, \`shard\`, \`cursor\`, \`owner\`, \`epoch\`, \`updated_at\`)
     VALUES ${starts.map(() => '(?, ?, ?, ?, NULL, 0, NOW(6))').join(', ')}`,
    values,
  );
}

export function readGroupShards(table: string, group: GroupKey): Statement {
  return statement(
    `SELECT \`shard\`, \`cursor\`, \`owner\`, \`epoch\` FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? ORDER BY \`shard\``,
    [group.model, group.group],
  );
}

export function toGroupShardRow(row: Row): GroupShardRow {
  return {
    shard: Number(row.shard),
    cursor: exactInteger(row.cursor as number | string),
    owner: row.owner === null || row.owner === undefined ? undefined : String(row.owner),
    epoch: exactInteger(row.epoch as number | string),
  };
}

/**
 * Takes the shard for `memberId` if its epoch is still `epoch` (nobody claimed it since it was
 * read), bumping the epoch; the row as it is afterwards follows. The caller decided from the
 * same read that the shard was free (no owner, or one whose session is over) or its own.
 */
export function claimShard(
  table: string,
  group: GroupKey,
  shard: number,
  memberId: string,
  epoch: RowId,
): Statement[] {
  return [
    statement(
      `UPDATE \`${table}\` SET \`owner\` = ?, \`epoch\` = \`epoch\` + 1, \`updated_at\` = NOW(6)
       WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`epoch\` = ?`,
      [memberId, group.model, group.group, shard, epoch],
    ),
    statement(
      `SELECT \`shard\`, \`cursor\`, \`owner\`, \`epoch\` FROM \`${table}\`
       WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ?`,
      [group.model, group.group, shard],
    ),
  ];
}

/**
 * Moves the cursor of a shard that `memberId` owns under `epoch` forward to `cursor`, and with
 * `release` hands the shard back (no owner). Matches no row once the shard is another's: the
 * owner lost it, and nothing it acknowledged since counts.
 */
export function commitCursor(
  table: string,
  group: GroupKey,
  shard: number,
  memberId: string,
  epoch: RowId,
  cursor: RowId,
  release: boolean,
): Statement {
  return statement(
    `UPDATE \`${table}\` SET \`cursor\` = GREATEST(\`cursor\`, ?),${release ? ' `owner` = NULL,' : ''} \`updated_at\` = NOW(6)
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`owner\` = ? AND \`epoch\` = ?`,
    [cursor, group.model, group.group, shard, memberId, epoch],
  );
}

/** Sets shards' cursors whoever owns them (a reset, while no member is connected). */
export function setCursors(
  table: string,
  group: GroupKey,
  cursors: readonly { shard: number; cursor: RowId }[],
): Statement[] {
  return cursors.map(({ shard, cursor }) =>
    statement(
      `UPDATE \`${table}\` SET \`cursor\` = ?, \`owner\` = NULL, \`updated_at\` = NOW(6)
       WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ?`,
      [cursor, group.model, group.group, shard],
    ),
  );
}

// ---- cells: failed deliveries and parked cells (every partition, for its own shards) ----

export interface GroupCellRow {
  readonly shard: number;
  readonly id: RowId;
  readonly attempts: number;
  readonly error: string;
  readonly parkedAt: Date | undefined;
  readonly replay: boolean;
}

export function toGroupCellRow(row: Row): GroupCellRow {
  return {
    shard: Number(row.shard),
    id: exactInteger(row.cell_id as number | string),
    attempts: Number(row.attempts),
    error: String(row.error),
    parkedAt: row.parked_at instanceof Date ? row.parked_at : undefined,
    replay: Number(row.replay) === 1,
  };
}

const CELL_ROW_COLUMNS = '`shard`, `cell_id`, `attempts`, `error`, `parked_at`, `replay`';

/** The shard's cells past `cursor` that failed or were parked: what a new owner must know. */
export function readShardCells(
  table: string,
  group: GroupKey,
  shard: number,
  cursor: RowId,
): Statement {
  return statement(
    `SELECT ${CELL_ROW_COLUMNS} FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`cell_id\` > ? ORDER BY \`cell_id\``,
    [group.model, group.group, shard, cursor],
  );
}

/** Parked cells whose replay was asked for, of the group's shards on one partition. */
export function readReplays(table: string, group: GroupKey): Statement {
  return statement(
    `SELECT ${CELL_ROW_COLUMNS} FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`replay\` = 1 AND \`parked_at\` IS NOT NULL
     ORDER BY \`shard\`, \`cell_id\``,
    [group.model, group.group],
  );
}

/**
 * Counts one more failed delivery of a cell, keeping its error, in one autocommitted statement
 * that answers the new count in its OK packet ({@link failedDeliveryCount}): the count is stored
 * with the statement or not at all, and the answer is the count stored. (As a transaction of
 * the upsert and a SELECT of the row, a BF abort on Galera could roll the upsert back without a
 * word and the SELECT and COMMIT still answer, sql/galera.ts.) LAST_INSERT_ID(expr) makes the
 * OK packet's insert id the incremented count; the insert path, on a table without
 * AUTO_INCREMENT, answers insert id 0, whatever the session's LAST_INSERT_ID was before.
 */
export function countFailedDelivery(
  table: string,
  group: GroupKey,
  shard: number,
  id: RowId,
  error: string,
): Statement {
  return statement(
    `INSERT INTO \`${table}\` (\`model\`, \`group_name\`, \`shard\`, \`cell_id\`, \`attempts\`, \`error\`, \`parked_at\`, \`replay\`, \`updated_at\`)
     VALUES (?, ?, ?, ?, 1, ?, NULL, 0, NOW(6))
     ON DUPLICATE KEY UPDATE \`attempts\` = LAST_INSERT_ID(\`attempts\` + 1), \`error\` = VALUES(\`error\`), \`updated_at\` = NOW(6)`,
    [group.model, group.group, shard, id, error],
  );
}

/** The count {@link countFailedDelivery} stored: its insert id, 0 when it inserted the row (1). */
export function failedDeliveryCount(result: WriteResult): number {
  const counted = Number(result.insertId);
  return counted === 0 ? 1 : counted;
}

/**
 * Counts one more delivery of each cell given, without an error of its own (its member died
 * while holding it).
 */
export function countLostDeliveries(
  table: string,
  group: GroupKey,
  cells: readonly { shard: number; id: RowId }[],
  error: string,
): Statement {
  const values: SqlValue[] = [];
  for (const { shard, id } of cells) values.push(group.model, group.group, shard, id, error);
  return statement(
    `INSERT INTO \`${table}\` (\`model\`, \`group_name\`, \`shard\`, \`cell_id\`, \`attempts\`, \`error\`, \`parked_at\`, \`replay\`, \`updated_at\`)
     VALUES ${cells.map(() => '(?, ?, ?, ?, 1, ?, NULL, 0, NOW(6))').join(', ')}
     ON DUPLICATE KEY UPDATE \`attempts\` = \`attempts\` + 1, \`updated_at\` = NOW(6)`,
    values,
  );
}

/** Parks a cell with its attempts and error (or parks it again after a replay that failed). */
export function parkCell(
  table: string,
  group: GroupKey,
  shard: number,
  id: RowId,
  attempts: number,
  error: string,
): Statement {
  return statement(
    `INSERT INTO \`${table}\` (\`model\`, \`group_name\`, \`shard\`, \`cell_id\`, \`attempts\`, \`error\`, \`parked_at\`, \`replay\`, \`updated_at\`)
     VALUES (?, ?, ?, ?, ?, ?, NOW(6), 0, NOW(6))
     ON DUPLICATE KEY UPDATE \`attempts\` = VALUES(\`attempts\`), \`error\` = VALUES(\`error\`),
       \`parked_at\` = NOW(6), \`replay\` = 0, \`updated_at\` = NOW(6)`,
    [group.model, group.group, shard, id, attempts, error],
  );
}

/**
 * Counts of failed deliveries of cells the cursor has passed are of no more use: forgotten
 * once the cursor's own write (sent before) has landed under `epoch`, whether it kept the
 * shard `memberId`'s or released it. A member fenced out (a claim moved the epoch on), whose
 * cursor write matched nothing, must not wipe the counts of cells the shard's next owner
 * delivers again from the stored cursor.
 */
export function forgetHandledFailures(
  table: string,
  shardsTable: string,
  group: GroupKey,
  shard: number,
  memberId: string,
  epoch: RowId,
  cursor: RowId,
): Statement {
  return statement(
    `DELETE FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`cell_id\` <= ? AND \`parked_at\` IS NULL
       AND EXISTS (SELECT 1 FROM \`${shardsTable}\` AS written
         WHERE written.\`model\` = ? AND written.\`group_name\` = ? AND written.\`shard\` = ?
           AND written.\`epoch\` = ? AND written.\`cursor\` >= ?
           AND (written.\`owner\` = ? OR written.\`owner\` IS NULL))`,
    [
      group.model,
      group.group,
      shard,
      cursor,
      group.model,
      group.group,
      shard,
      epoch,
      cursor,
      memberId,
    ],
  );
}

/**
 * Asks for a parked cell's replay, its count of deliveries starting again (unless a replay was
 * asked for already). Matches no row when the cell is not parked. MySQL assigns left to right:
 * the count is read before `replay` changes.
 */
export function askReplay(table: string, group: GroupKey, shard: number, id: RowId): Statement {
  return statement(
    `UPDATE \`${table}\` SET \`attempts\` = IF(\`replay\` = 1, \`attempts\`, 0), \`replay\` = 1, \`updated_at\` = NOW(6)
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`cell_id\` = ? AND \`parked_at\` IS NOT NULL`,
    [group.model, group.group, shard, id],
  );
}

/** A replayed cell was handled: it is no longer parked. */
export function replayHandled(table: string, group: GroupKey, shard: number, id: RowId): Statement {
  return statement(
    `DELETE FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`shard\` = ? AND \`cell_id\` = ? AND \`replay\` = 1`,
    [group.model, group.group, shard, id],
  );
}

/** Parked cells of a group on one partition, after (shard, id), in that order. */
export function readParkedCells(
  table: string,
  group: GroupKey,
  after: { shard: number; id: RowId },
  onlyShard: number | undefined,
  limit: number,
): Statement {
  return statement(
    `SELECT ${CELL_ROW_COLUMNS} FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`parked_at\` IS NOT NULL
       AND (\`shard\`, \`cell_id\`) > (?, ?)${onlyShard === undefined ? '' : ' AND `shard` = ?'}
     ORDER BY \`shard\`, \`cell_id\` LIMIT ?`,
    [
      group.model,
      group.group,
      after.shard,
      after.id,
      ...(onlyShard === undefined ? [] : [onlyShard]),
      limit,
    ],
  );
}

export function countParkedCells(table: string, group: GroupKey): Statement {
  return statement(
    `SELECT \`shard\`, COUNT(*) AS \`parked\` FROM \`${table}\`
     WHERE \`model\` = ? AND \`group_name\` = ? AND \`parked_at\` IS NOT NULL GROUP BY \`shard\``,
    [group.model, group.group],
  );
}

/**
 * Failed-delivery counts of the given shards of a group (a reset clears those of the shards it
 * moves; parked cells stay).
 */
export function forgetFailures(
  table: string,
  group: GroupKey,
  shards: readonly number[],
): Statement {
  return statement(
    `DELETE FROM \`${table}\` WHERE \`model\` = ? AND \`group_name\` = ? AND \`parked_at\` IS NULL
       AND \`shard\` IN (${shards.map(() => '?').join(', ')})`,
    [group.model, group.group, ...shards],
  );
}
