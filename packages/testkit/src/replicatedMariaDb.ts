// A primary and its replicas, each a throwaway MariaDB server on a loopback port, joined by
// MariaDB's own GTID replication: what a partition with read replicas runs on (issue 53).
//
// What a test can rely on:
// - The primary writes a binary log (ROW format, like the Galera nodes) and stamps every
//   transaction with a GTID `<gtidDomainId>-<server_id>-<sequence>`; every server has its own
//   server_id, unique within the test process.
// - Each replica follows with `MASTER_USE_GTID=slave_pos`. Its applied position lives in the
//   InnoDB table mysql.gtid_slave_pos and MariaDB throws its relay log away whenever the replica
//   reconnects by GTID, so a replica that is killed (or stopped) and started again resumes from
//   what it had committed. mariadbd starts the replication threads on every start (the test kit
//   never passes --skip-slave-start), even after `stopReplication`.
// - Replicas run with read_only=1. In MariaDB 10.11 read_only stops only accounts without the
//   READ_ONLY ADMIN privilege, which `ALL PRIVILEGES` (and so root) holds, while SUPER no longer
//   does. So the test kit revokes READ_ONLY ADMIN from root on each replica: a write sent to a
//   replica fails with ER_OPTION_PREVENTS_STATEMENT (1290) instead of silently diverging. Root
//   cannot lift read_only there any more; the replication thread is never affected. The revoke
//   is local to the replica, but GRANT statements run on the primary do replicate.
// - A replica reconnects once a second (MASTER_CONNECT_RETRY=1), so a primary that is killed and
//   started again is followed again within about a second.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RowDataPacket } from 'mysql2/promise';
import { queryRows, withConnection } from './adminConnection.js';
import { readLogTail, startMariaDbServer, type MariaDbServer } from './mariadbServer.js';

export interface ReplicatedMariaDbOptions {
  /** How many replicas follow the primary; 0 gives a primary alone, with its binary log. */
  replicas: number;
  /**
   * The primary's `gtid_domain_id`, the first number of every GTID it writes. Default 0, as on
   * any server nobody configured, so two primaries standing for two partitions share a domain
   * unless a test gives them distinct ones.
   */
  gtidDomainId?: number;
  /** How long each server's start waits for a root login. Default 30 s. */
  startTimeoutMs?: number;
  /** Appended to every server's mariadbd command line. */
  extraArgs?: string[];
}

/** What SHOW SLAVE STATUS and @@gtid_slave_pos say about a replica. */
export interface ReplicaStatus {
  /** `Slave_IO_Running`: `Yes` when connected to the primary, `Connecting` while it retries, `No` when stopped. */
  readonly ioThread: string;
  /** `Slave_SQL_Running`: `Yes` or `No`. */
  readonly sqlThread: string;
  /** Both threads run. */
  readonly replicating: boolean;
  /** `Seconds_Behind_Master`; null when a thread is not running. */
  readonly secondsBehindPrimary: number | null;
  /** `@@gtid_slave_pos`: the GTIDs this replica has applied, one per domain. */
  readonly appliedGtids: string;
  readonly lastIoError: string;
  readonly lastSqlError: string;
}

export interface ReplicatedMariaDb {
  readonly primary: MariaDbServer;
  readonly replicas: readonly MariaDbServer[];
  readonly gtidDomainId: number;
  /** `STOP SLAVE` on one replica: it keeps serving reads, ever staler. */
  stopReplication(replica: MariaDbServer): Promise<void>;
  /** `START SLAVE` on one replica; it catches up from where it stopped. */
  startReplication(replica: MariaDbServer): Promise<void>;
  /**
   * Waits until `replica` has applied everything the primary had committed when called
   * (`@@gtid_binlog_pos` on the primary, `MASTER_GTID_WAIT` on the replica); rejects after
   * `timeoutMs` (default 10 s) with the replica's status and the tail of its log.
   */
  waitForReplicaToCatchUp(replica: MariaDbServer, timeoutMs?: number): Promise<void>;
  replicaStatus(replica: MariaDbServer): Promise<ReplicaStatus>;
  /** Destroys every server (SIGKILL, data removed); safe to call more than once. */
  destroy(): Promise<void>;
}

