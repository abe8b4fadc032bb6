// Every refusal answers the status the proto's table promises, naming the field, before any
// SQL: cells past max_cell_bytes, malformed messages, unknown enum values, empty model names,
// shards that do not exist, and queries or batches past the configured caps.
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { Metadata, type ServiceError, type StatusObject, status } from '@grpc/grpc-js';
import { Operator, SortOrder, WhereRequest, WriteMode } from '@shameless/proto';
import { type StoreApi, collect, connectStore, rejection } from '../support/grpcCalls.js';
import { int, str } from '../support/indexValues.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  putRate,
  startStoreFixture,
} from '../support/storeFixture.js';

/** A MessagePack map {b: <bin of the size that makes the whole map `total` bytes>}. */
function mapOfSize(total: number): Buffer {
  const header = Buffer.from([0x81, 0xa1, 0x62, 0xc6, 0, 0, 0, 0]);
  header.writeUInt32BE(total - header.length, 4);
  return Buffer.concat([header, Buffer.alloc(total - header.length, 7)]);
}

/** A write of the test record's meta cell. */
const metaWrite = (uuid: string, body: Buffer, mode = WriteMode.WRITE_MODE_REPLACE) => ({
  model: 'rate',
  uuid,
  cell: 'meta',
  body,
  mode,
  requestId: requestId(),
});

function expectInvalid(error: ServiceError, field: string): void {
  expect(error.code, error.details).to.equal(status.INVALID_ARGUMENT);
  expect(error.details).to.contain(field);
  expect(error.metadata.get('shameless-field')).to.deep.equal([field]);
}

