// Issue 53's partition on a Galera cluster, against a real 3-node cluster from the test kit (one
// for the whole file: it takes 10-30 s to form) and a real server over gRPC: the partition lists
// the three nodes, writes go through one, and when that node is SIGKILLed under writes the
// server moves to the next; every acknowledged write is stored exactly once, each cell's
// versions stay 0..n-1, a follower of the shards' logs misses nothing, and writes flow again
// within 5 s. Also: a strong read through another server (on another node) right after a write
// sees it; a malformed node list is refused at start; a killed node rejoins; a consumer group's
// failure counts and reset stay exact while another node writes the same rows.
import { type ServiceError, status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import {
  type Cell,
  type Delivery,
  GaleraNode_Health,
  StartFrom,
  WriteMode,
} from '@shameless/proto';
import { type GaleraCluster, type GaleraNode, startGaleraCluster } from '@shameless/testkit';
import { Engine } from '../../src/engine/engine.js';
import { StoreConfigError, openStore } from '../../src/engine/openStore.js';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { silentLogger } from '../../src/engine/base/logger.js';
import { GroupStore } from '../../src/engine/groups/groupStore.js';
import { GaleraNodes } from '../../src/engine/mysql/galeraNodes.js';
import {
  type MysqlPool,
  type ScopedPool,
  type SqlConnection,
  createMysqlPool,
  parseMysqlUrl,
} from '../../src/engine/mysql/mysqlPool.js';
import { Partition, PartitionSet } from '../../src/engine/mysql/partitions.js';
import { CAUSAL_READS } from '../../src/engine/mysql/sql/galera.js';
import { registerEngineMetrics } from '../../src/metrics/engineMetrics.js';
import {
  type StoreFixture,
  RATE_MODEL,
  pack,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';
import type { StoreApi } from '../support/grpcCalls.js';
import { withDatabase } from '../replicas/support.js';
import { GroupMember, timeUntil } from '../support/groupMember.js';

const DATABASE = `galera_${process.pid}`;
const NAMESPACE = 'gal';
const SHARDS = 4;
/**
 * A killed node leaves the others' view once they all suspect it: after 1 s of silence here
 * (default 5 s), what an operator who wants failover within 5 s sets. The inactive and install
 * timeouts keep their defaults: shortened too (inactive 2 s), the two survivors of a kill on
 * this busy machine failed to install their view in time and fell apart into non-Primary
 * singletons.
 */
const QUICK_EVICTION =
  'evs.suspect_timeout=PT1S;evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.3S';
/** A write retried this long at most, as the SDK would within a call's deadline. */
const WRITE_RETRY_MS = 30_000;
const RETRYABLE = new Set([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED,
  status.ABORTED,
]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rows of a query on `node`, read only once it has applied every commit of the cluster. */
async function causalQuery<T extends RowDataPacket>(node: GaleraNode, sql: string): Promise<T[]> {
  const connection = await createConnection(node.url);
  try {
    await connection.query('SET SESSION wsrep_sync_wait = 1');
    const [rows] = await connection.query<T[]>(sql);
    return rows;
  } finally {
    await connection.end();
  }
}

/** The store's database on one node, as a partition names it. */
const nodeLocation = (node: GaleraNode) => parseMysqlUrl(withDatabase(node.url, DATABASE));

/** A pool of one node, its connections' reads causal, as a Galera partition's. */
const nodePool = (node: GaleraNode) =>
  createMysqlPool(nodeLocation(node), {
    connectionLimit: 4,
    connectTimeoutMs: 2000,
    statementTimeoutMs: 30_000,
    sessionStatements: [CAUSAL_READS],
  });

/** `pool` with every connection it hands out, for any call or none, passed through `wrap`. */
function wrappingConnections(
  pool: MysqlPool,
  wrap: (connection: SqlConnection) => SqlConnection,
): MysqlPool {
  const wrapped = (scoped: ScopedPool): ScopedPool => ({
    ...scoped,
    getConnection: async () => wrap(await scoped.getConnection()),
  });
  return { ...pool, ...wrapped(pool), for: (scope) => wrapped(pool.for(scope)) };
}

/**
 * Each running node's replication state, its statements running for over a second and its
 * transactions open as long, one line a node: printed when a test's writes stall, so that a
 * failure in CI says whether flow control, a queue or a lock held them.
 */
async function nodesState(cluster: GaleraCluster): Promise<string> {
  const lines = await Promise.all(
    cluster.nodes
      .filter((node) => node.running)
      .map(async (node) => {
        const connection = await createConnection(node.url);
        try {
          const [status] = await connection.query<RowDataPacket[]>(
            `SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment',
              'wsrep_flow_control_paused', 'wsrep_local_recv_queue', 'wsrep_local_send_queue',
              'wsrep_local_bf_aborts', 'wsrep_local_cert_failures')`,
          );
          const [running] = await connection.query<RowDataPacket[]>(
            `SELECT TIME AS t, STATE AS state, LEFT(INFO, 60) AS info FROM information_schema.PROCESSLIST
              WHERE COMMAND <> 'Sleep' AND TIME >= 1 AND INFO NOT LIKE '%PROCESSLIST%'`,
          );
          // Transactions open for over a second, idle ones too (a lock held by a connection
          // that sleeps shows here, not in the processlist's running statements).
          const [open] = await connection.query<RowDataPacket[]>(
            `SELECT trx_mysql_thread_id AS thread, trx_state AS state,
                TIMESTAMPDIFF(SECOND, trx_started, NOW()) AS age, LEFT(trx_query, 60) AS query
              FROM information_schema.INNODB_TRX WHERE trx_started < NOW() - INTERVAL 1 SECOND`,
          );
          const values = status.map((row) => `${row.Variable_name}=${row.Value}`).join(' ');
          const slow = running.map((row) => `[${row.t}s ${row.state}: ${row.info}]`).join(' ');
          const held = open
            .map((row) => `[thread ${row.thread} ${row.state} ${row.age}s: ${row.query ?? 'idle'}]`)
            .join(' ');
          return (
            `${node.name}: ${values}${slow ? ` running: ${slow}` : ''}` +
            `${held ? ` transactions: ${held}` : ''}`
          );
        } catch (error) {
          return `${node.name}: unreadable (${(error as Error).message})`;
        } finally {
          await connection.end().catch(() => {});
        }
      }),
  );
  return lines.join('\n        ');
}

/** How many transactions of `node` a write set of another node aborted so far. */
async function bfAborts(node: GaleraNode): Promise<number> {
  const [row] = await causalQuery(node, "SHOW GLOBAL STATUS LIKE 'wsrep_local_bf_aborts'");
  return Number(row!.Value);
}

/** A write sent again with the same request id on every retryable failure, as the SDK does. */
async function retried<T>(write: () => Promise<T>): Promise<{ answer: T; sentAt: number }> {
  const giveUpAt = Date.now() + WRITE_RETRY_MS;
  for (let backoffMs = 20; ; backoffMs = Math.min(backoffMs * 2, 200)) {
    const sentAt = Date.now();
    try {
      return { answer: await write(), sentAt };
    } catch (error) {
      const code = (error as ServiceError).code;
      if (!RETRYABLE.has(code) || Date.now() > giveUpAt) throw error;
      await sleep(backoffMs * Math.random());
    }
  }
}

interface Acknowledged {
  readonly requestId: string;
  readonly uuid: string;
  readonly cell: string;
  readonly refKey: number;
  /** When the attempt that was acknowledged was sent, and when its answer came. */
  readonly sentAt: number;
  readonly answeredAt: number;
}

/** Follows every shard's log through `api` from the start, resuming where it was after an error. */
function followAll(api: StoreApi) {
  const cursors: Record<number, bigint> = {};
  const received: Cell[] = [];
  let stopped = false;
  let cancel = () => {};
  const done = (async () => {
    while (!stopped) {
      const stream = api.client.each({
        model: 'rate',
        shards: [],
        cursors: { ...cursors },
        follow: true,
        batchSize: 500,
        heartbeatIntervalMs: 200,
      });
      cancel = () => stream.cancel();
      await new Promise<void>((resolve) => {
        stream.on('data', (message) => {
          if (message.event?.$case !== 'batch') return;
          for (const cell of message.event.batch.cells as Cell[]) {
            received.push(cell);
            cursors[cell.shard] = cell.id;
          }
        });
        stream.on('error', () => resolve());
        stream.on('end', () => resolve());
      });
      if (!stopped) await sleep(50);
    }
  })();
  return {
    received,
    async stop() {
      stopped = true;
      cancel();
      await done;
    },
  };
}

/**
 * What the cluster holds against what was acknowledged, read on `node` once it has applied every
 * commit, and what the follower of every shard's log received.
 */
async function auditStore(
  node: GaleraNode,
  acknowledged: readonly Acknowledged[],
  follower: ReturnType<typeof followAll>,
) {
  const rows: RowDataPacket[] = [];
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const table = `${DATABASE}.${NAMESPACE}_rate_${String(shard).padStart(6, '0')}`;
    rows.push(
      ...(await causalQuery(
        node,
        `SELECT id, uuid, column_name, ref_key, request_id, ${shard} AS shard FROM ${table} ORDER BY id`,
      )),
    );
  }
  const byRequest = new Map<string, RowDataPacket[]>();
  for (const row of rows) {
    const key = String(row.request_id);
    byRequest.set(key, [...(byRequest.get(key) ?? []), row]);
  }
  const lost = acknowledged.filter((ack) => !byRequest.has(ack.requestId));
  const doubled = [...byRequest.values()].filter((stored) => stored.length > 1);
  const misanswered = acknowledged.filter((ack) => {
    const stored = byRequest.get(ack.requestId)?.[0];
    return stored !== undefined && Number(stored.ref_key) !== ack.refKey;
  });
  const versions = new Map<string, number[]>();
  for (const row of rows) {
    const key = `${String(row.uuid)}/${String(row.column_name)}`;
    versions.set(key, [...(versions.get(key) ?? []), Number(row.ref_key)]);
  }
  const gapped = [...versions].filter(([, refKeys]) =>
    refKeys.sort((x, y) => x - y).some((refKey, i) => refKey !== i),
  );

  // The follower, which read the logs throughout, got every acknowledged cell.
  const inLog = (ack: Acknowledged) =>
    follower.received.some(
      (cell) => cell.uuid === ack.uuid && cell.name === ack.cell && cell.refKey === ack.refKey,
    );
  await timeUntil(
    () => acknowledged.every(inLog),
    20_000,
    'the follower has every acknowledged cell',
  );
  await follower.stop();
  const followedIds = new Map<number, bigint[]>();
  for (const cell of follower.received) {
    followedIds.set(cell.shard, [...(followedIds.get(cell.shard) ?? []), cell.id]);
  }
  const outOfOrder = [...followedIds.values()].filter((ids) =>
    ids.some((id, i) => i > 0 && id <= ids[i - 1]!),
  );
  const storedIds = (shard: number) =>
    rows.filter((row) => Number(row.shard) === shard).map((row) => BigInt(String(row.id)));
  const skipped = [...followedIds].filter(([shard, ids]) =>
    storedIds(shard).some((id) => !ids.includes(id)),
  );

  return { lost, doubled, misanswered, gapped, outOfOrder, skipped };
}

function expectIntact(audit: Awaited<ReturnType<typeof auditStore>>): void {
  expect(audit.lost, 'acknowledged writes not stored').to.deep.equal([]);
  expect(audit.doubled, 'request ids stored twice').to.deep.equal([]);
  expect(audit.misanswered, 'acknowledged with another version than stored').to.deep.equal([]);
  expect(audit.gapped, 'cells whose versions are not 0..n-1').to.deep.equal([]);
  expect(audit.outOfOrder, 'shards whose log went back').to.deep.equal([]);
  expect(audit.skipped, 'stored cells the follower skipped').to.deep.equal([]);
}

describe('a partition on a Galera cluster (issue 53)', function () {
  this.timeout(120_000);
  let cluster: GaleraCluster;
  let store: StoreFixture;
  /** The node list of the partition, as --partition takes it. */
  let nodeList: string;

  /** The node the store writes through now, as DescribeStore says. */
  const currentNode = async (api: StoreApi = store.api): Promise<GaleraNode> => {
    const { partitions } = await api.describeStore({});
    const node = cluster.nodes.find((candidate) => candidate.port === partitions[0]!.port);
    if (!node) throw new Error(`DescribeStore names port ${partitions[0]!.port}, no node's`);
    return node;
  };

  const putRecord = (hotelId: number, id = requestId()) =>
    store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: hotelId,
        room_type: 'double',
        check_in_date: '2026-01-01',
        gateway: 'g',
        discount_type: 'd',
      }),
      requestId: id,
    });

  before(async function () {
    this.timeout(180_000);
    const startedAt = Date.now();
    cluster = await startGaleraCluster({ nodes: 3, providerOptions: QUICK_EVICTION });
    console.log(`      (Galera cluster of 3 formed in ${Date.now() - startedAt} ms)`);
    nodeList = cluster.nodes.map((node) => withDatabase(node.url, DATABASE)).join('|');
    store = await startStoreFixture({
      partitionUrls: [nodeList],
      namespace: NAMESPACE,
      shardsCount: SHARDS,
      poolSize: 16,
      healthCheckIntervalMs: 250,
      statementTimeoutMs: 10_000,
    });
    await store.api.defineModel({ model: RATE_MODEL });
  });

  after(async () => {
    await store?.close();
    await cluster?.destroy();
  });

  it('refuses at start a node list with an empty entry, two databases, a node twice, or a server that is not a Galera node', async () => {
    const [first, second] = cluster.nodes.map((node) => withDatabase(node.url, DATABASE));
    const refusal = async (entry: string) => {
      const error = await openStore(
        {
          namespace: NAMESPACE,
          shardsCount: SHARDS,
          partitionUrls: [entry],
          poolSize: 2,
          connectTimeoutMs: 1000,
          startupTimeoutMs: 0,
          followPollIntervalMs: 100,
        },
        silentLogger,
      ).then(
        async (engine) => {
          await engine.close();
          throw new Error(`opened a store on ${entry}`);
        },
        (error: unknown) => error as Error,
      );
      expect(error).to.be.instanceOf(StoreConfigError);
      return error.message;
    };
    expect(await refusal(`${first}||${second}`)).to.match(
      /^--partition \/ SHAMELESS_PARTITIONS, partition 0: node 1 of .* is empty/,
    );
    expect(await refusal(`${first}|${withDatabase(second!, 'elsewhere')}`)).to.match(
      /partition 0: node 1 names database elsewhere and node 0 galera_\d+/,
    );
    expect(await refusal(`${first}|${first}`)).to.match(
      /partition 0: nodes 0 and 1 are both 127\.0\.0\.1:\d+/,
    );
    // The machine's own MariaDB, twice by two names: a server, but no Galera node.
    const lone = `mysql://root@127.0.0.1:3306/${DATABASE}`;
    const message = await refusal(`${lone}|mysql://root@localhost:3306/${DATABASE}`);
    expect(message).to.match(/is not a Galera node \(wsrep_on is OFF\)/);
    const cleanUp = await createConnection('mysql://root@127.0.0.1:3306');
    await cleanUp.query(`DROP DATABASE IF EXISTS \`${DATABASE}\``);
    await cleanUp.end();
  });

  it('a strong read through a server on another node sees a write acknowledged a moment before', async () => {
    // The same nodes listed from the second: that server writes and reads through node 2.
    const [a, b, c] = nodeList.split('|');
    const other = await startStoreFixture({
      partitionUrls: [[b, c, a].join('|')],
      namespace: NAMESPACE,
      shardsCount: SHARDS,
    });
    try {
      expect((await currentNode()).name).to.not.equal((await currentNode(other.api)).name);
      const { uuid } = await putRecord(1_000);
      for (let i = 0; i < 100; i += 1) {
        const written = await store.api.writeCell({
          model: 'rate',
          uuid,
          cell: 'meta',
          body: pack({ i }),
          mode: WriteMode.WRITE_MODE_REPLACE,
          requestId: requestId(),
        });
        const read = await other.api.getCell({ model: 'rate', uuid, cell: 'meta' });
        expect(read.cell!.refKey).to.equal(written.cell!.refKey);
      }
    } finally {
      await other.close();
    }
  });

  it('the node written through SIGKILLed under writes: none lost or doubled, versions and log without a gap, writes again within 5 s', async () => {
    const WRITERS = 8;
    const follower = followAll(store.api);
    const acknowledged: Acknowledged[] = [];
    let stopped = false;
    let nextHotel = 10_000;
    /** One writer: a record created, then appended to, in turn, each write until stopped. */
    const writer = async () => {
      while (!stopped) {
        const createId = requestId();
        const hotel = (nextHotel += 1);
        const created = await retried(() => putRecord(hotel, createId));
        acknowledged.push({
          requestId: createId,
          uuid: created.answer.uuid,
          cell: 'base',
          refKey: created.answer.base!.refKey,
          sentAt: created.sentAt,
          answeredAt: Date.now(),
        });
        for (let i = 0; i < 5 && !stopped; i += 1) {
          const id = requestId();
          const written = await retried(() =>
            store.api.writeCell({
              model: 'rate',
              uuid: created.answer.uuid,
              cell: 'meta',
              body: pack({ i }),
              mode: WriteMode.WRITE_MODE_MERGE,
              requestId: id,
            }),
          );
          acknowledged.push({
            requestId: id,
            uuid: created.answer.uuid,
            cell: 'meta',
            refKey: written.answer.cell!.refKey,
            sentAt: written.sentAt,
            answeredAt: Date.now(),
          });
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, () => writer());
    await timeUntil(() => acknowledged.length >= 200, 20_000, 'writes flowing');

    const victim = await currentNode();
    const killedAt = Date.now();
    await victim.kill();
    // Writes flow again once one sent after the kill is acknowledged.
    await timeUntil(
      () => acknowledged.some((ack) => ack.sentAt >= killedAt),
      20_000,
      'a write sent after the kill acknowledged',
    );
    const recoveredAt = Math.min(
      ...acknowledged.filter((ack) => ack.sentAt >= killedAt).map((ack) => ack.answeredAt),
    );
    const stalledMs = Math.max(
      ...acknowledged
        .filter((ack) => ack.answeredAt >= killedAt)
        .map((ack) => ack.answeredAt - Math.min(ack.sentAt, killedAt)),
    );
    const afterKill = acknowledged.length;
    await timeUntil(
      () => acknowledged.length >= afterKill + 200,
      20_000,
      'writes after the failover',
    );
    stopped = true;
    await Promise.all(writers);
    const survivor = await currentNode();
    expect(survivor.name).to.not.equal(victim.name);

    const audit = await auditStore(survivor, acknowledged, follower);

    console.log(
      `      (${acknowledged.length} writes acknowledged by ${WRITERS} writers; killed ${victim.name}, ` +
        `moved to ${survivor.name}; writes flowing again ${recoveredAt - killedAt} ms after the kill, ` +
        `the longest write waited ${stalledMs} ms; lost ${audit.lost.length}, doubled ${audit.doubled.length})`,
    );
    expectIntact(audit);
    expect(recoveredAt - killedAt).to.be.below(5_000);
  });

  it('the killed node rejoins, and the partition counts it as a node to move to again', async () => {
    const killed = cluster.nodes.find((node) => !node.running);
    expect(killed, 'a node killed by the test before').to.not.equal(undefined);
    await killed!.start();
    await cluster.waitUntilSynced({ size: 3 });
    // DescribeStore shows it as a node to move to: probed Synced, no longer down.
    await timeUntil(
      async () => {
        const { partitions } = await store.api.describeStore({});
        const node = partitions[0]!.nodes.find((candidate) => candidate.port === killed!.port);
        return node?.health === GaleraNode_Health.HEALTH_STANDBY && node.state === 'Synced';
      },
      10_000,
      'the rejoined node a standby again',
    );
    // The metrics say the same.
    const registry = new Registry();
    registerEngineMetrics(registry, store.engine);
    const metrics = await registry.getSingleMetricAsString('shameless_galera_node');
    const killedIndex = cluster.nodes.indexOf(killed!);
    expect(metrics).to.include(
      `shameless_galera_node{partition="0",node="${killedIndex}",health="standby"} 1`,
    );
    expect(metrics.match(/health="current"} 1/g)).to.have.length(1);
    const { uuid } = await putRecord(20_000);
    const [row] = await causalQuery(
      killed!,
      `SELECT COUNT(*) AS n FROM ${DATABASE}.${NAMESPACE}_rate_${String(
        parseInt(uuid.slice(0, 4), 16) % SHARDS,
      ).padStart(6, '0')} WHERE uuid = '${uuid}'`,
    );
    expect(Number(row!.n)).to.equal(1);
  });
  it('two servers writing the same cells through two nodes at once: versions and every log stay in order', async () => {
    // The other server lists first a node the store does not write through (which one it does
    // depends on what the tests before did: a donor of a rejoin is not Synced, and is left).
    const mine = await currentNode();
    const order = [...cluster.nodes.filter((node) => node !== mine), mine];
    const other = await startStoreFixture({
      partitionUrls: [order.map((node) => withDatabase(node.url, DATABASE)).join('|')],
      namespace: NAMESPACE,
      shardsCount: SHARDS,
      healthCheckIntervalMs: 250,
    });
    try {
      expect((await currentNode()).name).to.not.equal((await currentNode(other.api)).name);
      const follower = followAll(store.api);
      const acknowledged: Acknowledged[] = [];
      const records = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => (await putRecord(30_000 + i)).uuid),
      );
      const stopAt = Date.now() + 3_000;
      const writer = async (api: StoreApi, w: number) => {
        for (let i = 0; Date.now() < stopAt; i += 1) {
          const uuid = records[(w + i) % records.length]!;
          const id = requestId();
          const written = await retried(() =>
            api.writeCell({
              model: 'rate',
              uuid,
              cell: 'meta',
              body: pack({ w, i }),
              mode: WriteMode.WRITE_MODE_MERGE,
              requestId: id,
            }),
          );
          acknowledged.push({
            requestId: id,
            uuid,
            cell: 'meta',
            refKey: written.answer.cell!.refKey,
            sentAt: written.sentAt,
            answeredAt: Date.now(),
          });
        }
      };
      await Promise.all(
        [store.api, other.api].flatMap((api) => [0, 1, 2, 3].map((w) => writer(api, w))),
      ).catch(async (error: unknown) => {
        console.log(`      the nodes when a write failed:\n        ${await nodesState(cluster)}`);
        throw error;
      });
      const audit = await auditStore(await currentNode(), acknowledged, follower);
      console.log(`      (${acknowledged.length} writes to 8 records through two nodes at once)`);
      expectIntact(audit);
    } finally {
      await other.close();
    }
  });
  it('a write whose transaction a write through another node aborts just before its COMMIT is written again, never acknowledged unstored', async () => {
    // A BF abort (a write set of another node wanting a lock the transaction holds) that
    // lands on a statement not waiting for a lock ends it without an error; MariaDB runs the
    // rest of the round trip outside any transaction, and a COMMIT there answers OK having
    // committed nothing (sql/galera.ts). Here the last round trip of a write gets a slow
    // statement before its COMMIT, which a rewrite of the log-lock rows through another node
    // (as another server's transaction writes them) aborts so. Under load, the servers'
    // readback SELECT was such a statement. The write must be stored, or fail.
    const [written, elsewhere] = cluster.nodes.filter((node) => node.running);
    let abortNextCommit = false;
    let aborting: Promise<void> | undefined;
    const logLocks = store.engine.layout.logLocksTable;
    /** Deletes and puts back every log-lock row through `elsewhere`, in one transaction. */
    const rewriteLogLocks = async () => {
      const connection = await createConnection(withDatabase(elsewhere!.url, DATABASE));
      try {
        const [rows] = await connection.query<RowDataPacket[]>(
          `SELECT table_name FROM \`${logLocks}\``,
        );
        const tables = rows.map((row) => String(row.table_name));
        await connection.query('START TRANSACTION');
        await connection.query(`DELETE FROM \`${logLocks}\` WHERE table_name IN (?)`, [tables]);
        await connection.query(`INSERT INTO \`${logLocks}\` (table_name) VALUES ?`, [
          tables.map((table) => [table]),
        ]);
        await connection.query('COMMIT');
      } finally {
        await connection.end();
      }
    };
    const aborted = (connection: SqlConnection): SqlConnection => ({
      query: <T>(...[sql, values]: Parameters<SqlConnection['query']>) => {
        if (!abortNextCommit || typeof sql !== 'string' || !sql.includes(';\nCOMMIT')) {
          return connection.query<T>(sql, values);
        }
        abortNextCommit = false;
        // Long enough never to end by itself: the abort ends it, without an error.
        const slow = "SELECT BENCHMARK(2000000000, MD5('x'))";
        const answer = connection.query<T>(sql.replace(';\nCOMMIT', `;\n${slow};\nCOMMIT`), values);
        aborting = sleep(300).then(rewriteLogLocks);
        return answer;
      },
      release: () => connection.release(),
      destroy: () => connection.destroy(),
    });
    const pool = wrappingConnections(nodePool(written!), aborted);
    const galera = new GaleraNodes(
      0,
      [
        { location: nodeLocation(written!), pool },
        { location: nodeLocation(elsewhere!), pool: nodePool(elsewhere!) },
      ],
      silentLogger,
    );
    const engine = new Engine(
      store.engine.layout,
      new PartitionSet([new Partition(0, nodeLocation(written!), galera, [], 0, galera)], SHARDS),
      silentLogger,
      { followPollIntervalMs: 100, maxCellBytes: 1024 * 1024 },
    );
    try {
      await engine.models.refresh(UNBOUNDED);
      const { uuid } = await engine.put(
        UNBOUNDED,
        'rate',
        pack({
          hotel_id: 40_000,
          room_type: 'double',
          check_in_date: '2026-01-01',
          gateway: 'g',
          discount_type: 'd',
        }),
        requestId(),
      );
      const abortsBefore = await bfAborts(written!);
      abortNextCommit = true;
      const id = requestId();
      const { cell } = await engine.writeCell(UNBOUNDED, {
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ n: 1 }),
        mode: 'merge',
        requestId: id,
      });
      await aborting;
      expect(abortNextCommit, 'the write reached its COMMIT').to.equal(false);
      expect(await bfAborts(written!), 'BF aborts on the node written through').to.be.above(
        abortsBefore,
      );
      const stored = await causalQuery(
        written!,
        `SELECT ref_key FROM ${DATABASE}.${NAMESPACE}_rate_${String(cell.shard).padStart(6, '0')}
          WHERE uuid = '${uuid}' AND column_name = 'meta' AND request_id = '${id}'`,
      );
      expect(
        stored.map((row) => Number(row.ref_key)),
        'the acknowledged version, stored',
      ).to.deep.equal([cell.refKey]);
    } finally {
      await engine.close();
    }
  });
  it('a consumer group while another node writes its shards and its rows: a failing cell counted exactly to max_deliveries and parked, a reset an abort cut short run again on every shard', async () => {
    // The failure count is one autocommitted upsert that answers the count it stored, and a
    // reset one transaction run again when an abort ended it unreported (groupStore.ts). Here
    // a second server writes the group's shards through another node, which also touches the
    // poison cell's count row all along; then a reset gets a slow statement between its
    // cursor UPDATEs and its DELETE of failure counts, and a claim of every shard through
    // another node aborts it there (the DELETE then commits on its own, the UPDATEs are gone).
    const group = `galera-${Date.now().toString(36)}`;
    const MAX_DELIVERIES = 4;
    const mine = await currentNode();
    const others = cluster.nodes.filter((node) => node !== mine && node.running);
    const writer = await startStoreFixture({
      partitionUrls: [[...others, mine].map((node) => withDatabase(node.url, DATABASE)).join('|')],
      namespace: NAMESPACE,
      shardsCount: SHARDS,
      healthCheckIntervalMs: 250,
    });
    const cellsRow = `${DATABASE}.\`${store.engine.layout.groupCellsTable}\``;
    const shardsRow = `${DATABASE}.\`${store.engine.layout.groupShardsTable}\``;
    const touch = await createConnection(others[0]!.url);
    const member = await GroupMember.join(store.api, {
      group,
      from: StartFrom.START_FROM_LATEST,
      maxDeliveries: MAX_DELIVERIES,
    });
    let writing = true;
    // The count row touched through another node until the last failure: the park that follows
    // it is run again after a deadlock too, but a run of conflicts would only delay it here.
    let touching = true;
    let touchesAborted = 0;
    const written: Promise<unknown>[] = [];
    try {
      expect((await currentNode(writer.api)).name).to.not.equal(mine.name);
      await member.until(() => member.owned.size === SHARDS, 10_000, 'every shard owned');
      const records = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const { uuid } = await writer.api.put({
            model: 'rate',
            values: pack({
              hotel_id: 50_000 + i,
              room_type: 'double',
              check_in_date: '2026-01-01',
              gateway: 'g',
              discount_type: 'd',
            }),
            requestId: requestId(),
          });
          return uuid;
        }),
      );
      await member.until(() => member.deliveries.length > 0, 10_000, 'a delivery');
      const poison = member.deliveries[0]!;
      const keyOf = (delivery: Delivery) => `${delivery.cell!.shard}/${delivery.cell!.id}`;
      const poisonKey = keyOf(poison);
      /** Acknowledges every delivery but the poison cell's that is not yet. */
      const answer = () => {
        const fresh = member.deliveries.filter(
          (delivery) => keyOf(delivery) !== poisonKey && !member.handled.has(keyOf(delivery)),
        );
        if (fresh.length > 0) member.ack(fresh);
      };
      // Writes of every record through the other node, and its touches of the count row.
      for (const [w, uuid] of records.entries()) {
        written.push(
          (async () => {
            for (let i = 0; writing; i += 1) {
              await retried(() =>
                writer.api.writeCell({
                  model: 'rate',
                  uuid,
                  cell: 'meta',
                  body: pack({ w, i }),
                  mode: WriteMode.WRITE_MODE_MERGE,
                  requestId: requestId(),
                }),
              );
            }
          })(),
        );
      }
      written.push(
        (async () => {
          while (writing && touching) {
            // Each conflict with the count's upsert fails one of the two: this one, a deadlock.
            await touch
              .query(
                `UPDATE ${cellsRow} SET updated_at = NOW(6) WHERE group_name = ? AND shard = ? AND cell_id = ?`,
                [group, poison.cell!.shard, poison.cell!.id],
              )
              .catch((error: { code?: string }) => {
                if (error.code !== 'ER_LOCK_DEADLOCK') throw error;
                touchesAborted += 1;
              });
            await sleep(2);
          }
        })(),
      );
      const storedAttempts = async () => {
        const [row] = await causalQuery(
          mine,
          `SELECT attempts FROM ${cellsRow} WHERE group_name = '${group}' AND shard = ${poison.cell!.shard} AND cell_id = ${poison.cell!.id}`,
        );
        return row === undefined ? 0 : Number(row.attempts);
      };
      let delivery = poison;
      for (let attempt = 1; attempt <= MAX_DELIVERIES; attempt += 1) {
        expect(delivery.attempt, `delivery ${attempt} of the poison cell`).to.equal(attempt);
        if (attempt === MAX_DELIVERIES) touching = false;
        member.fail(delivery, `boom ${attempt}`);
        if (attempt === MAX_DELIVERIES) break;
        await member.until(
          () => {
            answer();
            return member.deliveries.some(
              (next) => keyOf(next) === poisonKey && next.attempt === attempt + 1,
            );
          },
          10_000,
          `delivery ${attempt + 1} of the poison cell`,
        );
        delivery = member.deliveries.find(
          (next) => keyOf(next) === poisonKey && next.attempt === attempt + 1,
        )!;
        // Redelivered only once the count was stored: it is exactly the deliveries so far.
        expect(await storedAttempts(), `the count stored after ${attempt} failures`).to.equal(
          attempt,
        );
      }
      const parked = await member.next('parked').catch(async (error: Error) => {
        // What the server stored and what the member owns, to tell a park that failed from a
        // shard that was lost.
        throw new Error(
          `${error.message}; stored attempts ${await storedAttempts()}, member owns ` +
            `${JSON.stringify([...member.owned.keys()])}, ${touchesAborted} touches aborted`,
        );
      });
      expect([parked.id, parked.attempts]).to.deep.equal([poison.cell!.id, MAX_DELIVERIES]);
      writing = false;
      await Promise.all(written);
      console.log(
        `      (${member.deliveries.length} deliveries; ${touchesAborted} touches of the count row aborted by a conflict)`,
      );
      expect(
        member.deliveries.filter((next) => keyOf(next) === poisonKey).length,
        'deliveries of the poison cell',
      ).to.equal(MAX_DELIVERIES);
      await timeUntil(
        () => {
          answer();
          return member.deliveries.every(
            (next) => keyOf(next) === poisonKey || member.handled.has(keyOf(next)),
          );
        },
        10_000,
        'every other delivery acknowledged',
      );
      await member.leave();
      const listed = await store.api.listParkedCells({
        model: 'rate',
        group,
        limit: 0,
        pageToken: '',
      });
      expect(listed.cells.map((cell) => [cell.cell!.id, cell.attempts, cell.error])).to.deep.equal([
        [poison.cell!.id, MAX_DELIVERIES, `boom ${MAX_DELIVERIES}`],
      ]);

      // The reset, through a store whose first reset transaction an abort cuts short.
      const [through, elsewhere] = cluster.nodes.filter((node) => node.running);
      let abortNextReset = false;
      let aborting: Promise<void> | undefined;
      let resetRuns = 0;
      const claimEveryShard = async () => {
        const connection = await createConnection(elsewhere!.url);
        try {
          await connection.query(
            `UPDATE ${shardsRow} SET owner = 'intruder', epoch = epoch + 1 WHERE group_name = ?`,
            [group],
          );
        } finally {
          await connection.end();
        }
      };
      const aborted = (connection: SqlConnection): SqlConnection => ({
        query: <T>(...[sql, values]: Parameters<SqlConnection['query']>) => {
          const reset =
            typeof sql === 'string' &&
            sql.startsWith('START TRANSACTION') &&
            sql.includes(store.engine.layout.groupShardsTable);
          if (reset) resetRuns += 1;
          if (!reset || !abortNextReset) return connection.query<T>(sql, values);
          abortNextReset = false;
          const slow = "SELECT BENCHMARK(2000000000, MD5('x'))";
          const answer = connection.query<T>(
            sql.replace(';\nDELETE FROM', `;\n${slow};\nDELETE FROM`),
            values,
          );
          aborting = sleep(300).then(claimEveryShard);
          return answer;
        },
        release: () => connection.release(),
        destroy: () => connection.destroy(),
      });
      const pool = wrappingConnections(nodePool(through!), aborted);
      const galera = new GaleraNodes(
        0,
        [
          { location: nodeLocation(through!), pool },
          { location: nodeLocation(elsewhere!), pool: nodePool(elsewhere!) },
        ],
        silentLogger,
      );
      const partition = new Partition(0, nodeLocation(through!), galera, [], 0, galera);
      const groupStore = new GroupStore(store.engine.layout, new PartitionSet([partition], SHARDS));
      try {
        // A failure count for the reset to clear, counted on this node (insert, then update).
        const key = { model: 'rate', group };
        const counted = [
          await groupStore.countFailure(key, 0, 1, 'to be forgotten'),
          await groupStore.countFailure(key, 0, 1, 'to be forgotten'),
        ];
        expect(counted, 'counts answered by the upsert').to.deep.equal([1, 2]);
        const abortsBefore = await bfAborts(through!);
        abortNextReset = true;
        const cursors = Array.from({ length: SHARDS }, (_, shard) => ({
          shard,
          cursor: shard + 1,
        }));
        await groupStore.setCursors(key, cursors);
        await aborting;
        expect(abortNextReset, 'the reset reached its slow statement').to.equal(false);
        expect(await bfAborts(through!), 'BF aborts on the node reset through').to.be.above(
          abortsBefore,
        );
        expect(resetRuns, 'runs of the reset transaction').to.equal(2);
      } finally {
        await partition.end();
      }
      const shards = await causalQuery(
        mine,
        `SELECT shard, \`cursor\`, owner FROM ${shardsRow} WHERE group_name = '${group}' ORDER BY shard`,
      );
      expect(
        shards.map((row) => [Number(row.shard), Number(row.cursor), row.owner]),
        'every shard reset',
      ).to.deep.equal(Array.from({ length: SHARDS }, (_, shard) => [shard, shard + 1, null]));
      const cells = await causalQuery(
        mine,
        `SELECT shard, cell_id, attempts, parked_at IS NOT NULL AS parked FROM ${cellsRow} WHERE group_name = '${group}'`,
      );
      expect(
        cells.map((row) => [
          Number(row.shard),
          Number(row.cell_id),
          Number(row.attempts),
          Number(row.parked),
        ]),
        'the parked cell kept, the failure count cleared',
      ).to.deep.equal([[poison.cell!.shard, Number(poison.cell!.id), MAX_DELIVERIES, 1]]);
    } finally {
      writing = false;
      await Promise.allSettled(written);
      if (!member.ended) member.cancel();
      await touch.end();
      await writer.close();
    }
  });
});
