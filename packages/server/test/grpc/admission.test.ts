// Admission control through a real gRPC server over a real MariaDB: beyond the calls, Each
// streams or bytes in flight it is configured for, a call is refused with RESOURCE_EXHAUSTED and
// a grpc-retry-pushback-ms trailer instead of being taken on; once calls end, calls go through.
import { expect } from 'chai';
import { type ClientReadableStream, type ServiceError, status } from '@grpc/grpc-js';
import {
  EachRequest,
  type EachResponse,
  GetCellsRequest,
  Operator,
  SortOrder,
  WhereManyRequest,
  WriteMode,
} from '@shameless/proto';
import { Admission } from '../../src/grpc/middleware/admission.js';
import { middlewareLayer } from '../../src/grpc/call/middleware.js';
import { messageBytes } from '../../src/grpc/call/messageSize.js';
import { type StoreApi, rejection } from '../support/grpcCalls.js';
import { int } from '../support/indexValues.js';
import { hookedLayer } from '../support/hookedLayer.js';
import { RawPipeline, responseOf } from '../support/pipelineClient.js';
import { sendUnread } from '../support/unreadCall.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  putRate,
  startStoreFixture,
} from '../support/storeFixture.js';

const PUSHBACK_MS = 250;
/** What an Each stream reserves besides its message: 512 KiB unsent, 256 KiB read ahead. */
const EACH_BUFFER_BYTES = 832 * 1024;

function expectBusy(error: ServiceError, limit: string): void {
  expect(error.code, error.details).to.equal(status.RESOURCE_EXHAUSTED);
  expect(error.details).to.contain(limit);
  expect(error.metadata.get('grpc-retry-pushback-ms')).to.deep.equal([String(PUSHBACK_MS)]);
}

/** Replaces the rate's meta cell with a body of about `bytes` bytes of `fill`. */
function writeMeta(api: StoreApi, uuid: string, bytes: number, fill: number) {
  return api.writeCell({
    model: 'rate',
    uuid,
    cell: 'meta',
    body: pack({ blob: Buffer.alloc(bytes, fill) }),
    mode: WriteMode.WRITE_MODE_REPLACE,
    requestId: requestId(),
  });
}

