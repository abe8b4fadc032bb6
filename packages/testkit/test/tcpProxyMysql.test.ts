import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import {
  createTestDatabases,
  testMysqlUrl,
  startTcpProxy,
  type TcpProxy,
  type TestDatabases,
} from '../src/index.js';
import { waitUntil } from './support/sockets.js';

/** The URL of `databaseUrl`, but reached through `proxy`. */
function throughProxy(databaseUrl: string, proxy: TcpProxy): string {
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}

describe('startTcpProxy in front of MariaDB', () => {
  let databases: TestDatabases;
  let proxy: TcpProxy;
  let direct: Connection;

  beforeEach(async () => {
    databases = await createTestDatabases(1, { prefix: 'testkit_proxy' });
    const serverUrl = new URL(await testMysqlUrl());
    proxy = await startTcpProxy({
      target: { host: serverUrl.hostname, port: Number(serverUrl.port || 3306) },
    });
    direct = await createConnection(databases.urls[0] ?? '');
    await direct.query('CREATE TABLE cells (id INT PRIMARY KEY)');
  });

  afterEach(async () => {
    await direct.end();
    await proxy.close();
    await databases.drop();
  });

  it('carries queries and their results', async () => {
    const connection = await createConnection(throughProxy(databases.urls[0] ?? '', proxy));
    try {
      const [rows] = await connection.query<RowDataPacket[]>('SELECT 1 + 1 AS sum');
      expect(rows[0]?.sum).to.equal(2);
      expect(proxy.stats.bytesServerToClient).to.be.greaterThan(0);
      expect(proxy.stats.bytesClientToServer).to.be.greaterThan(0);
    } finally {
      await connection.end();
    }
  });

  it('makes connecting fail fast while refusing connections', async () => {
    proxy.setFaults({ refuseConnections: true });
    const startedAt = Date.now();

    const error = await createConnection({
      host: '127.0.0.1',
      port: proxy.port,
      user: 'root',
      connectTimeout: 10_000,
    }).catch((caught: unknown) => caught);

    expect(error).to.be.instanceOf(Error);
    expect(Date.now() - startedAt, 'failed by timing out').to.be.below(2_000);
  });

  it('lets a write commit on the server while its acknowledgement is lost', async () => {
    const connection = await createConnection(throughProxy(databases.urls[0] ?? '', proxy));
    connection.on('error', () => {});
    proxy.setFaults({ dropServerToClient: true });

    let acknowledged = false;
    const insert = connection.query('INSERT INTO cells (id) VALUES (42)').then(
      () => (acknowledged = true),
      (error: unknown) => error,
    );
    await waitUntil(
      async () => {
        const [rows] = await direct.query<RowDataPacket[]>('SELECT id FROM cells');
        return rows.length === 1;
      },
      'the insert was committed on the server',
      5_000,
    );
    // Give a response that slipped through every chance to arrive.
    await sleep(100);

    expect(acknowledged, 'the client heard back').to.equal(false);
    proxy.resetAll();
    expect(await insert).to.be.instanceOf(Error);
    connection.destroy();
  });
});
