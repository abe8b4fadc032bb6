// A server that first serves a model while one of its partitions is down cannot read the
// columns of the model's tables there; once the partition is back it reads them again, so
// that it checks creates against a gem store's INT columns as the server that defined the
// model does. The second partition is a private MariaDB reached through the testkit's TCP
// proxy, cut off and then restored.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import {
  type MariaDbServer,
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startMariaDbServer,
  startTcpProxy,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { rejection } from '../../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';
import type { Logger } from '../../../src/engine/base/logger.js';

const NS = 'ht';
/** Shards 0-1 live on partition 0, 2-3 on partition 1 (the private server). */
const SHARDS = 4;
const primaryIndex = (model: string, shard: number) =>
  `${NS}_${model}_primary_index_${String(shard).padStart(6, '0')}`;

/** The gem's primary-index table of a model shaped as RATE_MODEL: hotel_id is an INT. */
const gemPrimaryIndexSql = (model: string, shard: number) =>
  `CREATE TABLE \`${primaryIndex(model, shard)}\` (
    \`hotel_id\` INT NOT NULL,
    \`room_type\` varchar(255) NOT NULL,
    \`check_in_date\` varchar(255) NOT NULL,
    \`uuid\` varchar(36),
    UNIQUE KEY \`${primaryIndex(model, shard)}_index\` (\`hotel_id\`, \`room_type\`, \`check_in_date\`)
  )`;

const values = (hotelId: number) => ({
  hotel_id: hotelId,
  room_type: 'wide',
  check_in_date: '2024-04-01',
  gateway: 'pegasus',
  discount_type: 'wide',
});
/** Past INT; on shard 2, partition 1. */
const TOO_WIDE = 3_000_000_002;

describe('known tables: a model first served while a partition is down', function () {
  this.timeout(120_000);
  let second: MariaDbServer;
  let proxy: TcpProxy;
  let first: TestDatabases;
  let onSecond: TestDatabases;
  let sql: mysql.Connection;
  let definer: StoreFixture;
  let other: StoreFixture;
  const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug: () => {},
    info: (message, fields) => logged.push({ level: 'info', message, fields }),
    warn: (message, fields) => logged.push({ level: 'warn', message, fields }),
    error: (message, fields) => logged.push({ level: 'error', message, fields }),
  };
  const logsOf = (model: string, level: string) =>
    logged.filter((entry) => entry.level === level && entry.fields?.model === model);

  before(async () => {
    second = await startMariaDbServer();
    first = await createTestDatabases(1);
    onSecond = await createTestDatabases(1, { baseUrl: second.url });
    sql = await mysql.createConnection(onSecond.urls[0]!);
    for (const model of ['rate', 'fare']) {
      for (const shard of [2, 3]) await sql.query(gemPrimaryIndexSql(model, shard));
    }
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: second.port } });
    const proxied = new URL(onSecond.urls[0]!);
    proxied.host = proxy.address;
    const open = (options: { logger?: Logger } = {}) =>
      startStoreFixture({
        partitionUrls: [first.urls[0]!, proxied.toString()],
        namespace: NS,
        shardsCount: SHARDS,
        ...options,
      });
    // Both start before the define: the other learns of the models from the models table.
    definer = await open();
    other = await open({ logger });
  });
  after(async () => {
    await other?.close();
    await definer?.close();
    await sql?.end();
    await proxy?.close();
    await first?.drop();
    await onSecond?.drop();
    await second?.destroy();
  });

  const put = (store: StoreFixture, model: string, hotelId: number) =>
    store.api.put({ model, values: pack(values(hotelId)), requestId: requestId() });

  it('reads their columns again once it is back, and checks creates against them', async () => {
    await definer.api.defineModel({ model: RATE_MODEL });
    await definer.api.defineModel({ model: { ...RATE_MODEL, name: 'fare' } });
    expect((await rejection(put(definer, 'rate', TOO_WIDE))).details).to.match(
      /does not fit the column/,
    );

    proxy.setFaults({ refuseConnections: true });
    proxy.resetAll();
    // Partition 0 serves both models meanwhile; partition 1's columns could not be read.
    const fareOnFirst = await put(other, 'fare', 1);
    await put(other, 'rate', 1);
    for (const model of ['rate', 'fare']) {
      expect(logsOf(model, 'warn').map((entry) => entry.fields?.partition)).to.deep.equal([1]);
    }
    expect((await rejection(put(other, 'rate', TOO_WIDE))).code).to.equal(status.UNAVAILABLE);

    proxy.setFaults({});
    // Any use of a model reads its tables again, in the background.
    await other.api.getCell({ model: 'fare', uuid: fareOnFirst.uuid, cell: '' });
    while (logsOf('fare', 'info').length === 0) await new Promise((r) => setTimeout(r, 20));
    // A create that writes there waits for them.
    for (const model of ['fare', 'rate']) {
      const error = await rejection(put(other, model, TOO_WIDE));
      expect(error.code, error.details).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(
        new RegExp(
          `^values: hotel_id ${TOO_WIDE} does not fit the column of index table ${primaryIndex(model, 2)} \\(int\\(11\\)`,
        ),
      );
      expect(logsOf(model, 'info').map((entry) => entry.message)).to.deep.equal([
        'read the columns of a model at last',
      ]);
      expect((await put(other, model, 2_000_000_002)).created).to.equal(true);
    }
    const [atLimit] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT uuid FROM \`${primaryIndex('rate', 2)}\` WHERE hotel_id = 2147483647`,
    );
    expect(atLimit, 'no row at INT’s limit').to.deep.equal([]);
  });
});
