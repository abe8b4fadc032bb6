// Issue 56: a body that a reader would choke on (nested deeper than the gem's msgpack reads,
// holding millions of values, a string that is not UTF-8, a map as a key, a timestamp that is
// none) is refused where it enters, on every write path, with INVALID_ARGUMENT naming the
// limit and the path to the value, and nothing is written.
import { expect } from 'chai';
import { type Metadata, status } from '@grpc/grpc-js';
import { WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import { rejection } from '../support/grpcCalls.js';
import { RawPipeline } from '../support/pipelineClient.js';
import {
  RATE_MODEL,
  type StoreFixture,
  putRate,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';
import { array, fixint, map, object, str } from '../support/msgpackBytes.js';
import { DEFAULT_BODY_LIMITS } from '../../src/engine/base/bodyRules.js';

const SHARDS = 2;
const MAX_VALUES = 10_000;
const DEPTH = DEFAULT_BODY_LIMITS.maxDepth;

/** `levels` levels of one-element arrays around a 1 (one level: the 1 alone). */
const nestedArrays = (levels: number) => Buffer.concat([Buffer.alloc(levels, 0x91), fixint(1)]);
/** `levels` levels of one-entry maps {"k": ...} around an empty map. */
const nestedMaps = (levels: number) =>
  Buffer.concat([
    ...Array.from({ length: levels }, () => Buffer.from([0x81, 0xa1, 0x6b])),
    Buffer.from([0x80]),
  ]);
/** A map of one key `key` whose value is `value`. */
const one = (key: string, value: Buffer) => map([str(key), value]);
/** An array of up to 2^32 - 1 values (array 32). */
const array32 = (values: Buffer[]) => {
  const header = Buffer.from([0xdd, 0, 0, 0, 0]);
  header.writeUInt32BE(values.length, 1);
  return Buffer.concat([header, ...values]);
};

describe('body limits', function () {
  let store: StoreFixture;
  let uuid: string;
  let sql: mysql.Connection;
  let hotel = 100;

  before(async () => {
    store = await startStoreFixture({
      shardsCount: SHARDS,
      bodyLimits: { maxDepth: DEPTH, maxValues: MAX_VALUES },
      // A version written by SQL below must be what the next merge reads.
      versionCacheBytes: 0,
    });
    await store.api.defineModel({ model: RATE_MODEL });
    uuid = await putRate(store.api, hotel++);
    sql = await mysql.createConnection({ uri: store.partitionUrls[0]! });
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  /** Rows of every content table: what any refused write would have added to. */
  async function rowCount(): Promise<number> {
    let total = 0;
    for (let shard = 0; shard < SHARDS; shard++) {
      const [rows] = await sql.query(
        `SELECT COUNT(*) AS n FROM test_rate_${String(shard).padStart(6, '0')}`,
      );
      total += Number((rows as { n: number }[])[0]!.n);
    }
    return total;
  }

  /** Index and content values of a new rate, as MessagePack entries, with `extra` after them. */
  const rateValues = (extra: Record<string, Buffer>) =>
    object({
      hotel_id: fixint(hotel++ % 100),
      room_type: str('1 bed'),
      check_in_date: str('2026-12-01'),
      gateway: str('pegasus'),
      discount_type: str('geo'),
      ...extra,
    });

  const writeCell = (body: Buffer, mode = WriteMode.WRITE_MODE_REPLACE, cell = 'meta') =>
    store.api.writeCell({
      model: 'rate',
      uuid,
      cell,
      body,
      mode,
      requestId: requestId(),
      expectedRefKey: undefined,
    });

  /** Each call is refused INVALID_ARGUMENT matching its pattern, naming its field; none wrote. */
  async function expectRefused(cases: [Promise<unknown>, RegExp, string][]): Promise<void> {
    const errors = (await Promise.all(cases.map(([call]) => rejection(call)))) as {
      code: number;
      details: string;
      metadata: Metadata;
    }[];
    cases.forEach(([, pattern, field], i) => {
      const error = errors[i]!;
      expect(error.code, error.details).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(pattern);
      expect(error.metadata.get('shameless-field')).to.deep.equal([field]);
    });
  }

  it("refuses the issue's cases, 200,000 arrays deep and a merge 100,000 maps deep, writing nothing", async () => {
    const before = await rowCount();
    const more = `…\\(${DEPTH - 8} levels more\\)`;
    await expectRefused([
      [
        writeCell(one('a', nestedArrays(200_000))),
        new RegExp(
          `^body: a(\\[0\\]){7}${more}: nested deeper than ${DEPTH} levels \\(the server's --max-body-depth\\)$`,
        ),
        'body',
      ],
      [
        writeCell(one('a', nestedMaps(100_000)), WriteMode.WRITE_MODE_MERGE),
        new RegExp(`^body: a(\\.k){7}${more}: nested deeper than ${DEPTH} levels`),
        'body',
      ],
      [
        writeCell(one('a', nestedMaps(100_000)), WriteMode.WRITE_MODE_MERGE, 'base'),
        new RegExp(`^body: a(\\.k){7}${more}: nested deeper than ${DEPTH} levels`),
        'body',
      ],
    ]);
    expect(await rowCount()).to.equal(before);
  });

  it('refuses on every write path (Put, PutMany, WriteCells, Pipeline), naming the path', async () => {
    const before = await rowCount();
    // {prices: {20261201: [1, 2, 3, [[[...]]]]}}: the value too deep is under an integer key.
    const day = Buffer.alloc(5, 0xce);
    day.writeUInt32BE(20261201, 1);
    const calendar = map([day, array(fixint(1), fixint(2), fixint(3), nestedArrays(DEPTH))]);
    const prices = one('prices', calendar);
    const pricesPath = `prices\\.20261201\\[3\\](\\[0\\]){5}…\\(${DEPTH - 8} levels more\\)`;
    const deepEnough = nestedArrays(DEPTH);
    const pipeline = new RawPipeline(store.api.client);
    try {
      const piped = await pipeline.call({
        $case: 'writeCell',
        writeCell: {
          model: 'rate',
          uuid,
          cell: 'meta',
          body: prices,
          mode: WriteMode.WRITE_MODE_MERGE,
          requestId: requestId(),
          expectedRefKey: undefined,
        },
      });
      expect(piped.$case).to.equal('error');
      if (piped.$case === 'error') {
        expect(piped.error.code).to.equal(status.INVALID_ARGUMENT);
        expect(piped.error.message).to.match(new RegExp(`^body: ${pricesPath}: nested deeper`));
      }
    } finally {
      pipeline.stream.end();
    }
    await expectRefused([
      [
        store.api.put({
          model: 'rate',
          values: rateValues({ deep: deepEnough }),
          requestId: requestId(),
        }),
        new RegExp(`^values: deep(\\[0\\]){7}…\\(${DEPTH - 8} levels more\\): nested deeper`),
        'values',
      ],
      [
        store.api.putMany({
          puts: [
            { model: 'rate', values: rateValues({}), requestId: requestId() },
            { model: 'rate', values: rateValues({ prices: calendar }), requestId: requestId() },
          ],
        }),
        new RegExp(`^puts\\[1\\]\\.values: ${pricesPath}: nested deeper`),
        'puts[1].values',
      ],
      [
        store.api.writeCells({
          writes: [0, 1, 2].map((i) => ({
            model: 'rate',
            uuid,
            cell: 'meta',
            body: i === 2 ? prices : object({ n: fixint(i) }),
            mode: WriteMode.WRITE_MODE_MERGE,
            requestId: requestId(),
            expectedRefKey: undefined,
          })),
        }),
        new RegExp(`^writes\\[2\\]\\.body: ${pricesPath}: nested deeper than ${DEPTH} levels`),
        'writes[2].body',
      ],
    ]);
    expect(await rowCount()).to.equal(before);
  });

  it('takes a body exactly at the depth and the value count, byte for byte', async () => {
    // The body's map is level 1: its value `a` opens DEPTH - 1 levels more.
    const deepest = one('a', nestedArrays(DEPTH - 1));
    const written = await writeCell(deepest);
    expect(written.cell!.body).to.deep.equal(deepest);
    const read = await store.api.getCell({ model: 'rate', uuid, cell: 'meta', refKey: undefined });
    expect(read.cell!.body).to.deep.equal(deepest);
    // The body, its key `a`, the array and what it holds: MAX_VALUES values.
    const fullest = one('a', array32(Array.from({ length: MAX_VALUES - 3 }, () => fixint(0))));
    expect((await writeCell(fullest)).cell!.body).to.deep.equal(fullest);

    const before = await rowCount();
    await expectRefused([
      [
        writeCell(one('a', nestedArrays(DEPTH))),
        /^body: a(\[0\]){7}…\(\d+ levels more\): nested deeper/,
        'body',
      ],
      [
        writeCell(
          one('a', array32(Array.from({ length: MAX_VALUES - 2 }, () => Buffer.from([0x90])))),
        ),
        new RegExp(
          `^body: holds more than ${MAX_VALUES} values \\(keys, values and items, at any depth; the server's --max-body-values\\)$`,
        ),
        'body',
      ],
    ]);
    expect(await rowCount()).to.equal(before);
  });

  it('refuses what some reader cannot read: a str not UTF-8, a map or array as a key, a timestamp that is none', async () => {
    const before = await rowCount();
    const notUtf8 = Buffer.from([0xa2, 0xff, 0xfe]);
    await expectRefused([
      [
        writeCell(one('names', array(str('ok'), one('x', notUtf8)))),
        /^body: names\[1\]\.x: a string that is not UTF-8 \(send such bytes as a binary\)$/,
        'body',
      ],
      [
        writeCell(map([notUtf8, fixint(1)])),
        /^body: "\uFFFD\uFFFD": a key that is not UTF-8/,
        'body',
      ],
      [writeCell(one('a', map([notUtf8, fixint(1)]))), /^body: a: a key that is not UTF-8/, 'body'],
      [
        writeCell(one('a', map([array(fixint(1)), fixint(2)]))),
        /^body: a: a map key is an array; /,
        'body',
      ],
      [
        writeCell(one('a', map([fixint(1), map([one('k', fixint(1)), fixint(2)])]))),
        /^body: a\.1: a map key is a map; /,
        'body',
      ],
      [
        writeCell(one('at', Buffer.from([0xd4, 0xff, 0x00]))),
        /^body: at: a timestamp \(extension -1\) of 1 bytes; the spec's are 4, 8 or 12$/,
        'body',
      ],
      [
        writeCell(
          one(
            'at',
            Buffer.concat([Buffer.from([0xc7, 12, 0xff, 0x3b, 0x9a, 0xca, 0x00]), Buffer.alloc(8)]),
          ),
        ),
        /^body: at: a timestamp \(extension -1\) of 1000000000 nanoseconds; at most 999999999$/,
        'body',
      ],
    ]);
    expect(await rowCount()).to.equal(before);
    // What readers do take: integer keys (the gem's), another extension, a real timestamp.
    const taken = object({
      prices: map([fixint(1), fixint(2)]),
      ext: Buffer.from([0xd4, 0x05, 0x00]),
      at: Buffer.from([0xd6, 0xff, 0, 0, 0, 1]),
    });
    expect((await writeCell(taken)).cell!.body).to.deep.equal(taken);
  });

  it('merges into a body stored before the limits (by SQL, as the gem could) as it is', async () => {
    const gemRecord = await putRate(store.api, hotel++);
    const table = `test_rate_${String(parseInt(gemRecord.slice(0, 4), 16) % SHARDS).padStart(6, '0')}`;
    const stored = one('a', nestedArrays(200_000));
    await sql.query(
      `INSERT INTO ${table} (uuid, column_name, ref_key, body, created_at) VALUES (?, 'meta', 0, ?, NOW(6))`,
      [gemRecord, stored],
    );
    const merged = await store.api.writeCell({
      model: 'rate',
      uuid: gemRecord,
      cell: 'meta',
      body: object({ b: fixint(2) }),
      mode: WriteMode.WRITE_MODE_MERGE,
      requestId: requestId(),
      expectedRefKey: 0,
    });
    expect(merged.cell!.refKey).to.equal(1);
    // The stored entry keeps its bytes; the patch's key comes after it.
    expect(merged.cell!.body).to.deep.equal(
      Buffer.concat([Buffer.from([0x82]), stored.subarray(1), str('b'), fixint(2)]),
    );
  });

  it('says its limits in DescribeStore', async () => {
    const described = await store.api.describeStore({});
    expect([described.maxBodyDepth, described.maxBodyValues]).to.deep.equal([DEPTH, MAX_VALUES]);
  });

  it('is the same for a put that updates (its values are checked before the lookup)', async () => {
    const values = {
      hotel_id: fixint(7),
      room_type: str('r'),
      check_in_date: str('d'),
      gateway: str('g'),
      discount_type: str('t'),
    };
    await store.api.put({ model: 'rate', values: object(values), requestId: requestId() });
    const before = await rowCount();
    await expectRefused([
      [
        store.api.put({
          model: 'rate',
          values: object({ ...values, deep: nestedMaps(DEPTH) }),
          requestId: requestId(),
        }),
        /^values: deep(\.k){7}…/,
        'values',
      ],
    ]);
    expect(await rowCount()).to.equal(before);
  });
});
