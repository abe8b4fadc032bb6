// What the server asks of a Galera node (a partition that lists several nodes, galeraNodes.ts):
// whether it takes queries, and the session setting that makes its reads causal.
import type { Row, SqlSession } from '../mysqlPool.js';
import { type Statement, statement } from './statement.js';

/**
 * Run on every new connection to a node of a Galera partition: each SELECT, SHOW and START
 * TRANSACTION first waits until the node has applied every write set the cluster ordered
 * before it (a causality check: one message round through the group, a fraction of a
 * millisecond on a LAN). Galera replicates synchronously but applies asynchronously, so
 * without it a node the server has just moved to could answer a read, or a request-id lookup,
 * without a write another node acknowledged a moment before; and a shard transaction begun
 * there could take an id below one already committed, which the shard's log would skip.
 */
export const CAUSAL_READS = 'SET SESSION wsrep_sync_wait = 1';

/**
 * A shard transaction's statements go in a few multi-statement round trips, and MariaDB (10.11
 * here) goes on with a round trip after a BF abort (a write set of another node wanting a lock
 * the transaction holds) rolled the transaction back during one of its statements that was not
 * waiting for a lock: that statement ends without an error, the ones after it run outside any
 * transaction, each committed on its own, and the abort's deadlock is raised on the next one.
 * That one, an autocommit statement now, the node retries (wsrep_retry_autocommit): a SELECT
 * still fails, an INSERT fails on the keys of its own first run, which stays committed; but a
 * COMMIT, having had nothing to commit, succeeds and answers OK. The write was acknowledged
 * and lost (galeraPartition.test.ts aborts a write so). An abort during the last statement of
 * a round trip, or between round trips, is reported (ER_LOCK_DEADLOCK).
 *
 * So on Galera every round trip of a shard transaction before its last ends with
 * TRANSACTION_STILL_OPEN, which reads 0 once the transaction is gone (an abort during it is
 * reported, being the last), and its COMMIT is followed, in the same round trip, by
 * {@link committedRows} of what it inserted: a row missing, no commit.
 */
export const TRANSACTION_STILL_OPEN = statement('SELECT @@in_transaction AS `open`');

/** Whether the rows of {@link TRANSACTION_STILL_OPEN} say the transaction is still open. */
export function stillOpen(rows: readonly Row[] | undefined): boolean {
  return Number(rows?.[0]?.open) === 1;
}

/** One version a transaction inserted into a content table, by its request-id key. */
export interface InsertedVersion {
  readonly table: string;
  readonly uuid: string;
  readonly cell: string;
  readonly requestId: string;
}

/**
 * After a COMMIT, in its round trip: how many of `versions` are stored (one row, `stored`), one
 * dive each on the request-id key. Read without the causality wait of CAUSAL_READS: the node's
 * own commit is applied on it before the COMMIT answers.
 */
export function committedRows(versions: readonly InsertedVersion[]): Statement {
  const counts = versions.map(
    ({ table }) =>
      `(SELECT COUNT(*) FROM \`${table}\` WHERE (\`uuid\`, \`column_name\`, \`request_id\`) IN ((?, ?, ?)))`,
  );
  return statement(
    `SET STATEMENT wsrep_sync_wait = 0 FOR SELECT ${counts.join(' + ')} AS \`stored\``,
    versions.flatMap(({ uuid, cell, requestId }) => [uuid, cell, requestId]),
  );
}

/** What a node's wsrep status says, as far as the server cares. */
export interface NodeState {
  /** `wsrep_on`: whether the server is a Galera node at all. */
  readonly galera: boolean;
  /** `wsrep_ready` ON, `wsrep_cluster_status` Primary and `wsrep_local_state_comment` Synced. */
  readonly serving: boolean;
  /** `wsrep_local_state_comment`, or `Primary` missing: what to tell an operator. */
  readonly state: string;
}

/**
 * One round trip: the node's wsrep status variables that decide whether it takes writes. Read
 * without the causality check of CAUSAL_READS: while the cluster waits to evict a node that
 * died, every causal read stalls, and a probe that stalled with them would find every node
 * down rather than the one that is.
 */
export async function readNodeState(session: SqlSession): Promise<NodeState> {
  const rows = await session.query<Row[]>(
    `SET STATEMENT wsrep_sync_wait = 0 FOR
     SELECT @@wsrep_on AS \`name\`, NULL AS \`value\` UNION ALL
     SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
      WHERE VARIABLE_NAME IN ('WSREP_READY', 'WSREP_CLUSTER_STATUS', 'WSREP_LOCAL_STATE_COMMENT')`,
  );
  const galera = Number(rows[0]?.name) === 1;
  const status = new Map(
    rows.slice(1).map((row) => [String(row.name).toUpperCase(), String(row.value)]),
  );
  const ready = status.get('WSREP_READY') === 'ON';
  const primary = status.get('WSREP_CLUSTER_STATUS') === 'Primary';
  const local = status.get('WSREP_LOCAL_STATE_COMMENT') ?? 'unknown';
  return {
    galera,
    serving: galera && ready && primary && local === 'Synced',
    state: !galera ? 'not a Galera node' : !primary ? 'non-Primary' : local,
  };
}
