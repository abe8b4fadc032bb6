// The Pipeline RPC against a real server over a real MariaDB: calls of the unary methods over
// one stream, each answered with its id exactly as its unary call would be; cancels and
// deadlines per call; the stream's bounds; its end on half-close, on a protocol error and on
// shutdown.
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import {
  Operator,
  PipelineRequest,
  SortOrder,
  StoreClient,
  type WhereRequest,
  encodeMessage,
} from '@shameless/proto';
import { credentials } from '@grpc/grpc-js';
import { Admission } from '../../src/grpc/middleware/admission.js';
import { MAX_ANSWER_HEADER, MAX_MESSAGE_HEADER } from '../../src/grpc/service/pipeline.js';
import { contentTableName } from '../../src/engine/model/tableNames.js';
import { rejection } from '../support/grpcCalls.js';
import { hookedLayer } from '../support/hookedLayer.js';
import { RawPipeline, errorOf, responseOf } from '../support/pipelineClient.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  putRate,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';

const RATE_VALUES = {
  hotel_id: 7,
  room_type: 'double',
  check_in_date: '2026-03-01',
  gateway: 'pegasus',
  discount_type: 'geo',
};

/** Holds a write lock on `uuid`'s content table, from a connection of its own, until released. */
async function lockContentTable(fixture: StoreFixture, uuid: string): Promise<() => Promise<void>> {
  const shard = fixture.engine.findShard({ uuid }).shard;
  const connection = await mysql.createConnection(fixture.partitionUrls[0]!);
  await connection.query(`LOCK TABLES \`${contentTableName('test', 'rate', shard)}\` WRITE`);
  return async () => {
    await connection.query('UNLOCK TABLES');
    await connection.end();
  };
}

/** A call of GetCell: the latest version of `uuid`'s `cell`. */
const getCell = (uuid: string, cell = 'base', model = 'rate') =>
  ({ $case: 'getCell', getCell: { model, uuid, cell, refKey: undefined } }) as const;

/** A call of WriteCell: a new version of `uuid`'s meta cell. */
const writeMeta = (uuid: string, body: Record<string, unknown>) =>
  ({
    $case: 'writeCell',
    writeCell: {
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack(body),
      mode: 0,
      expectedRefKey: undefined,
      requestId: requestId(),
    },
  }) as const;

/** A rate of `hotelId` whose meta cell holds 64 KiB: a GetCell of it answers that much. */
async function rateWithLargeMeta(fixture: StoreFixture, hotelId: number): Promise<string> {
  const uuid = await putRate(fixture.api, hotelId);
  await fixture.api.writeCell({
    model: 'rate',
    uuid,
    cell: 'meta',
    body: pack({ blob: 'y'.repeat(64 * 1024) }),
    mode: 0,
    expectedRefKey: undefined,
    requestId: requestId(),
  });
  return uuid;
}

