// Answers of large cells stay within the largest message the server sends (here 1 MiB) and
// hold no more than that: a Where page or a FetchLatestCells page ends early and goes on from
// its token or cursor, an Each batch travels as several messages, and only a record that alone
// exceeds the bound is refused, RESOURCE_EXHAUSTED, with what to ask instead.
import { status } from '@grpc/grpc-js';
import { FieldType, Operator, WriteMode } from '@shameless/proto';
import { expect } from 'chai';
import { type BodiesRead, countBodiesRead } from '../support/bodiesRead.js';
import { rejection } from '../support/grpcCalls.js';
import { int } from '../support/indexValues.js';
import {
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';

const MESSAGE_BYTES = 1024 * 1024;
const RECORDS = 12;
/** 12 records of 200 KB: 2.4 MB, more than two messages' worth. */
const blob = (i: number) => String.fromCharCode(97 + i).repeat(200_000);

/** A model of records keyed by (group, n), sharded on group. */
const groupedModel = (name: string, cells: string[] = []) => ({
  name,
  primaryIndex: {
    name: '',
    fields: [
      { name: 'group', type: FieldType.FIELD_TYPE_INTEGER },
      { name: 'n', type: FieldType.FIELD_TYPE_INTEGER },
    ],
    shardOn: 'group',
  },
  secondaryIndices: [],
  cells,
});

describe('answers of large cells, within the largest message', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  const uuids: string[] = [];
  before(async () => {
    store = await startStoreFixture({ shardsCount: 1, maxMessageBytes: MESSAGE_BYTES });
    await store.api.defineModel({ model: groupedModel('doc', ['meta']) });
    for (let n = 0; n < RECORDS; n++) {
      const put = await store.api.put({
        model: 'doc',
        values: pack({ group: 1, n, text: blob(n) }),
        requestId: requestId(),
      });
      uuids.push(put.uuid);
    }
  });
  after(() => store?.close());

  const group1 = [{ field: 'group', op: Operator.OPERATOR_EQ, values: [int(1)] }];

  it('Where: pages end where their cells fill the bound; their tokens go on to every record', async () => {
    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const messages = await store.api.where({
        model: 'doc',
        conditions: group1,
        limit: RECORDS,
        pageToken,
      });
      pages += 1;
      seen.push(...messages.flatMap((message) => message.records.map((record) => record.uuid)));
      pageToken = messages[messages.length - 1]!.nextPageToken;
    } while (pageToken && pages < 20);
    expect(seen).to.deep.equal(uuids);
    expect(pages, 'pages of at most 1 MiB each').to.be.within(3, 12);
  });

  it('Where: a record whose cells alone exceed the bound is refused, naming what to ask', async () => {
    const [first] = uuids;
    await store.api.writeCell({
      model: 'doc',
      uuid: first!,
      cell: 'meta',
      body: pack({ text: 'm'.repeat(900_000) }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    });
    const error = await rejection(
      store.api.where({ model: 'doc', conditions: group1, cells: ['base', 'meta'], limit: 1 }),
    );
    expect(error.code).to.equal(status.RESOURCE_EXHAUSTED);
    expect(error.details).to.match(/the answer would exceed \d+ bytes .*fewer cells/);
  });

  it('WhereMany: each page ends within its share of the answer, with a token to go on', async () => {
    const answer = await store.api.whereMany([
      { model: 'doc', conditions: group1, limit: RECORDS },
      { model: 'doc', conditions: group1, limit: RECORDS },
    ]);
    for (const page of answer.pages) {
      expect(page.records.length).to.be.within(1, RECORDS - 1);
      expect(page.nextPageToken).to.not.equal('');
      expect(page.records.map((record) => record.uuid)).to.deep.equal(
        uuids.slice(0, page.records.length),
      );
    }
  });

  it('FetchLatestCells: a page ends within the bound; its cursor reads on to every cell', async () => {
    const ids: bigint[] = [];
    let cursor = 0n;
    let pages = 0;
    for (;;) {
      const page = await store.api.fetchLatestCells({
        model: 'doc',
        shard: 0,
        cursor,
        limit: 1000,
      });
      pages += 1;
      ids.push(...page.cells.map((cell) => cell.id));
      if (page.cells.length === 0 || page.nextCursor >= page.maxId || pages > 30) break;
      cursor = page.nextCursor;
    }
    expect(pages).to.be.greaterThan(2);
    expect(ids).to.have.length(RECORDS + 1); // the records' base cells and one meta cell
    expect(ids).to.deep.equal([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });

  it('Each: a batch larger than a message travels as several, each with its own cursor', async () => {
    const messages = await store.api.each({ model: 'doc', shards: [0], batchSize: 1000 });
    const batches = messages.flatMap((message) =>
      message.event?.$case === 'batch' ? [message.event.batch] : [],
    );
    expect(batches.length).to.be.greaterThan(2);
    for (const batch of batches) {
      expect(batch.cursor).to.equal(batch.cells[batch.cells.length - 1]!.id);
    }
    expect(batches.flatMap((batch) => batch.cells)).to.have.length(RECORDS + 1);
  });
});

/**
 * A store of 20 small notes and RECORDS large docs (the doc of `n` in group `groupOf(n)`),
 * whose reads of bodies are counted; the content shards the docs landed in.
 */
async function startNotesAndDocs(shardsCount: number, groupOf: (n: number) => number) {
  const store = await startStoreFixture({ shardsCount, maxMessageBytes: MESSAGE_BYTES });
  await store.api.defineModel({ model: groupedModel('note') });
  await store.api.defineModel({ model: groupedModel('doc') });
  for (let n = 0; n < 20; n++) {
    await store.api.put({ model: 'note', values: pack({ group: 1, n }), requestId: requestId() });
  }
  const docShards = new Set<number>();
  for (let n = 0; n < RECORDS; n++) {
    const values = pack({ group: groupOf(n), n, text: blob(n) });
    const put = await store.api.put({ model: 'doc', values, requestId: requestId() });
    docShards.add(put.base!.shard);
  }
  return { store, bodies: countBodiesRead(store), docShards };
}

// What cells weighed before is no bound on what a read holds: a server whose streams have
// read small cells, asked for a page or a stream of large ones, reads their bodies only once
// the page is cut to fit (the bound of an answer, or an Each stream's read-ahead).
describe('reads of large cells, whatever cells weighed before', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let bodies: BodiesRead;
  before(async () => {
    ({ store, bodies } = await startNotesAndDocs(1, () => 1));
  });
  beforeEach(async () => {
    // Streams of small cells: what the server learns cells weigh.
    for (let i = 0; i < 3; i++) await store.api.each({ model: 'note', batchSize: 20 });
    bodies.reset();
  });
  after(() => store?.close());

  it('FetchLatestCells reads the bodies of about one answer, and answers them exactly', async () => {
    const page = await store.api.fetchLatestCells({
      model: 'doc',
      shard: 0,
      cursor: 0n,
      limit: RECORDS,
    });
    expect(page.cells.length).to.be.within(1, RECORDS - 1);
    expect(page.cells.map((cell) => unpack(cell.body).text)).to.deep.equal(
      page.cells.map((_, n) => blob(n)),
    );
    expect(bodies.most, 'body bytes read at once').to.be.at.most(MESSAGE_BYTES);
  });

  it('Each reads about 256 KiB of cells ahead, and streams every cell exactly', async () => {
    const messages = await store.api.each({ model: 'doc', batchSize: RECORDS });
    const cells = messages.flatMap((message) =>
      message.event?.$case === 'batch' ? message.event.batch.cells : [],
    );
    expect(cells.map((cell) => unpack(cell.body).text)).to.deep.equal(
      Array.from({ length: RECORDS }, (_, n) => blob(n)),
    );
    // One 200 KB cell past the 256 KiB at most: a read keeps at least one cell.
    expect(bodies.most, 'body bytes read at once').to.be.at.most(256 * 1024 + 200_000);
  });
});

// A round of an Each stream reads the next page of several shards at once, each within its
// share of the read-ahead; a page keeps its first cell past that share, since a message holds
// at least one cell. Were every shard of a round to keep one large cell, the round would hold
// the shards' count of them: only one does, and the others lead the next round.
describe('an Each round over shards whose next cells are all large', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let bodies: BodiesRead;
  let shards: Set<number>;
  before(async () => {
    // 12 records drawn over 4 shards land on all 4 nearly always, on 2 or fewer about once in
    // 700 draws: such a draw is made again (up to five times), since the test needs at least 3.
    for (let draw = 1; ; draw++) {
      ({ store, bodies, docShards: shards } = await startNotesAndDocs(4, (n) => n));
      if (shards.size >= 3 || draw === 5) break;
      await store.close();
    }
  });
  after(() => store?.close());

  it('reads one of them past the shards’ shares, and streams every cell exactly', async () => {
    expect(shards.size, 'content shards holding a record').to.be.at.least(3);
    // Streams of small cells: the server takes cells to be small, and reads every shard at once.
    for (let i = 0; i < 3; i++) await store.api.each({ model: 'note', batchSize: 20 });
    bodies.reset();
    const messages = await store.api.each({ model: 'doc', batchSize: 1 });
    const texts = messages
      .flatMap((message) => (message.event?.$case === 'batch' ? message.event.batch.cells : []))
      .map((cell) => unpack(cell.body).text as string);
    expect(texts.sort()).to.deep.equal(Array.from({ length: RECORDS }, (_, n) => blob(n)).sort());
    expect(bodies.most, 'body bytes read at once').to.be.at.most(256 * 1024 + 200_000);
  });
});