const DEFAULT_CATCH_UP_TIMEOUT_MS = 10_000;
const REPLICATION_START_TIMEOUT_MS = 10_000;
const STATUS_POLL_INTERVAL_MS = 50;
const LOG_TAIL_LINES = 15;
const MAX_GTID_DOMAIN_ID = 0xffffffff;

// server_id tells the servers of one replication topology apart, and it is the middle number of
// every GTID; handing out each value once per process keeps every server of every set distinct.
let nextServerId = 1;

/**
 * Starts a primary and `replicas` replicas following it by GTID, ready once every replica's
 * replication threads run.
 */
export async function startReplicatedMariaDb(
  options: ReplicatedMariaDbOptions,
): Promise<ReplicatedMariaDb> {
  const replicaCount = options.replicas;
  if (!Number.isInteger(replicaCount) || replicaCount < 0) {
    throw new RangeError(`replicas must be a whole number, got ${replicaCount}`);
  }
  const gtidDomainId = options.gtidDomainId ?? 0;
  if (!Number.isInteger(gtidDomainId) || gtidDomainId < 0 || gtidDomainId > MAX_GTID_DOMAIN_ID) {
    throw new RangeError(`gtidDomainId must be 0 to ${MAX_GTID_DOMAIN_ID}, got ${gtidDomainId}`);
  }
  const primaryServerId = nextServerId;
  nextServerId += 1 + replicaCount;
  const common = { startTimeoutMs: options.startTimeoutMs, extraArgs: options.extraArgs ?? [] };
  const primaryArgs = [
    '--log-bin=mysql-bin',
    '--binlog-format=ROW',
    `--server-id=${primaryServerId}`,
    `--gtid-domain-id=${gtidDomainId}`,
  ];
  const replicaArgs = (index: number) => [
    `--server-id=${primaryServerId + 1 + index}`,
    '--read-only=1',
    // The default name embeds the host name; a fixed one is found again whatever the host.
    '--relay-log=relay-bin',
  ];

  const starts = await Promise.allSettled([
    startMariaDbServer({ ...common, extraArgs: [...common.extraArgs, ...primaryArgs] }),
    ...Array.from({ length: replicaCount }, (_, index) =>
      startMariaDbServer({ ...common, extraArgs: [...common.extraArgs, ...replicaArgs(index)] }),
    ),
  ]);
  const servers = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
  const set = new ReplicatedSet(servers, gtidDomainId);
  try {
    const failed = starts.find((start) => start.status === 'rejected');
    if (failed !== undefined) {
      throw failed.reason;
    }
    await Promise.all(set.replicas.map((replica) => set.follow(replica)));
    return set;
  } catch (error) {
    await set.destroy();
    throw error;
  }
}

class ReplicatedSet implements ReplicatedMariaDb {
  readonly primary: MariaDbServer;
  readonly replicas: readonly MariaDbServer[];

  constructor(
    private readonly servers: MariaDbServer[],
    readonly gtidDomainId: number,
  ) {
    [this.primary] = servers as [MariaDbServer];
    this.replicas = servers.slice(1);
  }

