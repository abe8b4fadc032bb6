// One Galera cluster for the whole file: it takes ~10 s to form, so every test shares it and
// leaves it with all its nodes Synced.
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { expect } from 'chai';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { startGaleraCluster, type GaleraCluster, type GaleraNode } from '../src/index.js';

/** A session that reads only after the node has applied every write the cluster committed. */
async function causalSession(node: GaleraNode): Promise<Connection> {
  const connection = await createConnection(node.url);
  await connection.query('SET SESSION wsrep_sync_wait = 1');
  return connection;
}

async function query<T extends RowDataPacket>(
  node: GaleraNode,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  const connection = await causalSession(node);
  try {
    const [rows] = await connection.query<T[]>(sql, values);
    return rows;
  } finally {
    await connection.end();
  }
}

describe('startGaleraCluster', function () {
  this.timeout(120_000);
  let cluster: GaleraCluster;
  let node1: GaleraNode, node2: GaleraNode, node3: GaleraNode;

  before(async function () {
    this.timeout(180_000);
    const startedAt = Date.now();
    cluster = await startGaleraCluster({ nodes: 3 });
    console.log(`      (Galera cluster of 3 formed in ${Date.now() - startedAt} ms)`);
    [node1, node2, node3] = cluster.nodes as [GaleraNode, GaleraNode, GaleraNode];
    await query(node1, 'CREATE DATABASE galera_test');
    await query(node1, 'CREATE TABLE galera_test.t (id INT PRIMARY KEY, v INT)');
  });

  after(async () => {
    await cluster?.destroy();
  });

  it('forms one cluster of three Synced nodes, each taking root logins over TCP', async () => {
    const statuses = await Promise.all(cluster.nodes.map((node) => node.status()));
    for (const status of statuses) {
      expect(status).to.include({
        localState: 'Synced',
        clusterStatus: 'Primary',
        clusterSize: 3,
        ready: true,
      });
    }
    expect(new Set(statuses.map((status) => status.clusterStateUuid)).size).to.equal(1);
    expect(new Set(cluster.nodes.map((node) => node.port)).size).to.equal(3);
    for (const node of cluster.nodes) {
      const [me] = await query(node, 'SELECT CURRENT_USER() AS user, @@wsrep_node_name AS name');
      expect(me).to.deep.equal({ user: 'root@127.0.0.1', name: node.name });
    }
  });

  it('reads on node 3 a row written on node 1', async () => {
    await query(node1, 'INSERT INTO galera_test.t VALUES (1, 10)');
    expect(await query(node3, 'SELECT v FROM galera_test.t WHERE id = 1')).to.deep.equal([
      { v: 10 },
    ]);
  });

  it('answers the second of two conflicting commits on two nodes with ER_LOCK_DEADLOCK', async () => {
    await query(node1, 'INSERT INTO galera_test.t VALUES (2, 0)');
    const [first, second] = await Promise.all([causalSession(node1), causalSession(node2)]);
    try {
      await first.query('BEGIN');
      await second.query('BEGIN');
      await first.query('UPDATE galera_test.t SET v = 1 WHERE id = 2');
      await second.query('UPDATE galera_test.t SET v = 2 WHERE id = 2');
      await first.query('COMMIT');
      const error = await second.query('COMMIT').then(
        () => expect.fail('both conflicting commits succeeded'),
        (caught: unknown) => caught,
      );
      expect(error).to.have.property('code', 'ER_LOCK_DEADLOCK');
      expect(error).to.have.property('errno', 1213);
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
    expect(await query(node3, 'SELECT v FROM galera_test.t WHERE id = 2')).to.deep.equal([
      { v: 1 },
    ]);
  });

  it('names each node state when the cluster does not settle in time', async () => {
    const error = await cluster.waitUntilSynced({ size: 4, timeoutMs: 300 }).then(
      () => expect.fail('a cluster of 3 settled as 4'),
      (caught: unknown) => caught as Error,
    );
    expect(error.message).to.match(/did not settle into 4 Synced nodes within 300 ms/);
    for (const node of cluster.nodes) {
      expect(error.message).to.include(`${node.name}: Synced, Primary component of 3`);
    }
  });

  it('keeps taking writes with a node SIGKILLed, which rejoins and catches up', async () => {
    // The bootstrap node: started again, it must join the others, not found a new cluster.
    await node1.kill();
    for (let id = 100; id < 110; id++) {
      await query(node2, 'INSERT INTO galera_test.t VALUES (?, ?)', [id, id]);
    }
    const [written] = await query(node3, 'SELECT COUNT(*) AS n FROM galera_test.t WHERE id >= 100');
    expect(written).to.deep.equal({ n: 10 });
    await cluster.waitUntilSynced({ size: 2 });

    await node1.start();
    const [caughtUp] = await query(
      node1,
      'SELECT COUNT(*) AS n FROM galera_test.t WHERE id >= 100',
    );
    expect(caughtUp).to.deep.equal({ n: 10 });
    await query(node1, 'INSERT INTO galera_test.t VALUES (200, 200)');
    expect(await query(node2, 'SELECT v FROM galera_test.t WHERE id = 200')).to.deep.equal([
      { v: 200 },
    ]);
    await cluster.waitUntilSynced({ size: 3 });
    const statuses = await Promise.all(cluster.nodes.map((node) => node.status()));
    expect(new Set(statuses.map((status) => status.clusterStateUuid)).size).to.equal(1);
  });
});

describe('startGaleraCluster: a node that cannot start', () => {
  it('fails with the tail of its log and leaves nothing behind', async () => {
    const error = await startGaleraCluster({ nodes: 2, providerOptions: 'no.such.option=1' }).then(
      () => expect.fail('a node started with an unknown provider option'),
      (caught: unknown) => caught as Error,
    );
    expect(error.message).to.match(/mariadbd exited with code \d+ before accepting connections/);
    expect(error.message).to.include("Unrecognized parameter 'no.such.option'");
    const logFile = /last \d+ lines of (\S+)/.exec(error.message)?.[1];
    expect(logFile, 'the log file named in the message').to.be.a('string');
    expect(existsSync(dirname(logFile!)), 'the node directory is left over').to.equal(false);
  });
});