describe('Pipeline', function () {
  this.timeout(30_000);
  let store: StoreFixture;
  /** Calls each layer saw, as `method/kind`, and how many ran at once at most. */
  const seen: string[] = [];
  let running = 0;
  let mostRunning = 0;
  const watching = hookedLayer({
    before: (context) => {
      seen.push(`${context.method}/${context.kind}`);
      running += 1;
      mostRunning = Math.max(mostRunning, running);
    },
    ended: () => (running -= 1),
  });
  const pipelines: RawPipeline[] = [];
  const open = (metadata?: Record<string, string>) => {
    const pipeline = new RawPipeline(store.api.client, metadata);
    pipelines.push(pipeline);
    return pipeline;
  };

  before(async () => {
    store = await startStoreFixture({ middleware: [watching] });
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());
  beforeEach(() => {
    seen.length = 0;
    mostRunning = 0;
  });
  afterEach(() => {
    for (const pipeline of pipelines.splice(0)) pipeline.stream.cancel();
  });

  it('answers calls of several methods, each as its unary call, through the middleware', async () => {
    const pipeline = open();
    const put = responseOf(
      await pipeline.call({
        $case: 'put',
        put: { model: 'rate', values: pack(RATE_VALUES), requestId: requestId() },
      }),
      'put',
    );
    expect(put.created).to.equal(true);
    const [cell, described, unaryCell] = await Promise.all([
      pipeline.call(getCell(put.uuid)),
      pipeline.call({ $case: 'describeStore', describeStore: {} }),
      store.api.getCell({ model: 'rate', uuid: put.uuid, cell: 'base', refKey: undefined }),
    ]);
    expect(responseOf(cell, 'getCell')).to.deep.equal(unaryCell);
    expect(unpack(responseOf(cell, 'getCell').cell!.body)).to.deep.equal(RATE_VALUES);
    expect(responseOf(described, 'describeStore').shardsCount).to.equal(4);
    expect(seen).to.include.members(['Put/unary', 'GetCell/unary', 'DescribeStore/unary']);
    expect((await pipeline.headers).get(MAX_MESSAGE_HEADER)).to.deep.equal([
      String(16 * 1024 * 1024),
    ]);
  });

  it('answers a Where page whole: the records its stream sends over several messages', async () => {
    const pipeline = open();
    for (let day = 1; day <= 250; day += 1) {
      await store.api.put({
        model: 'rate',
        values: pack({ ...RATE_VALUES, hotel_id: 21, check_in_date: `2026-04-${day}` }),
        requestId: requestId(),
      });
    }
    const query: WhereRequest = {
      model: 'rate',
      index: '',
      conditions: [
        {
          field: 'hotel_id',
          op: Operator.OPERATOR_EQ,
          values: [{ kind: { $case: 'integer', integer: 21n } }],
        },
      ],
      cells: [],
      order: SortOrder.SORT_ORDER_ASC,
      limit: 200,
      pageToken: '',
    };
    const streamed = await store.api.where(query);
    expect(streamed.length, 'messages of the stream').to.be.greaterThan(1);
    const whole = responseOf(await pipeline.call({ $case: 'where', where: query }), 'where');
    expect(whole.records).to.deep.equal(streamed.flatMap((message) => message.records));
    expect(whole.records).to.have.length(200);
    expect(whole.nextPageToken).to.equal(streamed.at(-1)!.nextPageToken).and.not.equal('');
  });

  it("answers a call's error as its unary call's status, and the other calls go on", async () => {
    const pipeline = open();
    const uuid = await putRate(store.api, 11);
    const [badModel, badField, good] = await Promise.all([
      pipeline.call(getCell(uuid, 'base', 'nope')),
      pipeline.call(writeMeta(uuid, { hotel_id: 1 })),
      pipeline.call(getCell(uuid)),
    ]);
    expect(errorOf(badModel)).to.include({ code: status.NOT_FOUND });
    expect(errorOf(badField).code).to.equal(status.INVALID_ARGUMENT);
    expect(errorOf(badField).message).to.match(/hotel_id/);
    expect(errorOf(badField).trailers).to.deep.equal({ 'shameless-field': 'body' });
    expect(responseOf(good, 'getCell').cell?.refKey).to.equal(0);
  });

  it('answers a call that names no method INVALID_ARGUMENT, naming the field', async () => {
    const pipeline = open();
    const answer = await new Promise((resolve) => {
      pipeline.stream.once('data', resolve);
      pipeline.send({ callId: 9, timeoutMs: 0, metadata: {}, call: undefined });
    });
    expect(answer).to.deep.include({ callId: 9 });
    expect(errorOf((answer as { result: never }).result)).to.deep.include({
      code: status.INVALID_ARGUMENT,
      message: "call: set one method's request",
    });
  });

  it('answers a cancelled call CANCELLED at once; a call past its timeout DEADLINE_EXCEEDED and writes nothing', async () => {
    const pipeline = open();
    const uuid = await putRate(store.api, 12);
    const unlock = await lockContentTable(store, uuid);
    const write = (note: string, options = {}) => pipeline.call(writeMeta(uuid, { note }), options);
    try {
      const cancelledId = pipeline.peekId();
      const cancelled = write('cancelled');
      const timedOut = write('late', { timeoutMs: 300 });
      const started = Date.now();
      pipeline.cancel(cancelledId);
      expect(errorOf(await cancelled)).to.include({ code: status.CANCELLED });
      expect(errorOf(await timedOut)).to.include({ code: status.DEADLINE_EXCEEDED });
      expect(Date.now() - started).to.be.within(250, 5000);
    } finally {
      await unlock();
    }
    // The late write was stopped at its deadline: no version of the cell holds it, whatever
    // became of the cancelled one (a cancel, as on a unary call, does not undo work under way).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const shard = store.engine.findShard({ uuid }).shard;
    const log = responseOf(
      await pipeline.call({
        $case: 'fetchLatestCells',
        fetchLatestCells: { model: 'rate', shard, cursor: 0n, limit: 1000 },
      }),
      'fetchLatestCells',
    );
    const notes = log.cells
      .filter((cell) => cell.uuid === uuid && cell.name === 'meta')
      .map((cell) => unpack(cell.body).note);
    expect(notes).to.not.include('late');
  });

  it('runs a call whose timeout_ms lies past 2^31 ms (about 25 days) as a call without one', async () => {
    const pipeline = open();
    const uuid = await putRate(store.api, 19);
    for (const timeoutMs of [2 ** 31, 4_000_000_000]) {
      const answer = await pipeline.call(
        { $case: 'getCells', getCells: { model: 'rate', keys: [{ uuid, cell: 'base' }] } },
        { timeoutMs },
      );
      expect(responseOf(answer, 'getCells').results[0]?.cell?.uuid).to.equal(uuid);
    }
  });

  it('takes a token in the stream metadata for every call, and a call may carry its own', async () => {
    const seenTokens: string[] = [];
    const tokenLayerStore = await startStoreFixture({
      middleware: [
        async function* (request, context, next) {
          seenTokens.push(String(context.metadata.get('authorization')[0]));
          yield* next(request, context);
        },
      ],
    });
    try {
      const tokenPipeline = new RawPipeline(tokenLayerStore.api.client, {
        authorization: 'Bearer stream-token',
      });
      pipelines.push(tokenPipeline);
      await tokenPipeline.call({ $case: 'describeStore', describeStore: {} });
      await tokenPipeline.call(
        { $case: 'describeStore', describeStore: {} },
        { metadata: { authorization: 'Bearer call-token' } },
      );
      await tokenPipeline.call({ $case: 'describeStore', describeStore: {} });
      expect(seenTokens).to.deep.equal([
        'Bearer stream-token',
        'Bearer call-token',
        'Bearer stream-token',
      ]);
    } finally {
      await tokenLayerStore.close();
    }
  });

  it('answers RESOURCE_EXHAUSTED to one answer larger than the client takes, and goes on', async () => {
    const pipeline = open({ [MAX_ANSWER_HEADER]: '2048' });
    const small = await putRate(store.api, 13);
    const large = await putRate(store.api, 14);
    await store.api.writeCell({
      model: 'rate',
      uuid: large,
      cell: 'meta',
      body: pack({ blob: 'x'.repeat(4000) }),
      mode: 0,
      expectedRefKey: undefined,
      requestId: requestId(),
    });
    const get = (uuid: string, cell: string) =>
      pipeline.call({
        $case: 'getCell',
        getCell: { model: 'rate', uuid, cell, refKey: undefined },
      });
    const [tooLarge, fits] = await Promise.all([get(large, 'meta'), get(small, 'base')]);
    expect(errorOf(tooLarge).code).to.equal(status.RESOURCE_EXHAUSTED);
    expect(errorOf(tooLarge).message).to.match(/^Sent message larger than max \(\d+ vs\. 2048\)$/);
    expect(responseOf(fits, 'getCell').cell?.refKey).to.equal(0);
  });

  it('runs at most --max-pipeline-calls calls of a stream at once, and reads on as they end', async () => {
    const bounded = await startStoreFixture({ middleware: [watching], maxPipelineCalls: 3 });
    try {
      await bounded.api.defineModel({ model: RATE_MODEL });
      const uuid = await putRate(bounded.api, 15);
      const unlock = await lockContentTable(bounded, uuid);
      const pipeline = new RawPipeline(bounded.api.client);
      pipelines.push(pipeline);
      mostRunning = 0;
      const answers = Array.from({ length: 10 }, (_, i) => pipeline.call(writeMeta(uuid, { i })));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(running).to.equal(3);
      await unlock();
      const written = await Promise.all(answers);
      const refKeys = written.map((answer) => responseOf(answer, 'writeCell').cell!.refKey);
      expect(refKeys.sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(mostRunning).to.equal(3);
    } finally {
      await bounded.close();
    }
  });

  it('stops reading a client that does not read its answers', async () => {
    const uuid = await rateWithLargeMeta(store, 16);
    const pipeline = open();
    pipeline.stream.pause();
    const sent = 400;
    const answers = Array.from({ length: sent }, () => pipeline.call(getCell(uuid, 'meta')));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const started = seen.filter((call) => call === 'GetCell/unary').length;
    // 512 KiB of answers unsent, the HTTP/2 windows and the calls running: a few dozen at most.
    expect(started).to.be.greaterThan(0).and.lessThan(100);
    pipeline.stream.resume();
    const cells = await Promise.all(answers);
    expect(cells.filter((answer) => answer.$case === 'getCell')).to.have.length(sent);
  });

  it("holds a call's bytes against --max-in-flight-bytes until its answer is sent", async () => {
    const admission = new Admission({
      maxConcurrentCalls: 1000,
      maxOpenStreams: 1000,
      maxInFlightBytes: 1024 * 1024,
      retryPushbackMs: 100,
    });
    const bounded = await startStoreFixture({ middleware: [admission.layer] });
    try {
      await bounded.api.defineModel({ model: RATE_MODEL });
      const uuid = await rateWithLargeMeta(bounded, 20);
      const pipeline = new RawPipeline(bounded.api.client);
      pipelines.push(pipeline);
      // Measured once, so that the calls below each reserve what a 64 KiB answer holds.
      await pipeline.call(getCell(uuid, 'meta'));
      pipeline.stream.pause();
      const answers = Array.from({ length: 100 }, () => pipeline.call(getCell(uuid, 'meta')));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // The answers not taken hold their bytes: the bound is reached, and others are refused.
      const held = admission.inFlight.bytes;
      expect(held).to.be.greaterThan(512 * 1024);
      const refused = await rejection(bounded.api.getCell(getCell(uuid, 'meta').getCell));
      expect(refused.code).to.equal(status.RESOURCE_EXHAUSTED);
      pipeline.stream.resume();
      const outcomes = await Promise.all(answers);
      expect(outcomes.filter((answer) => answer.$case === 'getCell').length).to.be.greaterThan(0);
      for (const answer of outcomes) {
        if (answer.$case === 'error') expect(answer.error.code).to.equal(status.RESOURCE_EXHAUSTED);
      }
      expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
    } finally {
      await bounded.close();
    }
  });

  it('ends OK once the client has half-closed and every call is answered', async () => {
    const pipeline = open();
    const uuid = await putRate(store.api, 17);
    const answers = Array.from({ length: 20 }, () => pipeline.call(getCell(uuid)));
    pipeline.end();
    expect(await Promise.all(answers)).to.have.length(20);
    expect((await pipeline.status).code).to.equal(status.OK);
  });

  it('names the field of a stream-ending INVALID_ARGUMENT in the shameless-field trailer', async () => {
    const raw = store.api.client.makeBidiStreamRequest(
      '/shameless.v1.Store/Pipeline',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      new Metadata(),
    );
    raw.on('data', () => {});
    raw.on('error', () => {});
    const ended = new Promise<StatusObject>((resolve) => raw.once('status', resolve));
    raw.write(Buffer.from([0x08, 0xff]));
    const malformed = await ended;
    expect(malformed.code).to.equal(status.INVALID_ARGUMENT);
    expect(malformed.metadata.get('shameless-field')).to.deep.equal(['request']);

    const uuid = await putRate(store.api, 19);
    const unlock = await lockContentTable(store, uuid);
    try {
      const pipeline = open();
      void pipeline.call(getCell(uuid), {}, 6);
      void pipeline.call(getCell(uuid), {}, 6);
      const reused = await pipeline.status;
      expect(reused.code).to.equal(status.INVALID_ARGUMENT);
      expect(reused.metadata.get('shameless-field')).to.deep.equal(['call_id']);
    } finally {
      await unlock();
    }
  });

  it('ends INVALID_ARGUMENT for a message that is not a PipelineRequest, or an id in use', async () => {
    const client = store.api.client;
    const raw = client.makeBidiStreamRequest(
      '/shameless.v1.Store/Pipeline',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      new Metadata(),
    );
    raw.on('data', () => {});
    const ended = new Promise<{ code: number; details: string }>((resolve) =>
      raw.once('status', resolve),
    );
    raw.on('error', () => {});
    raw.write(Buffer.from([0x08, 0xff]));
    const malformed = await ended;
    expect(malformed.code).to.equal(status.INVALID_ARGUMENT);
    expect(malformed.details).to.match(/not a valid PipelineRequest/);

    const uuid = await putRate(store.api, 18);
    const unlock = await lockContentTable(store, uuid);
    try {
      const pipeline = open();
      const call = getCell(uuid);
      void pipeline.call(call, {}, 5);
      void pipeline.call(call, {}, 5);
      const reused = await pipeline.status;
      expect(reused.code).to.equal(status.INVALID_ARGUMENT);
      expect(reused.details).to.equal('call_id 5 is in use by a call not yet answered');
    } finally {
      await unlock();
    }
    // encodeMessage is what the SDK writes: one well-formed request decodes as sent.
    expect(
      PipelineRequest.decode(
        encodeMessage(PipelineRequest, {
          callId: 1,
          timeoutMs: 0,
          metadata: {},
          call: { $case: 'describeStore', describeStore: {} },
        }),
      ).call?.$case,
    ).to.equal('describeStore');
  });

  it('on shutdown answers the calls running, then ends UNAVAILABLE', async () => {
    const stopping = await startStoreFixture();
    await stopping.api.defineModel({ model: RATE_MODEL });
    const uuid = await putRate(stopping.api, 19);
    const client = new StoreClient(stopping.address, credentials.createInsecure());
    try {
      const unlock = await lockContentTable(stopping, uuid);
      const pipeline = new RawPipeline(client);
      const running = pipeline.call(getCell(uuid));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const shutdown = stopping.server.shutdown(10_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await unlock();
      expect(responseOf(await running, 'getCell').cell?.refKey).to.equal(0);
      const ended = await pipeline.status;
      expect(ended.code).to.equal(status.UNAVAILABLE);
      expect(ended.details).to.match(/shutting down/);
      await shutdown;
    } finally {
      client.close();
      await stopping.close();
    }
  });
});