  /** Makes a fresh replica read-only for root too and points it at the primary. */
  async follow(replica: MariaDbServer): Promise<void> {
    await withConnection(replica.url, async (connection) => {
      // mariadb-install-db also makes root@<host name>, which --skip-name-resolve ignores.
      const [roots] = await connection.query<RowDataPacket[]>(
        "SELECT Host AS host FROM mysql.user WHERE User = 'root' AND Host IN (?)",
        [['localhost', '127.0.0.1', '::1']],
      );
      for (const { host } of roots) {
        await connection.query('REVOKE READ_ONLY ADMIN ON *.* FROM ?@?', ['root', host]);
      }
      await connection.query(
        `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${this.primary.port}, ` +
          "MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, " +
          'MASTER_CONNECT_RETRY=1',
      );
      await connection.query('START SLAVE');
    });
    const deadline = Date.now() + REPLICATION_START_TIMEOUT_MS;
    for (;;) {
      const status = await this.replicaStatus(replica);
      if (status.replicating) {
        return;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `the replica on port ${replica.port} did not start replicating from the primary on ` +
            `port ${this.primary.port} within ${REPLICATION_START_TIMEOUT_MS} ms ` +
            `(${describe(status)})\n${await readLogTail(replica.logFile, 0, LOG_TAIL_LINES)}`,
        );
      }
      await sleep(STATUS_POLL_INTERVAL_MS);
    }
  }

  async stopReplication(replica: MariaDbServer): Promise<void> {
    await withConnection(this.replicaUrl(replica), (connection) => connection.query('STOP SLAVE'));
  }

  async startReplication(replica: MariaDbServer): Promise<void> {
    await withConnection(this.replicaUrl(replica), (connection) => connection.query('START SLAVE'));
  }

  async waitForReplicaToCatchUp(
    replica: MariaDbServer,
    timeoutMs = DEFAULT_CATCH_UP_TIMEOUT_MS,
  ): Promise<void> {
    const url = this.replicaUrl(replica);
    const [position] = await queryRows(this.primary.url, 'SELECT @@gtid_binlog_pos AS gtids');
    const gtids = String(position?.gtids ?? '');
    const [waited] = await queryRows(url, 'SELECT MASTER_GTID_WAIT(?, ?) AS outcome', [
      gtids,
      timeoutMs / 1000,
    ]);
    // 0: reached; -1: timed out.
    if (Number(waited?.outcome) === 0) {
      return;
    }
    const status = await this.replicaStatus(replica);
    throw new Error(
      `the replica on port ${replica.port} did not reach the primary's position ${gtids} ` +
        `within ${timeoutMs} ms (${describe(status)}); was its replication stopped ` +
        `(startReplication) or the primary on port ${this.primary.port} stopped?\n` +
        (await readLogTail(replica.logFile, 0, LOG_TAIL_LINES)),
    );
  }

  async replicaStatus(replica: MariaDbServer): Promise<ReplicaStatus> {
    return withConnection(this.replicaUrl(replica), async (connection) => {
      const [[slave]] = await connection.query<RowDataPacket[]>('SHOW SLAVE STATUS');
      const [[applied]] = await connection.query<RowDataPacket[]>(
        'SELECT @@gtid_slave_pos AS gtids',
      );
      if (slave === undefined) {
        throw new Error(`the server on port ${replica.port} is not set up as a replica`);
      }
      const ioThread = String(slave.Slave_IO_Running);
      const sqlThread = String(slave.Slave_SQL_Running);
      const behind = slave.Seconds_Behind_Master;
      return {
        ioThread,
        sqlThread,
        replicating: ioThread === 'Yes' && sqlThread === 'Yes',
        secondsBehindPrimary: behind === null ? null : Number(behind),
        appliedGtids: String(applied?.gtids ?? ''),
        lastIoError: String(slave.Last_IO_Error ?? ''),
        lastSqlError: String(slave.Last_SQL_Error ?? ''),
      };
    });
  }

  async destroy(): Promise<void> {
    const results = await Promise.allSettled(this.servers.map((server) => server.destroy()));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed !== undefined) {
      throw failed.reason;
    }
  }

  private replicaUrl(replica: MariaDbServer): string {
    if (!this.replicas.includes(replica)) {
      throw new Error(`the server on port ${replica.port} is not one of this set's replicas`);
    }
    return replica.url;
  }
}

function describe(status: ReplicaStatus): string {
  const parts = [
    `Slave_IO_Running ${status.ioThread}`,
    `Slave_SQL_Running ${status.sqlThread}`,
    `applied ${status.appliedGtids || 'nothing'}`,
  ];
  if (status.lastIoError !== '') {
    parts.push(`last IO error: ${status.lastIoError}`);
  }
  if (status.lastSqlError !== '') {
    parts.push(`last SQL error: ${status.lastSqlError}`);
  }
  return parts.join(', ');
}
