// Every write locks its content tables' rows in the log-lock table: that lock keeps versions
// contiguous and each shard's log gap-free. A row found missing (a restore that left the table
// out, a manual DELETE) is put back and logged, on both write paths: the usual one rolls back
// and writes again under the restored lock; the one-round-trip one, whose lock statement cannot
// stop its COMMIT, restores the rows once it has committed, so that the next writes lock again.
import { expect } from 'chai';
import { WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import type { Logger } from '../../../src/engine/base/logger.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';

const SHARDS = 2;

describe('log lock rows found missing', function () {
  let store: StoreFixture;
  let sql: mysql.Pool;
  const logged: { level: string; message: string }[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (message) => logged.push({ level: 'warn', message }),
    error: (message) => logged.push({ level: 'error', message }),
  };

  before(async () => {
    // No remembered versions: an append goes the usual way, in two round trips.
    store = await startStoreFixture({ shardsCount: SHARDS, versionCacheBytes: 0, logger });
    await store.api.defineModel({ model: RATE_MODEL });
    sql = mysql.createPool({ uri: store.partitionUrls[0]!, connectionLimit: 1 });
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });
  beforeEach(() => (logged.length = 0));

  const lockTable = () => store.engine.layout.logLocksTable;
  const lockRows = async () => {
    const [rows] = await sql.query(`SELECT table_name FROM \`${lockTable()}\``);
    return (rows as { table_name: string }[]).map((row) => row.table_name).sort();
  };
  const allLockRows = ['test_rate_000000', 'test_rate_000001'];
  const tableOf = (shard: number) => `test_rate_${String(shard).padStart(6, '0')}`;

  it('the usual path puts them back and writes under them', async () => {
    const { uuid } = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 1,
        room_type: 'a',
        check_in_date: 'd',
        gateway: 'g',
        discount_type: 't',
      }),
      requestId: requestId(),
    });
    expect(await lockRows()).to.deep.equal(allLockRows);
    await sql.query(`DELETE FROM \`${lockTable()}\``);

    const written = await store.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ n: 1 }),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId: requestId(),
    });
    expect(written.cell!.refKey).to.equal(0);
    // The table it wrote has its row back; the other waits for a write of its own.
    expect(await lockRows()).to.deep.equal([tableOf(written.cell!.shard)]);
    expect(logged).to.deep.equal([
      { level: 'warn', message: 'log lock rows were missing: restored, the write went on' },
    ]);
  });

  it('a write in one round trip puts them back after its commit, and says so', async () => {
    await sql.query(`DELETE FROM \`${lockTable()}\``);
    // A create goes in one round trip: its lock statement finds no row, and it commits.
    const created = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 2,
        room_type: 'a',
        check_in_date: 'd',
        gateway: 'g',
        discount_type: 't',
      }),
      requestId: requestId(),
    });
    expect(created.created).to.equal(true);
    expect(await lockRows()).to.deep.equal([tableOf(created.base!.shard)]);
    expect(logged.map(({ level }) => level)).to.deep.equal(['error']);
    expect(logged[0]!.message).to.match(/committed without its log lock rows/);
  });
});