/** Admission with `slots` calls and as many Each streams, and `bytes` in flight. */
function admissionOf(slots: number, bytes: number): Admission {
  return new Admission({
    maxConcurrentCalls: slots,
    maxOpenStreams: slots,
    maxInFlightBytes: bytes,
    retryPushbackMs: PUSHBACK_MS,
  });
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('admission control', function () {
  let store: StoreFixture;
  // Two idle followers and small calls fit; a 600 KiB answer (held twice) beside a follower
  // does not.
  const admission = admissionOf(2, 1792 * 1024);
  // FindShard calls wait here, behind admission, while `held` is pending: calls in progress.
  let held: Promise<void> | undefined;
  const holdFindShard = hookedLayer({
    before: async (context) => {
      if (context.method === 'FindShard') await held;
    },
  });
  let uuid: string;
  /** A content shard without the big cell: a follower of it holds only heartbeats. */
  let emptyShard: number;
  const streams: ClientReadableStream<EachResponse>[] = [];

  /** A follow stream that is in progress on the server once this resolves. */
  async function openFollower(): Promise<void> {
    const stream = store.api.client.each({
      model: 'rate',
      shards: [emptyShard],
      cursors: {},
      follow: true,
      batchSize: 0,
      heartbeatIntervalMs: 50,
    });
    streams.push(stream);
    await new Promise((resolve, reject) => {
      stream.once('data', resolve);
      stream.once('error', reject);
    });
    stream.on('error', () => {}); // its CANCELLED, at the end
  }

  async function closeFollowers(): Promise<void> {
    for (const stream of streams.splice(0)) stream.cancel();
    await until(() => admission.inFlight.streams === 0, 'the followers to close');
  }

  before(async () => {
    store = await startStoreFixture({ middleware: [admission.layer, holdFindShard] });
    await store.api.defineModel({ model: RATE_MODEL });
    uuid = await putRate(store.api, 1);
    emptyShard = (parseInt(uuid.slice(0, 4), 16) + 1) % 4;
    await writeMeta(store.api, uuid, 600 * 1024, 1);
  });
  // Every method the tests call has answered once: calls reserve what it answered, not an even
  // share of the bytes allowed (see admission.ts).
  before(async () => {
    await store.api.describeStore({});
    await store.api.findShard({ key: { $case: 'uuid', uuid } });
    await store.api.getCell({ model: 'rate', uuid, cell: 'base' });
    await openFollower();
    await closeFollowers();
  });
  afterEach(closeFollowers);
  after(() => store?.close());

  it('refuses a call beyond the calls in progress, with the pushback trailer, but not an Each stream', async () => {
    let release = () => {};
    held = new Promise((resolve) => (release = resolve));
    const findShard = () => store.api.findShard({ key: { $case: 'uuid', uuid } });
    const inProgress = [findShard(), findShard()];
    try {
      await until(() => admission.inFlight.calls === 2, 'two calls in progress');
      expectBusy(await rejection(store.api.describeStore({})), '--max-concurrent-calls');
      // Streams have a budget of their own.
      await openFollower();
    } finally {
      release();
    }
    await Promise.all(inProgress);
    expect((await store.api.describeStore({})).shardsCount).to.equal(4);
  });

  it('admits calls while idle followers fill --max-open-streams, refuses one follower more, and takes one again once another closes', async () => {
    await openFollower();
    await openFollower();
    expect(admission.inFlight.streams).to.equal(2);
    expect((await store.api.describeStore({})).shardsCount).to.equal(4);
    const written = await putRate(store.api, 2);
    const read = await store.api.getCell({ model: 'rate', uuid: written, cell: 'base' });
    expect(read.cell?.uuid).to.equal(written);
    const pipeline = new RawPipeline(store.api.client);
    try {
      const answer = await pipeline.call({ $case: 'describeStore', describeStore: {} });
      expect(responseOf(answer, 'describeStore').shardsCount).to.equal(4);
    } finally {
      pipeline.end();
    }

    expectBusy(await rejection(openFollower()), '--max-open-streams');
    streams.shift()!.cancel();
    await until(() => admission.inFlight.streams === 1, 'a follower to close');
    await openFollower();
    expect(admission.inFlight.streams).to.equal(2);
  });

  it('refuses a call that would hold more bytes than allowed while others are in progress', async () => {
    const getBig = () => store.api.getCells({ model: 'rate', keys: [{ uuid, cell: 'meta' }] });
    // Alone, a call always goes: this one teaches the layer what GetCells answers.
    expect((await getBig()).results[0]?.cell?.body.length).to.be.greaterThan(600 * 1024);
    await openFollower();
    // Idle, it still holds what it may buffer at any moment: a client that stops reading
    // makes it hold its messages not yet sent and the cells it read ahead.
    expect(admission.inFlight.bytes).to.be.at.least(EACH_BUFFER_BYTES);
    expectBusy(await rejection(getBig()), '--max-in-flight-bytes');
    // A small call still fits beside the follower.
    expect((await store.api.describeStore({})).shardsCount).to.equal(4);
    await closeFollowers();
    expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
    expect((await getBig()).results).to.have.length(1);
  });

  it('holds a unary answer the client has not taken against the bytes allowed, until it is taken or dropped', async () => {
    const keys = [{ uuid, cell: 'meta' }];
    const getBig = () => store.api.getCells({ model: 'rate', keys });
    expect((await getBig()).results).to.have.length(1);
    const request = GetCellsRequest.encode({ model: 'rate', keys }).finish();
    const untilHeld = async () => {
      while (admission.inFlight.bytes < 600 * 1024) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    for (const end of ['read', 'cancel'] as const) {
      const unread = sendUnread(store.address, '/shameless.v1.Store/GetCells', request);
      await untilHeld();
      // The answer is made and waits for the client's window: its call and bytes still count.
      expect(admission.inFlight.calls).to.equal(1);
      expectBusy(await rejection(getBig()), '--max-in-flight-bytes');
      if (end === 'read') expect(await unread.read()).to.equal(String(status.OK));
      else unread.cancel();
      while (admission.inFlight.calls > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
      expect((await getBig()).results).to.have.length(1);
    }
  });

  it('holds an unread WhereMany answer against the bytes allowed, as it holds a GetCells one', async () => {
    const query = {
      model: 'rate',
      index: '',
      conditions: [{ field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(1)] }],
      cells: ['meta'],
      order: SortOrder.SORT_ORDER_ASC,
      limit: 0,
      pageToken: '',
    };
    // Alone, a call always goes: this one teaches the layer what WhereMany answers.
    expect((await store.api.whereMany([query])).pages[0]!.records).to.have.length(1);
    const request = WhereManyRequest.encode({ queries: [query] }).finish();
    const unread = sendUnread(store.address, '/shameless.v1.Store/WhereMany', request);
    const until = Date.now() + 3000;
    while (admission.inFlight.bytes < 600 * 1024 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(admission.inFlight.calls).to.equal(1);
    expect(admission.inFlight.bytes, 'bytes held for the unread answer').to.be.at.least(600 * 1024);
    expectBusy(
      await rejection(store.api.getCells({ model: 'rate', keys: [{ uuid, cell: 'meta' }] })),
      '--max-in-flight-bytes',
    );
    unread.cancel();
    while (admission.inFlight.calls > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
  });
});

describe('admission of an Each stream whose client does not read', function () {
  let store: StoreFixture;
  const admission = admissionOf(8, 1792 * 1024);
  // Behind admission: the bytes of the Each messages the server has made.
  let produced = 0;
  const countEach = middlewareLayer(
    async function* (request, context, next) {
      for await (const message of next(request, context)) {
        if (context.method === 'Each') produced += messageBytes(message);
        yield message;
      }
    },
    (request, context, next, deliver) => next(request, context, deliver),
  );
  const CELLS = 24;
  const CELL_BYTES = 64 * 1024;
  let shard: number;
  let emptyShard: number;

  before(async () => {
    store = await startStoreFixture({ middleware: [admission.layer, countEach] });
    await store.api.defineModel({ model: RATE_MODEL });
    const uuid = await putRate(store.api, 1);
    shard = parseInt(uuid.slice(0, 4), 16) % 4;
    emptyShard = (shard + 1) % 4;
    for (let version = 0; version < CELLS; version++) {
      await writeMeta(store.api, uuid, CELL_BYTES, version);
    }
  });
  after(() => store?.close());

  it('counts what the stream buffers, and refuses another stream rather than holding more', async () => {
    const request = EachRequest.encode({
      model: 'rate',
      shards: [shard],
      cursors: {},
      follow: true,
      batchSize: 0,
      heartbeatIntervalMs: 0,
    }).finish();
    const unread = sendUnread(store.address, '/shameless.v1.Store/Each', request);
    try {
      await until(() => admission.inFlight.streams === 1, 'the stream to be admitted');
      // The server stops making messages once the client's window and the stream's send buffer
      // are full, well before the end of the shard.
      let before = -1;
      while (produced !== before) {
        before = produced;
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(produced)
        .to.be.greaterThan(0)
        .and.below(CELLS * CELL_BYTES);
      // What it made and the client's HTTP/2 windows (64 KiB each) did not take is counted, as
      // is all it may buffer.
      const held = admission.inFlight.bytes;
      expect(held).to.be.at.least(produced - 128 * 1024);
      expect(held).to.be.at.least(EACH_BUFFER_BYTES);
      expectBusy(
        await rejection(store.api.each({ model: 'rate', shards: [emptyShard] })),
        '--max-in-flight-bytes',
      );
      expect((await store.api.describeStore({})).shardsCount).to.equal(4);
    } finally {
      unread.cancel();
    }
    await until(() => admission.inFlight.streams === 0, 'the stream to end');
    expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
    expect(await store.api.each({ model: 'rate', shards: [emptyShard] })).to.deep.equal([]);
  });
});

describe('admission control on a cold start', function () {
  let store: StoreFixture;
  // One GetCells answer (3 cells, held twice) is about 3.6 MiB: two do not fit in 4 MiB.
  const coldAdmission = () => admissionOf(64, 4 * 1024 * 1024);
  /** A new Admission per test: no method has answered through it yet. */
  let admission = coldAdmission();
  const layer = middlewareLayer(
    (request, context, next) => admission.layer(request, context, next),
    (request, context, next, deliver) => admission.layer.unary!(request, context, next, deliver),
  );
  // Behind admission: how many admitted calls run at once, each held `holdMs` first.
  let holdMs = 0;
  let running = 0;
  let mostRunning = 0;
  const counter = hookedLayer({
    before: async () => {
      running += 1;
      mostRunning = Math.max(mostRunning, running);
      await new Promise((resolve) => setTimeout(resolve, holdMs));
    },
    ended: () => (running -= 1),
  });
  const BIG_CELL_BYTES = 600 * 1024;
  const uuids: string[] = [];

  before(async () => {
    store = await startStoreFixture({ middleware: [layer, counter] });
    await store.api.defineModel({ model: RATE_MODEL });
    for (let hotel = 1; hotel <= 3; hotel++) {
      const uuid = await putRate(store.api, hotel);
      uuids.push(uuid);
      await writeMeta(store.api, uuid, BIG_CELL_BYTES, hotel);
    }
  });
  beforeEach(() => {
    admission = coldAdmission();
    holdMs = 0;
    mostRunning = 0;
  });
  after(() => store?.close());

  it('bounds a first burst of large GetCells: some refused with the pushback trailer, the rest OK', async () => {
    const keys = uuids.map((uuid) => ({ uuid, cell: 'meta' }));
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () =>
        store.api.getCells({ model: 'rate', keys }).then(
          (answer) => {
            expect(answer.results.map((result) => result.cell?.body.length)).to.have.length(3);
            return undefined;
          },
          (error: ServiceError) => error,
        ),
      ),
    );
    const refused = outcomes.filter((outcome) => outcome !== undefined);
    for (const error of refused) expectBusy(error, '--max-in-flight-bytes');
    expect(refused.length).to.be.within(1, 7);
    expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
  });

  it('takes a first burst of small Puts whole', async () => {
    const created = await Promise.all(
      Array.from({ length: 48 }, (_, index) => putRate(store.api, 100 + index)),
    );
    expect(new Set(created).size).to.equal(48);
    expect(admission.inFlight).to.deep.equal({ calls: 0, streams: 0, bytes: 0 });
  });

  it('lets a first call that fails hand its turn to a waiting call', async () => {
    const unknownModel = () => store.api.getCells({ model: 'nope', keys: [] });
    const known = () =>
      store.api.getCells({ model: 'rate', keys: [{ uuid: uuids[0]!, cell: 'meta' }] });
    const [failed, answered] = await Promise.all([rejection(unknownModel()), known()]);
    expect(failed.code, failed.details).to.not.equal(status.RESOURCE_EXHAUSTED);
    expect(answered.results).to.have.length(1);
  });

  it('lets a cold burst of failing calls run together once the first has failed', async () => {
    holdMs = 30;
    const absent = () =>
      store.api.getCell({ model: 'rate', uuid: uuids[0]!, cell: 'meta', refKey: 99 });
    const errors = await Promise.all(Array.from({ length: 8 }, () => rejection(absent())));
    for (const error of errors) expect(error.code, error.details).to.equal(status.NOT_FOUND);
    // The first call pilots alone; a pilot that fails must not make each waiter pilot in turn.
    expect(mostRunning).to.be.greaterThan(1);
  });
});
