// A call its client cancels stops its work in the engine: a read not yet sent is never sent,
// and a write that has not joined a transaction is never written; a write already sent
// commits whole, cancelled or not. Statements are held up by a table lock taken from a
// connection of the test's own, and seen (or not) in MariaDB's process list.
import { expect } from 'chai';
import { type ClientUnaryCall, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { Operator, SortOrder, WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import {
  PRIMARY_INDEX,
  contentTableName,
  indexTableName,
} from '../../src/engine/model/tableNames.js';
import { int } from '../support/indexValues.js';
import { RawPipeline, errorOf, responseOf } from '../support/pipelineClient.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  putRate,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Pipeline call of GetCell: the latest version of `uuid`'s base cell. */
const pipelinedGetCell = (uuid: string) =>
  ({ $case: 'getCell', getCell: { model: 'rate', uuid, cell: '', refKey: undefined } }) as const;

/** Waits until `ready` holds, checking every 20 ms; fails after `ms`. */
async function until(ready: () => Promise<boolean> | boolean, what: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('cancelled calls', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let sql: mysql.Connection;
  /** Two records whose content lives in different shards (tables). */
  let x: string;
  let y: string;
  /** The hotel of y's record. */
  let yHotel: number;

  before(async () => {
    // One connection per partition: a read held up by a lock keeps every other one waiting.
    store = await startStoreFixture({ poolSize: 1 });
    await store.api.defineModel({ model: RATE_MODEL });
    sql = await mysql.createConnection(store.partitionUrls[0]!);
    x = await putRate(store.api, 1);
    const shardOf = (uuid: string) => store.engine.findShard({ uuid }).shard;
    for (let hotel = 2; y === undefined || shardOf(y) === shardOf(x); hotel++) {
      yHotel = hotel;
      y = await putRate(store.api, hotel);
    }
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  /** Holds a write lock on `table` until the returned function is called. */
  async function lockTable(table: string): Promise<() => Promise<void>> {
    const connection = await mysql.createConnection(store.partitionUrls[0]!);
    await connection.query(`LOCK TABLES \`${table}\` WRITE`);
    return async () => {
      await connection.query('UNLOCK TABLES');
      await connection.end();
    };
  }

  /** The content table of `uuid`'s record. */
  const contentOf = (uuid: string) =>
    contentTableName('test', 'rate', store.engine.findShard({ uuid }).shard);

  /** Holds a write lock on the content table of `uuid` until the returned function is called. */
  const lockContent = (uuid: string) => lockTable(contentOf(uuid));

  /**
   * How many statements other than this test's own are running with `text` in them: a table's
   * name, which a read shows in the process list whether sent as text or prepared (a prepared
   * read shows its placeholders, not the uuid it reads).
   */
  async function running(text: string): Promise<number> {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST
        WHERE ID <> CONNECTION_ID() AND INFO LIKE ?`,
      [`%${text}%`],
    );
    return Number(rows[0]!.n);
  }

  const pool = () => store.engine.partitionActivity()[0]!.pool;
  const writes = () => store.engine.partitionActivity()[0]!.writes;

  /**
   * Once the connection a read of `what` (a table) waited for is free: no
   * statement reading it is running. Sent, it would wait for the lock the test holds on its
   * table, as the read holding the connection did.
   */
  async function expectNeverSentOnceFree(what: string): Promise<void> {
    await until(() => pool().waiting === 0, `the read of ${what} to get the connection`);
    await sleep(300);
    expect(await running(what), `statements reading ${what}`).to.equal(0);
  }

  /** A unary call the test may cancel, and its outcome: undefined when it succeeded. */
  function cancellable(start: (done: (error: ServiceError | null) => void) => ClientUnaryCall): {
    call: ClientUnaryCall;
    outcome: Promise<ServiceError | undefined>;
  } {
    let call!: ClientUnaryCall;
    const outcome = new Promise<ServiceError | undefined>((resolve) => {
      call = start((error) => resolve(error ?? undefined));
    });
    return { call, outcome };
  }
  const options = () => ({ deadline: Date.now() + 30_000 });
  /**
   * A client's cancel ends its call at once, on its side; the server hears of it a moment later
   * (an HTTP/2 RST_STREAM). Unblocked before that, the work would go on as not cancelled: a run
   * of the full suite under load once saw the read sent. Nothing on the server shows a cancel
   * heard, so the test gives it time.
   */
  const serverHearsCancels = () => sleep(250);

  const getCell = (uuid: string) =>
    cancellable((done) =>
      store.api.client.getCell({ model: 'rate', uuid, cell: '' }, new Metadata(), options(), done),
    );

  /** A write of `meta` of `uuid` whose body and request id are `id`. */
  const writeMeta = (uuid: string, id: string) =>
    cancellable((done) =>
      store.api.client.writeCell(
        {
          model: 'rate',
          uuid,
          cell: 'meta',
          body: pack({ id }),
          mode: WriteMode.WRITE_MODE_REPLACE,
          requestId: id,
        },
        new Metadata(),
        options(),
        done,
      ),
    );

  it('never sends a read whose call was cancelled while it waited for a connection', async () => {
    const unlockX = await lockContent(x);
    const unlockY = await lockContent(y);
    try {
      const held = getCell(x);
      await until(
        async () => (await running(contentOf(x))) === 1,
        'the read of x to wait for its lock',
      );
      const cancelled = getCell(y);
      await until(() => pool().waiting > 0, 'the read of y to wait for a connection');
      cancelled.call.cancel();
      expect((await cancelled.outcome)?.code).to.equal(status.CANCELLED);
      await serverHearsCancels();
      await unlockX();
      expect(await held.outcome).to.equal(undefined);
      await expectNeverSentOnceFree(contentOf(y));
    } finally {
      await unlockX().catch(() => {});
      await unlockY();
    }
    expect((await store.api.getCell({ model: 'rate', uuid: y, cell: '' })).cell?.uuid).to.equal(y);
  });

  it('never sends a read whose Pipeline call was cancelled while it waited for a connection', async () => {
    // A Pipeline call's cancellation is a flag until something waits on it (no AbortSignal):
    // the engine must see it as it sees a unary call's.
    const pipeline = new RawPipeline(store.api.client);
    const unlockX = await lockContent(x);
    const unlockY = await lockContent(y);
    try {
      const held = pipeline.call(pipelinedGetCell(x));
      await until(
        async () => (await running(contentOf(x))) === 1,
        'the read of x to wait for its lock',
      );
      const cancelledId = pipeline.peekId();
      const cancelled = pipeline.call(pipelinedGetCell(y));
      await until(() => pool().waiting > 0, 'the read of y to wait for a connection');
      pipeline.cancel(cancelledId);
      expect(errorOf(await cancelled)).to.include({ code: status.CANCELLED });
      await unlockX();
      expect(responseOf(await held, 'getCell').cell?.uuid).to.equal(x);
      await expectNeverSentOnceFree(contentOf(y));
    } finally {
      await unlockX().catch(() => {});
      await unlockY();
      pipeline.stream.cancel();
    }
  });

  it('never sends a read whose Where stream was cancelled while it waited for a connection', async () => {
    // A stream's handler hands its call's context to the engine as a unary one does: the
    // stream's cancel must stop the reads of its page.
    const indexTable = indexTableName(
      'test',
      'rate',
      PRIMARY_INDEX,
      store.engine.findShard({ value: yHotel }).shard,
    );
    const unlockX = await lockContent(x);
    const unlockIndex = await lockTable(indexTable);
    try {
      const held = getCell(x);
      await until(
        async () => (await running(contentOf(x))) === 1,
        'the read of x to wait for its lock',
      );
      const stream = store.api.client.where(
        {
          model: 'rate',
          index: '',
          conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(yHotel)] }],
          cells: [],
          order: SortOrder.SORT_ORDER_ASC,
          limit: 0,
          pageToken: '',
        },
        new Metadata(),
        options(),
      );
      const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
      stream.on('data', () => {});
      await until(() => pool().waiting > 0, "the page's read to wait for a connection");
      stream.cancel();
      expect((await ended).code).to.equal(status.CANCELLED);
      await serverHearsCancels();
      await unlockX();
      expect(await held.outcome).to.equal(undefined);
      await expectNeverSentOnceFree(indexTable);
    } finally {
      await unlockX().catch(() => {});
      await unlockIndex();
    }
    const [page] = await store.api.where({
      conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(yHotel)] }],
    });
    expect(page?.records.map((record) => record.uuid)).to.deep.equal([y]);
  });

  it('never writes a write cancelled before it joined a transaction; one sent commits whole', async () => {
    const ids = ['sent', 'next', 'queued'].map((name) => `${name}-${requestId()}`);
    const unlock = await lockContent(x);
    let sent, queued;
    try {
      sent = writeMeta(x, ids[0]!);
      await until(() => writes().running === 1, 'the first write to run');
      const next = writeMeta(x, ids[1]!);
      await until(() => writes().running === 2, 'the second write to run');
      queued = writeMeta(x, ids[2]!);
      await until(() => writes().waiting === 1, 'the third write to wait');
      sent.call.cancel();
      queued.call.cancel();
      expect((await queued.outcome)?.code).to.equal(status.CANCELLED);
      await serverHearsCancels();
      await unlock();
      expect(await next.outcome).to.equal(undefined);
    } finally {
      await unlock().catch(() => {});
    }
    await until(() => writes().running === 0, 'the writes to end');
    const latest = await store.api.getCell({ model: 'rate', uuid: x, cell: 'meta' });
    expect(latest.cell?.refKey).to.equal(1);
    // The cancelled write sent committed as version 0; the one cancelled in the queue was
    // never written: sent again, its request id makes a new version.
    const first = await store.api.getCell({ model: 'rate', uuid: x, cell: 'meta', refKey: 0 });
    expect(first.cell?.body).to.deep.equal(pack({ id: ids[0] }));
    const again = await store.api.writeCell({
      model: 'rate',
      uuid: x,
      cell: 'meta',
      body: pack({ id: ids[2] }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: ids[2]!,
    });
    expect(again).to.deep.include({ replayed: false });
    expect(again.cell?.refKey).to.equal(2);
  });
});