describe('Exact statuses', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let big: StoreApi;
  let uuid: string;
  let maxCellBytes: number;

  before(async () => {
    store = await startStoreFixture({
      shardsCount: 4,
      queryLimits: {
        maxConditions: 4,
        maxInValues: 10,
        maxPageRecords: 50,
        maxBatchKeys: 20,
        maxPutBatch: 5,
      },
    });
    big = connectStore(store.address, {
      channelOptions: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
    });
    await store.api.defineModel({ model: RATE_MODEL });
    uuid = await putRate(store.api, 1);
    maxCellBytes = (await store.api.describeStore({})).maxCellBytes;
  });
  after(async () => {
    big?.close();
    await store?.close();
  });

  describe('the largest cell', () => {
    it('is stated in DescribeStore from max_allowed_packet, at most a MEDIUMBLOB', async () => {
      const connection = await mysql.createConnection(store.partitionUrls[0]!);
      const [rows] = await connection.query('SELECT @@max_allowed_packet AS packet');
      await connection.end();
      const packet = Number((rows as { packet: number }[])[0]!.packet);
      expect(maxCellBytes).to.equal(
        Math.min(16 * 1024 * 1024 - 1, Math.floor((packet - 4096) / 2)),
      );
      expect(maxCellBytes).to.be.greaterThan(1024 * 1024);
    });

    it('is stored at exactly max_cell_bytes and read back whole', async () => {
      const body = mapOfSize(maxCellBytes);
      await big.writeCell(metaWrite(uuid, body));
      const { cell } = await big.getCell({ model: 'rate', uuid, cell: 'meta' });
      expect(cell?.body.equals(body)).to.equal(true);
    });

    it('is INVALID_ARGUMENT one byte past it, for WriteCell, WriteCells, Put and PutMany', async () => {
      const body = mapOfSize(maxCellBytes + 1);
      const write = metaWrite(uuid, body);
      expectInvalid(await rejection(big.writeCell(write)), 'body');
      expectInvalid(await rejection(big.writeCells({ writes: [write] })), 'writes[0].body');
      const put = { model: 'rate', values: body, requestId: requestId() };
      expectInvalid(await rejection(big.put(put)), 'values');
      expectInvalid(await rejection(big.putMany({ puts: [put] })), 'puts[0].values');
    });

    it('refuses a merge whose result would pass it, naming the body', async () => {
      const half = mapOfSize(Math.ceil(maxCellBytes / 2) + 16);
      await big.writeCell(metaWrite(uuid, half));
      const other = Buffer.concat([Buffer.from([0x81, 0xa1, 0x63]), half.subarray(3)]);
      const error = await rejection(
        big.writeCell(metaWrite(uuid, other, WriteMode.WRITE_MODE_MERGE)),
      );
      expectInvalid(error, 'body');
      expect(error.details).to.contain('merged');
    });
  });

  it('answers a request that is not a valid message with INVALID_ARGUMENT', async () => {
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    const error = await new Promise<ServiceError>((resolve, reject) =>
      store.api.client.makeUnaryRequest(
        '/shameless.v1.Store/GetCell',
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        garbage,
        new Metadata(),
        { deadline: Date.now() + 10_000 },
        (callError) => (callError ? resolve(callError) : reject(new Error('accepted garbage'))),
      ),
    );
    expectInvalid(error, 'request');
    expect(error.details).to.contain('GetCellRequest');
  });

  it('answers a string field that is not UTF-8 as a message that is not valid', async () => {
    // A record whose room_type is U+FFFD, which a decoder substitutes for a byte that is not
    // UTF-8: a query holding such a byte must not find it.
    await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: 1,
        room_type: '\uFFFD',
        check_in_date: '2026-01-01',
        gateway: 'pegasus',
        discount_type: 'geo',
      }),
      requestId: requestId(),
    });
    const query = Buffer.from(
      WhereRequest.encode({
        model: 'rate',
        index: '',
        conditions: [
          { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(1)] },
          { field: 'room_type', op: Operator.OPERATOR_EQ, values: [str('~')] },
        ],
        cells: [],
        order: SortOrder.SORT_ORDER_ASC,
        limit: 0,
        pageToken: '',
      }).finish(),
    );
    query[query.indexOf('~')] = 0xff;
    const stream = store.api.client.makeServerStreamRequest(
      '/shameless.v1.Store/Where',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      query,
      new Metadata(),
    );
    stream.on('data', () => {});
    stream.on('error', () => {});
    const ended = await new Promise<StatusObject>((resolve) => stream.once('status', resolve));
    expect(ended.code, ended.details).to.equal(status.INVALID_ARGUMENT);
    expect(ended.metadata.get('shameless-field')).to.deep.equal(['request']);
    expect(ended.details).to.contain('WhereRequest');
  });

  describe('unknown enum values', () => {
    it('refuses a Where order, a condition operator and a WriteCell mode it does not know', async () => {
      const shardCondition = { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(1)] };
      expectInvalid(
        await rejection(store.api.where({ conditions: [shardCondition], order: 5 as SortOrder })),
        'order',
      );
      expectInvalid(
        await rejection(
          store.api.where({
            conditions: [
              shardCondition,
              { field: 'room_type', op: 42 as Operator, values: [str('x')] },
            ],
          }),
        ),
        'conditions[1].op',
      );
      expectInvalid(
        await rejection(
          store.api.whereMany([{ conditions: [shardCondition], order: 9 as SortOrder }]),
        ),
        'queries[0].order',
      );
      expectInvalid(
        await rejection(store.api.writeCell(metaWrite(uuid, pack({}), 7 as WriteMode))),
        'mode',
      );
    });
  });

  it('refuses an empty model on every RPC that names one, naming the field', async () => {
    const write = {
      model: '',
      uuid,
      cell: 'meta',
      body: pack({}),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    };
    const put = { model: '', values: pack({ hotel_id: 1 }), requestId: requestId() };
    const calls: [() => Promise<unknown>, string][] = [
      [() => store.api.put(put), 'model'],
      [() => store.api.putMany({ puts: [put] }), 'puts[0].model'],
      [() => store.api.writeCell(write), 'model'],
      [() => store.api.writeCells({ writes: [write] }), 'writes[0].model'],
      [() => store.api.getCell({ model: '', uuid, cell: '' }), 'model'],
      [() => store.api.getCells({ model: '', keys: [{ uuid, cell: '' }] }), 'model'],
      [() => store.api.previous({ model: '', uuid, cell: '', refKey: 1 }), 'model'],
      [() => store.api.where({ model: '' }), 'model'],
      [() => store.api.whereMany([{ model: '' }]), 'queries[0].model'],
      [() => store.api.fetchLatestCells({ model: '', shard: 0, cursor: 0n, limit: 0 }), 'model'],
      [() => store.api.each({ model: '' }), 'model'],
    ];
    for (const [call, field] of calls) expectInvalid(await rejection(call()), field);
  });

  it('refuses an Each cursor or shard that does not exist', async () => {
    expectInvalid(await rejection(store.api.each({ cursors: { 9: 0n } })), 'cursors[9]');
    expectInvalid(await rejection(store.api.each({ shards: [1, 4] })), 'shards[1]');
    // A shard listed twice is read once, but a bad one after it is named where it was sent.
    expectInvalid(await rejection(store.api.each({ shards: [1, 1, 2, 9] })), 'shards[3]');
    expect(
      await collect(
        store.api.client.each({
          model: 'rate',
          shards: [],
          cursors: { 3: 0n },
          follow: false,
          batchSize: 0,
          heartbeatIntervalMs: 0,
        }),
      ),
    ).to.be.an('array');
  });

  describe('query cost caps', () => {
    const shardCondition = { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(1)] };

    it('refuses more conditions per Where than the cap, stating it', async () => {
      const conditions = [
        shardCondition,
        ...Array.from({ length: 4 }, () => ({
          field: 'room_type',
          op: Operator.OPERATOR_NE,
          values: [str('x')],
        })),
      ];
      const error = await rejection(store.api.where({ conditions }));
      expectInvalid(error, 'conditions');
      expect(error.details).to.contain('at most 4');
      expect(await store.api.where({ conditions: conditions.slice(0, 4) })).to.have.length(1);
    });

    it('refuses more IN values than the cap', async () => {
      const values = Array.from({ length: 11 }, (_, i) => str(`t${i}`));
      const error = await rejection(
        store.api.where({
          conditions: [shardCondition, { field: 'room_type', op: Operator.OPERATOR_IN, values }],
        }),
      );
      expectInvalid(error, 'conditions[1].values');
      expect(error.details).to.contain('10');
    });

    it('refuses pages, batches and keys past their caps', async () => {
      expectInvalid(
        await rejection(store.api.where({ conditions: [shardCondition], limit: 51 })),
        'limit',
      );
      expectInvalid(
        await rejection(
          store.api.fetchLatestCells({ model: 'rate', shard: 0, cursor: 0n, limit: 51 }),
        ),
        'limit',
      );
      expectInvalid(await rejection(store.api.each({ batchSize: 51 })), 'batch_size');
      const keys = Array.from({ length: 21 }, () => ({ uuid, cell: '' }));
      const error = await rejection(store.api.getCells({ model: 'rate', keys }));
      expectInvalid(error, 'keys');
      expect(error.details).to.contain('at most 20');
      const puts = Array.from({ length: 6 }, () => ({
        model: 'rate',
        values: pack({}),
        requestId: requestId(),
      }));
      expectInvalid(await rejection(store.api.putMany({ puts })), 'puts');
      const writes = Array.from({ length: 21 }, () => metaWrite(uuid, pack({})));
      expectInvalid(await rejection(store.api.writeCells({ writes })), 'writes');
      expect(await store.api.getCells({ model: 'rate', keys: keys.slice(1) })).to.have.property(
        'results',
      );
    });
  });
});
