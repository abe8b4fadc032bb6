// SPEC §4.3 with the fault on the other side of the server: the database's answer to a write's
// COMMIT is lost (MySQL commits, the server never hears back, then the connection is cut). The
// server cannot know whether the write committed, so it must not say it did not; the retry with
// the same request_id answers the version that committed, and nothing is written twice. Once
// the connection is back, the partition serves again without a restart. A `shameless serve`
// process whose partition is reached through the testkit's TCP proxy.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { WriteMode } from '@shameless/proto';
import {
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startTcpProxy,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { type StoreApi, connectHealth, connectStore } from '../support/grpcCalls.js';
import { type ServerProcess, startServerProcess } from '../support/serverProcess.js';
import { pack } from '../support/storeFixture.js';
import {
  NAMESPACE,
  RATE,
  rateValues,
  codeName,
  contentTable,
  grpcCode,
  newRequestId,
  range,
  sleep,
} from './support.js';

const SHARDS = 4;

describe('consistency: a COMMIT whose answer the database never sends back', function () {
  this.timeout(120_000);
  let databases: TestDatabases;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let api: StoreApi;
  let sql: mysql.Pool;

  before(async () => {
    databases = await createTestDatabases(1);
    const url = new URL(databases.urls[0]!);
    proxy = await startTcpProxy({ target: { host: url.hostname, port: Number(url.port) } });
    url.host = proxy.address;
    server = await startServerProcess([
      '--partition',
      url.toString(),
      '--shards-count',
      String(SHARDS),
      '--namespace',
      NAMESPACE,
      '--health-check-ms',
      '200',
    ]);
    api = connectStore(server.address);
    await api.defineModel({ model: RATE });
    sql = mysql.createPool({ uri: databases.urls[0]!, connectionLimit: 2 });
  });
  after(async () => {
    api?.close();
    await server?.kill('SIGKILL');
    await proxy?.close();
    await sql?.end();
    await databases?.drop();
  });

  const rowsWithRequestId = async (requestId: string) => {
    const rows: { uuid: string; ref_key: number; column_name: string }[] = [];
    for (const shard of range(SHARDS)) {
      const [found] = await sql.query(
        `SELECT uuid, column_name, ref_key FROM \`${contentTable(shard)}\` WHERE request_id = ?`,
        [requestId],
      );
      rows.push(...(found as typeof rows));
    }
    return rows;
  };

  /**
   * Sends the write while everything the database sends back is dropped; once its row has
   * committed, cuts the server's connections to the database. Answers how the call ended.
   */
  const withLostCommit = async (requestId: string, send: () => Promise<unknown>) => {
    // The write must go on a connection already open: under the fault a new one never gets
    // its handshake. The last fault cut them all, and the health probe may hold the one the
    // last calls opened, so a read of 8 keys (two SELECTs, on two connections) opens more.
    await api.getCells({
      model: 'rate',
      keys: range(8).map(() => ({ uuid: randomUUID(), cell: 'base' })),
    });
    proxy.setFaults({ dropServerToClient: true });
    try {
      const call = send().then(
        () => 'answered',
        (error: unknown) => codeName(grpcCode(error)),
      );
      for (let i = 0; (await rowsWithRequestId(requestId)).length === 0; i++) {
        if (i > 200) throw new Error(`the write ${requestId} never committed`);
        await sleep(25);
      }
      proxy.resetAll();
      return await call;
    } finally {
      proxy.resetAll();
      proxy.setFaults({});
    }
  };

  it('WriteCell: the retry answers the one version that committed', async () => {
    const { uuid } = await api.put({
      model: 'rate',
      values: pack(rateValues(1)),
      requestId: newRequestId(),
    });
    const write = (requestId: string, n: number) =>
      api.writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ n }),
        mode: WriteMode.WRITE_MODE_MERGE,
        requestId,
      });
    await write(newRequestId(), 0);
    await write(newRequestId(), 1);
    const lost = newRequestId('lost');
    const ended = await withLostCommit(lost, () => write(lost, 2));
    expect(ended).to.equal(codeName(status.UNAVAILABLE));
    const retried = await write(lost, 2);
    expect(retried.replayed).to.equal(true);
    expect(retried.cell!.refKey).to.equal(2);
    expect(await rowsWithRequestId(lost)).to.have.length(1);
    const next = await write(newRequestId(), 3);
    expect(next.cell!.refKey).to.equal(3);
  });

  it('Put create: the retry answers the record that committed', async () => {
    const lost = newRequestId('lost-create');
    const put = () => api.put({ model: 'rate', values: pack(rateValues(2)), requestId: lost });
    const ended = await withLostCommit(lost, put);
    expect(ended).to.equal(codeName(status.UNAVAILABLE));
    const [row] = await rowsWithRequestId(lost);
    const retried = await put();
    expect(retried.uuid).to.equal(row!.uuid);
    expect(retried.base!.refKey).to.equal(0);
    expect(await rowsWithRequestId(lost)).to.have.length(1);
  });

  it('Put update: the retry answers the one version that committed', async () => {
    const first = await api.put({
      model: 'rate',
      values: pack(rateValues(3)),
      requestId: newRequestId(),
    });
    // A stale try before (the retries above) sends the next groups the usual way, in two
    // round trips, whose first answer the fault would drop before any COMMIT: enough writes
    // to get back to one round trip, where the COMMIT travels with the rest.
    for (const n of range(20)) {
      await api.put({
        model: 'rate',
        values: pack(rateValues(3, { n })),
        requestId: newRequestId(),
      });
    }
    const lost = newRequestId('lost-update');
    const put = () =>
      api.put({ model: 'rate', values: pack(rateValues(3, { x: 1 })), requestId: lost });
    const ended = await withLostCommit(lost, put);
    expect(ended).to.equal(codeName(status.UNAVAILABLE));
    const retried = await put();
    expect(retried.uuid).to.equal(first.uuid);
    expect(retried.base!.refKey).to.equal(21);
    expect(await rowsWithRequestId(lost)).to.have.length(1);
  });

  it('the partition serves again, and says so, without a restart', async () => {
    const health = connectHealth(server.address);
    try {
      for (let i = 0; (await health.check(`shameless.v1.Store/partition/0`)) !== 'SERVING'; i++) {
        if (i > 200) throw new Error('partition 0 never came back');
        await sleep(25);
      }
      expect((await api.describeStore({})).partitions[0]?.down).to.equal(false);
    } finally {
      health.close();
    }
  });
});
