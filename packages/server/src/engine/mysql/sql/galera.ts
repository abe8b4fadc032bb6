// What the server asks of a Galera node (a partition that lists several nodes, galeraNodes.ts):
// whether it takes queries, and the session setting that makes its reads causal.
import type { Row, SqlSession } from '../mysqlPool.js';

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
