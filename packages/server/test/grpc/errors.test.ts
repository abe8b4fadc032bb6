// Bad input gets a clear status naming the field, and nothing is written.
import { expect } from 'chai';
import { Metadata, status } from '@grpc/grpc-js';
import { Operator, WriteMode, type WhereRequest } from '@shameless/proto';
import { rejection } from '../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';
import { int, str } from '../support/indexValues.js';

/** `bytes` with the payload of the string `header` (its prefix byte, then its bytes) replaced. */
function withBytes(bytes: Buffer, header: number[], payload: number[]): Buffer {
  const at = bytes.indexOf(Buffer.from(header));
  expect(at, 'the string to replace').to.be.greaterThan(-1);
  Buffer.from(payload).copy(bytes, at + 1);
  return bytes;
}

describe('Errors', function () {
  let store: StoreFixture;
  let uuid: string;
  const full = {
    hotel_id: 5,
    room_type: 'a',
    check_in_date: 'd',
    gateway: 'g',
    discount_type: 't',
  };
  const without = (key: string, values: Record<string, unknown> = full) =>
    Object.fromEntries(Object.entries(values).filter(([name]) => name !== key));

  before(async () => {
    store = await startStoreFixture({ shardsCount: 2 });
    await store.api.defineModel({ model: RATE_MODEL });
    uuid = (await store.api.put({ model: 'rate', values: pack(full), requestId: requestId() }))
      .uuid;
  });
  after(() => store?.close());

  async function rowCount(): Promise<number> {
    let total = 0;
    for (let shard = 0; shard < 2; shard++) {
      const page = await store.api.fetchLatestCells({
        model: 'rate',
        shard,
        cursor: 0n,
        limit: 10_000,
      });
      total += page.cells.length;
    }
    return total;
  }

  function expectStatus(
    error: { code: number; details: string; metadata: Metadata },
    code: status,
    pattern: RegExp,
  ) {
    expect(error.code, error.details).to.equal(code);
    expect(error.details).to.match(pattern);
    expect(error.details).not.to.match(/SELECT|INSERT|ER_|\bat .*\.js|mysql:\/\//);
  }

  const writeCell = (overrides: Record<string, unknown>) =>
    store.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ a: 1 }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
      ...overrides,
    });

  it('rejects bad writes with the field named, writing nothing', async () => {
    const before = await rowCount();
    const cases: [Promise<unknown>, status, RegExp, string?][] = [
      [
        store.api.put({ model: 'nope', values: pack(full), requestId: requestId() }),
        status.NOT_FOUND,
        /model "nope" is not defined/,
      ],
      [
        store.api.put({
          model: 'rate',
          values: pack(without('room_type')),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /^values: room_type is required/,
        'values',
      ],
      [
        store.api.put({
          model: 'rate',
          values: pack({ ...full, hotel_id: 'five' }),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /hotel_id must be an integer/,
      ],
      [
        store.api.put({
          model: 'rate',
          values: pack({ ...full, hotel_id: 1.5 }),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /hotel_id must be an integer/,
      ],
      [
        store.api.put({
          model: 'rate',
          values: pack(without('gateway', { ...full, hotel_id: 99 })),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /gateway is required \(a field of index secondary\)/,
      ],
      [
        store.api.put({
          model: 'rate',
          values: pack({ ...full, room_type: 7 }),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /room_type must be a string/,
      ],
      [
        // Read with replacement characters, 0xff 0xfe would be any other bad bytes' text; no
        // str of a body may be other than UTF-8, index field or not.
        store.api.put({
          model: 'rate',
          values: withBytes(pack({ ...full, room_type: 'QQ' }), [0xa2, 0x51, 0x51], [0xff, 0xfe]),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /^values: room_type: a string that is not UTF-8/,
      ],
      [
        store.api.put({
          model: 'rate',
          values: Buffer.from([0x82, 0xa1, 0x61]),
          requestId: requestId(),
        }),
        status.INVALID_ARGUMENT,
        /^values: is not valid MessagePack/,
      ],
      [
        store.api.put({ model: 'rate', values: pack([1, 2]), requestId: requestId() }),
        status.INVALID_ARGUMENT,
        /^values: must be a MessagePack map/,
      ],
      [
        store.api.put({ model: 'rate', values: pack(full), requestId: '' }),
        status.INVALID_ARGUMENT,
        /^request_id: is required/,
        'request_id',
      ],
      [
        store.api.put({ model: 'rate', values: pack(full), requestId: 'has space' }),
        status.INVALID_ARGUMENT,
        /^request_id:/,
      ],
      [
        writeCell({ uuid: 'not-a-uuid' }),
        status.INVALID_ARGUMENT,
        /^uuid: must be a lowercase UUID/,
        'uuid',
      ],
      [
        writeCell({ uuid: '11111111-1111-4111-8111-111111111111' }),
        status.NOT_FOUND,
        /record 11111111-.* does not exist/,
      ],
      [writeCell({ cell: 'nope' }), status.NOT_FOUND, /has no cell "nope"/],
      [
        writeCell({ body: pack({ hotel_id: 3 }) }),
        status.INVALID_ARGUMENT,
        /^body: hotel_id cannot be written: it is part of the primary index of rate/,
        'body',
      ],
      [
        writeCell({ cell: 'base', body: pack({ gateway: 'x' }), mode: WriteMode.WRITE_MODE_MERGE }),
        status.INVALID_ARGUMENT,
        /gateway cannot be written: it is part of the secondary index/,
      ],
      [
        writeCell({ body: Buffer.from([0x81, 0x01, 0x02]) }),
        status.INVALID_ARGUMENT,
        /^body: must have string keys only/,
      ],
      [
        writeCell({ body: Buffer.from([0x80, 0x01]) }),
        status.INVALID_ARGUMENT,
        /^body: is not valid MessagePack/,
      ],
      [
        writeCell({ body: Buffer.alloc(0) }),
        status.INVALID_ARGUMENT,
        /^body: must be a MessagePack map/,
      ],
      [writeCell({ expectedRefKey: -2 }), status.INVALID_ARGUMENT, /^expected_ref_key:/],
      [writeCell({ mode: 7 }), status.INVALID_ARGUMENT, /^mode:/],
    ];
    // Every call is already on its way: each gets its handler now, not when the loop reaches it.
    const errors = await Promise.all(cases.map(([call]) => rejection(call)));
    cases.forEach(([, code, pattern, field], i) => {
      expectStatus(errors[i]!, code, pattern);
      if (field) expect(errors[i]!.metadata.get('shameless-field')).to.deep.equal([field]);
    });
    expect(await rowCount()).to.equal(before);
  });

  it('refuses an update whose secondary index values are not of their type, as a create, writing nothing', async () => {
    // The record exists: an update stores no index value, yet bad ones are refused all the
    // same, on a server that knows where the values lead (this one: it created the record)
    // and on one that must look them up (a second server over the same databases).
    const fresh = await startStoreFixture({ shardsCount: 2, partitionUrls: store.partitionUrls });
    try {
      const before = await rowCount();
      const bad: [Record<string, unknown>, RegExp][] = [
        [{ ...full, gateway: 7 }, /^values: gateway must be a string, got number 7/],
        [without('gateway', { ...full, discount_type: [1] }), /discount_type must be a string/],
        [{ ...full, gateway: 'x'.repeat(256) }, /gateway must be at most 255 characters/],
      ];
      for (const api of [store.api, fresh.api]) {
        for (const [values, pattern] of bad) {
          const error = await rejection(
            api.put({
              model: 'rate',
              values: pack({ ...values, price: 1 }),
              requestId: requestId(),
            }),
          );
          expectStatus(error, status.INVALID_ARGUMENT, pattern);
          expect(error.metadata.get('shameless-field')).to.deep.equal(['values']);
        }
        const batch = await rejection(
          api.putMany({
            puts: [
              { model: 'rate', values: pack(full), requestId: requestId() },
              { model: 'rate', values: pack({ ...full, gateway: 7 }), requestId: requestId() },
            ],
          }),
        );
        expectStatus(
          batch,
          status.INVALID_ARGUMENT,
          /^puts\[1\]\.values: gateway must be a string/,
        );
      }
      expect(await rowCount()).to.equal(before);
      // Values without the secondary fields still update the record.
      const updated = await fresh.api.put({
        model: 'rate',
        values: pack(without('discount_type', without('gateway'))),
        requestId: requestId(),
      });
      expect(updated).to.deep.include({ uuid, created: false });
    } finally {
      await fresh.close();
    }
  });

  it('refuses an index field nested deeper than a body may be, writing nothing', async () => {
    // Values whose index field is an array (or map) inside another, 100,000 deep: a few
    // hundred KB, which a recursive decoder could not read. The body's depth limit refuses them
    // before any index field is read. `open` starts one level: a one-element array, or a
    // one-entry map and its key.
    const key = (name: string) => pack(name);
    const nested = (open: Buffer) =>
      Buffer.concat([...Array.from({ length: 100_000 }, () => open), pack(1)]);
    const values = (field: string, open: Buffer) =>
      Buffer.concat([
        Buffer.from([0x85]),
        ...Object.entries(full).flatMap(([name, value]) => [
          key(name),
          name === field ? nested(open) : pack(value),
        ]),
      ]);
    const before = await rowCount();
    const cases: [Promise<unknown>, RegExp, string][] = [
      [
        store.api.put({
          model: 'rate',
          values: values('hotel_id', Buffer.from([0x91])),
          requestId: requestId(),
        }),
        /^values: hotel_id(\[0\]){7}…\(\d+ levels more\): nested deeper than 64 levels/,
        'values',
      ],
      [
        store.api.putMany({
          puts: [
            {
              model: 'rate',
              values: values('room_type', Buffer.from([0x81, 0xa1, 0x6b])),
              requestId: requestId(),
            },
          ],
        }),
        /^puts\[0\]\.values: room_type(\.k){7}…\(\d+ levels more\): nested deeper than 64 levels/,
        'puts[0].values',
      ],
    ];
    const errors = await Promise.all(cases.map(([call]) => rejection(call)));
    cases.forEach(([, pattern, field], i) => {
      expectStatus(errors[i]!, status.INVALID_ARGUMENT, pattern);
      expect(errors[i]!.metadata.get('shameless-field')).to.deep.equal([field]);
    });
    expect(await rowCount()).to.equal(before);
  });

  it('refuses an index field that is an extension, known to the decoder or not, writing nothing', async () => {
    // Found by the contract fuzzer: ext 8 of type -2 and no data, as hotel_id, was answered
    // INTERNAL (the decoder threw "Unknown extension type 254"); fixext1 of type 0x42, data 07,
    // was stored with 7 in the index (msgpackr reads its type 0x42 as a bigint) while the body,
    // as the gem reads it, holds an extension.
    const withHotel = (hotelId: Buffer) =>
      Buffer.concat([
        Buffer.from([0x85]),
        ...Object.entries(full).flatMap(([name, value]) => [
          pack(name),
          name === 'hotel_id' ? hotelId : pack(value),
        ]),
      ]);
    const before = await rowCount();
    const known = await rejection(
      store.api.put({
        model: 'rate',
        values: withHotel(Buffer.from([0xd4, 0x42, 0x07])),
        requestId: requestId(),
      }),
    );
    expectStatus(
      known,
      status.INVALID_ARGUMENT,
      /^values: hotel_id must be an integer, got an extension/,
    );
    const values = withHotel(Buffer.from([0xc7, 0x00, 0xfe]));
    const single = await rejection(
      store.api.put({ model: 'rate', values, requestId: requestId() }),
    );
    expectStatus(
      single,
      status.INVALID_ARGUMENT,
      /^values: hotel_id must be an integer, got an extension/,
    );
    expect(single.metadata.get('shameless-field')).to.deep.equal(['values']);
    const batch = await rejection(
      store.api.putMany({ puts: [{ model: 'rate', values, requestId: requestId() }] }),
    );
    expectStatus(batch, status.INVALID_ARGUMENT, /^puts\[0\]\.values: hotel_id must be an integer/);
    expect(await rowCount()).to.equal(before);
  });

  it('answers a long bad value with a status a client can take, the value cut short', async () => {
    // A status travels in the trailers, which clients cap (grpc-js and gRPC C-core at a few
    // KiB): a message echoing 100 KB of a field would never reach the client.
    const long = 'x'.repeat(100_000);
    const wide = '€'.repeat(30_000);
    const cases: [Promise<unknown>, status, RegExp, string | undefined][] = [
      [
        store.api.getCell({ model: long, uuid, cell: '', refKey: undefined }),
        status.NOT_FOUND,
        /^model "x+…/,
        undefined,
      ],
      [
        store.api.getCell({ model: wide, uuid, cell: '', refKey: undefined }),
        status.NOT_FOUND,
        /^model "€+…/,
        undefined,
      ],
      [
        store.api.getCell({ model: 'rate', uuid: long, cell: '', refKey: undefined }),
        status.INVALID_ARGUMENT,
        /^uuid: must be a lowercase UUID/,
        'uuid',
      ],
    ];
    const errors = await Promise.all(cases.map(([call]) => rejection(call)));
    cases.forEach(([, code, pattern, field], i) => {
      const error = errors[i]!;
      expectStatus(error, code, pattern);
      expect(Buffer.byteLength(error.details)).to.be.at.most(2048);
      expect(error.details).to.match(/\(\d+ more bytes\)$/);
      expect(error.metadata.get('shameless-field')).to.deep.equal(field ? [field] : []);
    });
  });

  it('rejects bad reads with the field named', async () => {
    const cases: [Promise<unknown>, status, RegExp][] = [
      [
        store.api.getCell({ model: 'rate', uuid: 'ABC', cell: '', refKey: undefined }),
        status.INVALID_ARGUMENT,
        /^uuid:/,
      ],
      [
        store.api.getCell({ model: 'rate', uuid, cell: 'nope', refKey: undefined }),
        status.NOT_FOUND,
        /no cell "nope"/,
      ],
      [
        store.api.getCell({ model: 'rate', uuid, cell: '', refKey: -1 }),
        status.INVALID_ARGUMENT,
        /^ref_key:/,
      ],
      [
        store.api.previous({ model: 'rate', uuid, cell: '', refKey: -1 }),
        status.INVALID_ARGUMENT,
        /^ref_key:/,
      ],
      [
        store.api.previous({ model: 'rate', uuid, cell: '', refKey: 9 }),
        status.NOT_FOUND,
        /no version 8/,
      ],
      [
        store.api.fetchLatestCells({ model: 'rate', shard: 2, cursor: 0n, limit: 1 }),
        status.INVALID_ARGUMENT,
        /^shard: shard 2 does not exist; shards are 0 to 1/,
      ],
      [
        store.api.fetchLatestCells({ model: 'rate', shard: 0, cursor: 0n, limit: 10_001 }),
        status.INVALID_ARGUMENT,
        /^limit: must be at most 10000/,
      ],
      [store.api.findShard({ key: undefined }), status.INVALID_ARGUMENT, /^key:/],
      [
        store.api.findShard({ key: { $case: 'uuid', uuid: 'x' } }),
        status.INVALID_ARGUMENT,
        /^uuid:/,
      ],
      [
        store.api.defineModel({ model: { ...RATE_MODEL, name: 'Bad-Name' } }),
        status.INVALID_ARGUMENT,
        /^model.name:/,
      ],
      [
        store.api.defineModel({ model: { ...RATE_MODEL, name: 'x'.repeat(60) } }),
        status.INVALID_ARGUMENT,
        /MySQL allows 64/,
      ],
      [
        store.api.defineModel({
          model: {
            ...RATE_MODEL,
            name: 'other',
            primaryIndex: { ...RATE_MODEL.primaryIndex!, shardOn: 'room_type' },
          },
        }),
        status.INVALID_ARGUMENT,
        /^model.primary_index.shard_on: field room_type must be an integer field/,
      ],
      [
        store.api.defineModel({ model: { ...RATE_MODEL, name: 'other', primaryIndex: undefined } }),
        status.INVALID_ARGUMENT,
        /^model.primary_index: is required/,
      ],
    ];
    const errors = await Promise.all(cases.map(([call]) => rejection(call)));
    cases.forEach(([, code, pattern], i) => expectStatus(errors[i]!, code, pattern));
  });

  it('rejects bad queries with the field named', async () => {
    const where = store.api.where;
    const hotel = { field: 'hotel_id', op: Operator.OPERATOR_EQ, values: [int(5)] };
    const cases: [Partial<WhereRequest>, status, RegExp][] = [
      [
        { conditions: [] },
        status.INVALID_ARGUMENT,
        /^conditions: a condition hotel_id = <integer> is required/,
      ],
      [
        { conditions: [{ ...hotel, op: Operator.OPERATOR_GT }] },
        status.INVALID_ARGUMENT,
        /hotel_id = <integer> is required/,
      ],
      [
        { conditions: [hotel, { field: 'price', op: Operator.OPERATOR_EQ, values: [int(1)] }] },
        status.INVALID_ARGUMENT,
        /^conditions\[1\].field: "price" is not a field of index primary/,
      ],
      [
        { conditions: [hotel, { field: 'room_type', op: Operator.OPERATOR_EQ, values: [int(1)] }] },
        status.INVALID_ARGUMENT,
        /^conditions\[1\].values: room_type must be a string/,
      ],
      [
        { conditions: [{ ...hotel, values: [str('5')] }] },
        status.INVALID_ARGUMENT,
        /hotel_id must be an integer/,
      ],
      [
        {
          conditions: [
            hotel,
            { field: 'room_type', op: Operator.OPERATOR_BETWEEN, values: [str('a')] },
          ],
        },
        status.INVALID_ARGUMENT,
        /^conditions\[1\].values: between takes 2 values, got 1/,
      ],
      [
        {
          conditions: [
            hotel,
            { field: 'room_type', op: Operator.OPERATOR_UNSPECIFIED, values: [str('a')] },
          ],
        },
        status.INVALID_ARGUMENT,
        /^conditions\[1\].op:/,
      ],
      [{ conditions: [hotel], index: 'nope' }, status.NOT_FOUND, /has no index "nope"/],
      [{ conditions: [hotel], cells: ['nope'] }, status.NOT_FOUND, /has no cell "nope"/],
      [{ conditions: [hotel], limit: 20_000 }, status.INVALID_ARGUMENT, /^limit:/],
      [{ conditions: [hotel], pageToken: 'garbage!' }, status.INVALID_ARGUMENT, /^page_token:/],
      [{ model: 'nope', conditions: [hotel] }, status.NOT_FOUND, /model "nope"/],
    ];
    for (const [request, code, pattern] of cases)
      expectStatus(await rejection(where(request)), code, pattern);
    const each = store.api.each;
    expectStatus(
      await rejection(each({ shards: [0, 5] })),
      status.INVALID_ARGUMENT,
      /^shards\[1\]: shard 5 does not exist/,
    );
    expectStatus(await rejection(each({ model: 'nope' })), status.NOT_FOUND, /model "nope"/);
  });
});
