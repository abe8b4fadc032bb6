// SPEC §3 / §4.3, idempotent writes: a write whose response is lost (the server commits, the
// client never hears back) and is retried with the same requestId, while other writers append
// in between, creates exactly one version and the retry gets that version back. The same holds
// for hedged duplicates sent at once to two servers. For WriteCell, and for Put on both its
// create and update paths. Two `shameless serve` processes; server 0 is behind a TCP proxy.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { WriteMode, type PutResponse, type WriteCellResponse } from '@shameless/proto';
import { startTcpProxy, type TcpProxy } from '@shameless/testkit';
import { type StoreApi, connectStore } from '../support/grpcCalls.js';
import { pack, unpack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  RATE,
  rateValues,
  callWithDeadline,
  codeName,
  contentShardOf,
  contentTable,
  forEachConcurrently,
  grpcCode,
  indexTable,
  newRequestId,
  range,
  sleep,
} from './support.js';

const SHARDS = 4;
const LOST_DEADLINE_MS = 1000;

interface Row {
  id: number;
  uuid: string;
  ref_key: number;
  request_id: string | null;
  body: Buffer;
}

describe('consistency: idempotent writes (§4.3)', function () {
  this.timeout(120_000);
  let cluster: ProcessCluster;
  let proxy: TcpProxy;
  /** Server 0 through the proxy. */
  let viaProxy: StoreApi;

  before(async () => {
    cluster = await ProcessCluster.create(SHARDS);
    await Promise.all([cluster.start(0), cluster.start(1)]);
    await cluster.api(0).defineModel({ model: RATE });
    await cluster.api(1).describeStore({});
    const [host, port] = cluster.servers[0]!.address.split(':');
    proxy = await startTcpProxy({ target: { host: host!, port: Number(port) } });
    viaProxy = connectStore(proxy.address);
  });
  after(async () => {
    viaProxy?.close();
    await proxy?.close();
    await cluster?.close();
  });

  const a = () => cluster.api(0);
  const b = () => cluster.api(1);

  const cellRows = (uuid: string, cell: string) =>
    cluster.query<Row[]>(
      `SELECT id, uuid, ref_key, request_id, body FROM \`${contentTable(contentShardOf(uuid, SHARDS))}\` WHERE uuid = ? AND column_name = ? ORDER BY ref_key`,
      [uuid, cell],
    );

  const rowsWithRequestId = async (requestId: string) => {
    const rows: Row[] = [];
    for (const shard of range(SHARDS)) {
      rows.push(
        ...(await cluster.query<Row[]>(
          `SELECT id, uuid, ref_key, request_id, body FROM \`${contentTable(shard)}\` WHERE request_id = ?`,
          [requestId],
        )),
      );
    }
    return rows;
  };

  /** Content rows of records that no primary-index row reaches. */
  const unreachableRows = async () => {
    const reachable = new Set((await cluster.indexRows('primary')).map((row) => String(row.uuid)));
    return (await cluster.contentRows())
      .filter((row) => !reachable.has(row.uuid))
      .map((row) => `${row.shard}:${row.id}:${row.uuid}:${row.cell}:${row.refKey}`);
  };

  /** Waits until the write whose response was lost has committed; returns its row. */
  const committedRow = async (requestId: string): Promise<Row> => {
    for (let attempt = 0; attempt < 100; attempt++) {
      const rows = await rowsWithRequestId(requestId);
      if (rows.length > 0) return rows[0]!;
      await sleep(50);
    }
    throw new Error(`the write ${requestId} never committed`);
  };

  /**
   * Sends a call through the proxy while it drops everything the server sends back: the call
   * reaches the server and commits, and the client never hears back. It gives up at its
   * deadline ('deadline'), or its connection is reset once the write has committed ('reset').
   */
  const withLostResponse = async (
    requestId: string,
    send: (api: StoreApi, deadlineMs: number) => Promise<unknown>,
    ending: 'deadline' | 'reset',
  ) => {
    // The HTTP/2 connection is set up before the fault, so that the request itself goes out.
    await viaProxy.describeStore({});
    proxy.setFaults({ dropServerToClient: true });
    try {
      const call = send(viaProxy, ending === 'deadline' ? LOST_DEADLINE_MS : 30_000).then(
        () => 'answered',
        (error: unknown) => codeName(grpcCode(error)),
      );
      if (ending === 'reset') {
        await committedRow(requestId);
        proxy.resetAll();
      }
      expect(await call, 'the client never hears back').to.equal(
        codeName(ending === 'deadline' ? status.DEADLINE_EXCEEDED : status.UNAVAILABLE),
      );
    } finally {
      // The connection lost bytes: reset it, then let traffic through again.
      proxy.resetAll();
      proxy.setFaults({});
    }
  };

  const writeMeta = (
    api: StoreApi,
    uuid: string,
    body: Record<string, unknown>,
    requestId: string,
  ) =>
    api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack(body),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId,
    });

  /** Other writers append to the record's meta cell through both servers. */
  const otherAppends = (uuid: string, count: number) =>
    Promise.all(
      range(count).map((i) =>
        writeMeta(i % 2 ? a() : b(), uuid, { other: i }, newRequestId('other')),
      ),
    );

  const otherPuts = (hotelId: number, count: number) =>
    Promise.all(
      range(count).map((i) =>
        (i % 2 ? a() : b()).put({
          model: 'rate',
          values: pack(rateValues(hotelId, { other: i })),
          requestId: newRequestId('other-put'),
        }),
      ),
    );

  const createRecord = async (hotelId: number) =>
    (await a().put({ model: 'rate', values: pack(rateValues(hotelId)), requestId: newRequestId() }))
      .uuid;

  it('WriteCell: a lost response retried with its requestId, while others append, makes one version', async () => {
    const uuid = await createRecord(10);
    await otherAppends(uuid, 3);
    const requestId = newRequestId('lost-write');
    const request = {
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ lost: 'write' }),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId,
    };
    await withLostResponse(
      requestId,
      (api, deadline) => callWithDeadline(api, api.client.writeCell, request, deadline),
      'deadline',
    );
    const committed = await committedRow(requestId);
    expect(Number(committed.ref_key)).to.equal(3);

    // Others append in between, then the retries race with more appends.
    await otherAppends(uuid, 4);
    const [retryProxy, retryOther] = await Promise.all([
      viaProxy.writeCell(request),
      b().writeCell(request),
      otherAppends(uuid, 4),
    ]);
    for (const retry of [retryProxy, retryOther]) {
      expect(retry.replayed).to.equal(true);
      expect(retry.cell!.id).to.equal(BigInt(committed.id));
      expect(retry.cell!.refKey).to.equal(3);
      expect(unpack(retry.cell!.body)).to.deep.include({ lost: 'write' });
    }
    expect(await rowsWithRequestId(requestId)).to.have.length(1);
    const rows = await cellRows(uuid, 'meta');
    expect(rows.map((row) => Number(row.ref_key))).to.deep.equal(range(3 + 1 + 4 + 4));
  });

  it('Put, update path: a lost response retried with its requestId, while others put, makes one version', async () => {
    const uuid = await createRecord(11);
    const requestId = newRequestId('lost-update');
    const request = { model: 'rate', values: pack(rateValues(11, { price: 42 })), requestId };
    await withLostResponse(
      requestId,
      (api, deadline) => callWithDeadline(api, api.client.put, request, deadline),
      'deadline',
    );
    const committed = await committedRow(requestId);
    expect(committed.uuid).to.equal(uuid);
    expect(Number(committed.ref_key)).to.equal(1);

    await otherPuts(11, 3);
    const [retryProxy, retryOther] = await Promise.all([
      viaProxy.put(request),
      b().put(request),
      otherPuts(11, 3),
    ]);
    for (const retry of [retryProxy, retryOther]) {
      expect(retry.uuid).to.equal(uuid);
      expect(retry.created).to.equal(false);
      expect(retry.base!.id).to.equal(BigInt(committed.id));
      expect(retry.base!.refKey).to.equal(1);
      expect(unpack(retry.base!.body).price).to.equal(42);
    }
    expect(await rowsWithRequestId(requestId)).to.have.length(1);
    const rows = await cellRows(uuid, 'base');
    expect(rows.map((row) => Number(row.ref_key))).to.deep.equal(range(1 + 1 + 3 + 3));
  });

  it('Put, create path: a lost response (connection reset) retried with its requestId, while others put, makes one record', async () => {
    const requestId = newRequestId('lost-create');
    const request = { model: 'rate', values: pack(rateValues(12, { price: 7 })), requestId };
    await withLostResponse(
      requestId,
      (api, deadline) => callWithDeadline(api, api.client.put, request, deadline),
      'reset',
    );
    const committed = await committedRow(requestId);
    expect(Number(committed.ref_key)).to.equal(0);
    // The create finishes with the primary-index row; wait for it before the others put.
    for (let i = 0; i < 100; i++) {
      const [row] = await cluster.query<{ uuid: string }[]>(
        `SELECT uuid FROM \`${indexTable('primary', 12 % SHARDS)}\` WHERE hotel_id = 12`,
      );
      if (row) break;
      await sleep(50);
    }

    await otherPuts(12, 3);
    const [retryProxy, retryOther] = await Promise.all([
      viaProxy.put(request),
      b().put(request),
      otherPuts(12, 3),
    ]);
    for (const retry of [retryProxy, retryOther]) {
      expect(retry.uuid).to.equal(committed.uuid);
      expect(retry.created).to.equal(true);
      expect(retry.base!.id).to.equal(BigInt(committed.id));
      expect(retry.base!.refKey).to.equal(0);
      expect(unpack(retry.base!.body)).to.deep.include(rateValues(12, { price: 7 }));
    }
    expect(await rowsWithRequestId(requestId)).to.have.length(1);
    const primary = await cluster.query<{ uuid: string }[]>(
      `SELECT uuid FROM \`${indexTable('primary', 12 % SHARDS)}\` WHERE hotel_id = 12`,
    );
    expect(primary.map((row) => row.uuid)).to.deep.equal([committed.uuid]);
    const secondary = await cluster.query<{ uuid: string }[]>(
      `SELECT uuid FROM \`${indexTable('secondary', 12 % SHARDS)}\` WHERE hotel_id = 12`,
    );
    expect(secondary.map((row) => row.uuid)).to.deep.equal([committed.uuid]);
    const rows = await cellRows(committed.uuid, 'base');
    expect(rows.map((row) => Number(row.ref_key))).to.deep.equal(range(1 + 3 + 3));
    // Nothing else was created: every content row belongs to a record the primary index reaches.
    expect(await unreachableRows()).to.deep.equal([]);
  });

  it('hedged duplicates sent at once to two servers make one version each (WriteCell, Put update, Put create)', async () => {
    const uuid = await createRecord(20);
    const hedges = 20;

    // WriteCell: each request twice at once, while other writers append to the same cell.
    const writes: [WriteCellResponse, WriteCellResponse][] = [];
    await Promise.all([
      (async () => {
        for (const i of range(hedges)) {
          const request = {
            model: 'rate',
            uuid,
            cell: 'meta',
            body: pack({ hedge: i }),
            mode: WriteMode.WRITE_MODE_MERGE,
            requestId: newRequestId('hedge-write'),
          };
          writes.push(await Promise.all([a().writeCell(request), b().writeCell(request)]));
        }
      })(),
      otherAppends(uuid, 10),
    ]);
    for (const [first, second] of writes) {
      expect(first.cell!.id).to.equal(second.cell!.id);
      expect(first.cell!.refKey).to.equal(second.cell!.refKey);
      expect([first.replayed, second.replayed].sort()).to.deep.equal([false, true]);
    }
    const meta = await cellRows(uuid, 'meta');
    expect(meta.map((row) => Number(row.ref_key))).to.deep.equal(range(hedges + 10));
    expect(meta.filter((row) => row.request_id?.startsWith('hedge-write'))).to.have.length(hedges);

    // Put, update path.
    const updates: [PutResponse, PutResponse][] = [];
    await Promise.all([
      (async () => {
        for (const i of range(hedges)) {
          const request = {
            model: 'rate',
            values: pack(rateValues(20, { hedge: i })),
            requestId: newRequestId('hedge-update'),
          };
          updates.push(await Promise.all([a().put(request), b().put(request)]));
        }
      })(),
      otherPuts(20, 10),
    ]);
    for (const [first, second] of updates) {
      expect(first.uuid).to.equal(uuid);
      expect(second.uuid).to.equal(uuid);
      expect(first.base!.id).to.equal(second.base!.id);
      expect(first.base!.refKey).to.equal(second.base!.refKey);
      expect([first.created, second.created]).to.deep.equal([false, false]);
    }
    const base = await cellRows(uuid, 'base');
    expect(base.map((row) => Number(row.ref_key))).to.deep.equal(range(1 + hedges + 10));

    // Put, create path: fresh values each time, both copies racing to create the record. A few
    // at a time: many concurrent creates on one server is the pool problem of pool.test.ts.
    const creates: [PutResponse, PutResponse][] = [];
    await forEachConcurrently(range(hedges), 4, async (i) => {
      const request = {
        model: 'rate',
        values: pack(rateValues(100 + i, { hedge: i })),
        requestId: newRequestId('hedge-create'),
      };
      creates[i] = await Promise.all([a().put(request), b().put(request)]);
    });
    for (const [i, [first, second]] of creates.entries()) {
      expect(first.uuid).to.equal(second.uuid);
      expect(first.base!.id).to.equal(second.base!.id);
      expect([first.created, second.created]).to.deep.equal([true, true]);
      const primary = await cluster.query<{ uuid: string }[]>(
        `SELECT uuid FROM \`${indexTable('primary', (100 + i) % SHARDS)}\` WHERE hotel_id = ?`,
        [100 + i],
      );
      expect(primary.map((row) => row.uuid)).to.deep.equal([first.uuid]);
      const rows = await cellRows(first.uuid, 'base');
      expect(rows.map((row) => Number(row.ref_key))).to.deep.equal([0]);
    }
    // No losing copy left a base cell behind under another uuid.
    expect(await unreachableRows()).to.deep.equal([]);
  });
});
