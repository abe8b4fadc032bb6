// Body encoding (pure): every integer in the smallest MessagePack format that holds it, as
// Ruby's msgpack writes it, floats as float64, and everything else as msgpackr wrote it before.

import { expect } from 'chai';
import { Packr } from 'msgpackr';
import {
  InternalError,
  InvalidArgumentError,
  MessagePackExtension,
  UnreadableBodyError,
} from '../src/index.js';
import { decodeBody, encodeBody } from '../src/model/body.js';

/** The cell an error would name. */
const SOME_CELL = {
  model: 'rate',
  uuid: '5e0f0000-0000-4000-8000-000000000000',
  cell: 'meta',
  refKey: 3,
};

/** The bytes of `value` as the one value of a one-key map `{ v: value }`. */
function valueBytes(value: unknown): string {
  const bytes = encodeBody({ v: value });
  // 0x81 (a map of one entry), 0xa1 0x76 (the key "v"), then the value.
  expect(bytes.subarray(0, 3).toString('hex')).to.equal('81a176');
  return hex(bytes.subarray(3));
}

/** Hex with a space between bytes, as MessagePack specs are read. */
function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
}

describe('body encoding (pure)', () => {
  it('writes integers as Ruby does: the smallest format, unsigned when >= 0', () => {
    const cases: [number | bigint, string][] = [
      [0, '00'],
      [127, '7f'],
      [128, 'cc 80'],
      [255, 'cc ff'],
      [256, 'cd 01 00'],
      [65_535, 'cd ff ff'],
      [65_536, 'ce 00 01 00 00'],
      [2 ** 32 - 1, 'ce ff ff ff ff'],
      [2 ** 32, 'cf 00 00 00 01 00 00 00 00'],
      [2 ** 40, 'cf 00 00 01 00 00 00 00 00'],
      [1_764_000_123_456, 'cf 00 00 01 9a b6 99 ca 40'],
      [Number.MAX_SAFE_INTEGER, 'cf 00 1f ff ff ff ff ff ff'],
      [2n ** 53n + 1n, 'cf 00 20 00 00 00 00 00 01'],
      [2n ** 63n - 1n, 'cf 7f ff ff ff ff ff ff ff'],
      [2n ** 64n - 1n, 'cf ff ff ff ff ff ff ff ff'],
      [-1, 'ff'],
      [-32, 'e0'],
      [-33, 'd0 df'],
      [-128, 'd0 80'],
      [-129, 'd1 ff 7f'],
      [-32_768, 'd1 80 00'],
      [-32_769, 'd2 ff ff 7f ff'],
      [-(2 ** 31), 'd2 80 00 00 00'],
      [-(2 ** 31) - 1, 'd3 ff ff ff ff 7f ff ff ff'],
      [-1_764_000_123_456, 'd3 ff ff fe 65 49 66 35 c0'],
      [Number.MIN_SAFE_INTEGER, 'd3 ff e0 00 00 00 00 00 01'],
      [-(2n ** 63n), 'd3 80 00 00 00 00 00 00 00'],
    ];
    for (const [value, expected] of cases) {
      expect(valueBytes(value), `${value}`).to.equal(expected);
    }
  });

  it('writes a small bigint exactly as the same number', () => {
    for (const value of [0, 1, -1, 200, -200, 70_000, 2 ** 40, -(2 ** 40)]) {
      expect(valueBytes(BigInt(value)), `${value}n`).to.equal(valueBytes(value));
    }
  });

  it('writes every other number as float64: fractions, -0, NaN, infinities, integers past 2^53', () => {
    expect(valueBytes(1.5)).to.equal('cb 3f f8 00 00 00 00 00 00');
    expect(valueBytes(120.25)).to.equal('cb 40 5e 10 00 00 00 00 00');
    expect(valueBytes(-0)).to.equal('cb 80 00 00 00 00 00 00 00');
    expect(valueBytes(Number.NaN)).to.equal('cb 7f f8 00 00 00 00 00 00');
    expect(valueBytes(Number.POSITIVE_INFINITY)).to.equal('cb 7f f0 00 00 00 00 00 00');
    // 2^53 is exactly representable but not a safe integer: it may stand for 2^53 + 1.
    expect(valueBytes(2 ** 53)).to.equal('cb 43 40 00 00 00 00 00 00');
    expect(valueBytes(1e300)).to.match(/^cb /);
  });

  it('refuses a bigint that no MessagePack integer holds', () => {
    for (const value of [2n ** 64n, -(2n ** 63n) - 1n]) {
      expect(() => encodeBody({ v: value }), `${value}`)
        .to.throw(InvalidArgumentError)
        .with.property('message')
        .that.matches(/does not fit a MessagePack integer/);
    }
  });

  it('refuses every value with no MessagePack form, naming its key path', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = { back: [circular] };
    class Tagged {
      tag = Symbol('x');
    }
    const cases: [Record<string, unknown>, string][] = [
      [{ v: 2n ** 64n }, 'body: v: 18446744073709551616 does not fit a MessagePack integer'],
      [{ prices: new Map([[20261169, 2n ** 64n]]) }, 'body: prices.20261169: 1844'],
      [{ rates: [{ night: 1 }, { cents: -(2n ** 63n) - 1n }] }, 'body: rates[1].cents: -9223'],
      [{ m: [[1, [Symbol('s')]]] }, 'body: m[0][1][0]: a symbol has no MessagePack form'],
      [{ fn: () => 1 }, 'body: fn: a function has no MessagePack form'],
      [{ c: circular }, 'body: c.self.back[0]: holds itself (a cycle)'],
      [{ k: new Tagged() }, 'body: k.tag: a symbol has no MessagePack form'],
    ];
    for (const [body, message] of cases) {
      expect(() => encodeBody(body), message)
        .to.throw(InvalidArgumentError)
        .with.property('message')
        .that.satisfies((text: string) => text.startsWith(message));
    }
  });

  it('writes the same object twice when it is not inside itself', () => {
    const shared = { a: 1 };
    expect(hex(encodeBody({ x: shared, y: [shared, shared] }))).to.equal(
      hex(encodeBody({ x: { a: 1 }, y: [{ a: 1 }, { a: 1 }] })),
    );
  });

  it('writes integers inside arrays and nested maps the same way', () => {
    const bytes = encodeBody({ a: [2 ** 40, -(2 ** 40)], m: { n: 2n ** 63n - 1n } });
    expect(hex(bytes)).to.equal(
      [
        '82', // a map of two entries
        'a1 61 92', // "a": an array of two
        'cf 00 00 01 00 00 00 00 00',
        'd3 ff ff ff 00 00 00 00 00',
        'a1 6d 81 a1 6e', // "m": a map of one, "n"
        'cf 7f ff ff ff ff ff ff ff',
      ].join(' '),
    );
  });

  it('gives each body bytes of its own, however bodies are written one after another or nested', () => {
    const first = encodeBody({ s: 'a'.repeat(100) });
    const firstHex = hex(first);
    const second = encodeBody({ s: 'd'.repeat(100) });
    // Larger than the writer's reused buffer keeps, then small again.
    const large = encodeBody({ s: 'b'.repeat(2 << 20) });
    const after = encodeBody({ s: 'c'.repeat(100) });
    expect(hex(first)).to.equal(firstHex);
    expect(second[5]).to.equal(0x64);
    expect(large.length).to.equal(3 + 5 + (2 << 20));
    expect(large.subarray(8).every((byte) => byte === 0x62)).to.equal(true);
    expect(hex(after)).to.equal(
      hex(Buffer.concat([first.subarray(0, 5), Buffer.alloc(100, 0x63)])),
    );

    // A value whose toJSON() encodes another body while this one is being written.
    let inner: Buffer | undefined;
    class Nesting {
      toJSON() {
        inner = encodeBody({ inner: 'i'.repeat(80) });
        return 'o'.repeat(80);
      }
    }
    const nesting = new Nesting();
    const outer = encodeBody({ a: 'a'.repeat(70), n: nesting, z: 1 });
    expect(hex(inner!)).to.equal(
      hex(
        Buffer.concat([
          Buffer.from([0x81, 0xa5]),
          Buffer.from('inner'),
          Buffer.from([0xd9, 80]),
          Buffer.alloc(80, 0x69),
        ]),
      ),
    );
    expect(decodeBody(outer, SOME_CELL)).to.deep.equal({
      a: 'a'.repeat(70),
      n: 'o'.repeat(80),
      z: 1,
    });
  });

  it('writes strings, binaries, arrays, floats, booleans, nil and dates as msgpackr did', () => {
    const msgpackr = new Packr({
      useRecords: false,
      mapsAsObjects: true,
      moreTypes: false,
      encodeUndefinedAsNil: true,
    });
    const lengths = [0, 1, 31, 32, 255, 256, 65_535, 65_536, 70_000];
    const values: unknown[] = [
      ...lengths.map((n) => 'x'.repeat(n)),
      ...lengths.map((n) => 'é'.repeat(n)),
      'hé ✓ 😀',
      ...[0, 1, 255, 256, 65_535, 65_536].map((n) => Buffer.alloc(n, 7)),
      [],
      [1, 'two', [3.5], null],
      Array.from({ length: 16 }, (_, i) => i),
      Array.from({ length: 70_000 }, (_, i) => i % 100),
      true,
      false,
      null,
      undefined,
      1.25,
      new Date(Date.UTC(2026, 11, 1, 12, 30, 15, 250)),
      new Date(1_700_000_000_000),
      new Map<unknown, unknown>([
        ['k', 1],
        [2, 'two'],
      ]),
    ];
    for (const value of values) {
      const expected = msgpackr.pack(value);
      expect(valueBytes(value), `${typeof value} ${String(value).slice(0, 20)}`).to.equal(
        hex(expected),
      );
    }
  });

  it('writes any string as its UTF-8 (Buffer.from), short ones and lone surrogates included', () => {
    const strings = [
      'a😀b',
      '😀'.repeat(40),
      '\ud800x',
      'x\udc00',
      '\ud83d',
      'é'.repeat(63),
      'é'.repeat(64),
      '€ߦ\u0800\uffff',
      'x'.repeat(63),
      'x'.repeat(64),
    ];
    for (const value of strings) {
      const utf8 = Buffer.from(value, 'utf8');
      const header = utf8.length < 32 ? [0xa0 | utf8.length] : [0xd9, utf8.length];
      expect(valueBytes(value), JSON.stringify(value)).to.equal(
        hex(Buffer.concat([Buffer.from(header), utf8])),
      );
    }
  });

  it('writes a map header in its smallest format, as Ruby does (msgpackr always used map16)', () => {
    const withKeys = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 0]));
    expect(hex(encodeBody({}))).to.equal('80');
    expect(hex(encodeBody(withKeys(15)).subarray(0, 1))).to.equal('8f');
    expect(hex(encodeBody(withKeys(16)).subarray(0, 3))).to.equal('de 00 10');
    expect(hex(encodeBody(withKeys(65_536)).subarray(0, 5))).to.equal('df 00 01 00 00');
    expect(valueBytes({ a: 1 })).to.equal('81 a1 61 01');
  });

  it('reads back what it wrote: integers as numbers when safe, as bigints beyond', () => {
    const body = {
      small: 7,
      big: 2 ** 40,
      safeBigint: 12n,
      huge: 2n ** 53n + 1n,
      max: 2n ** 64n - 1n,
      min: -(2n ** 63n),
      float: 0.5,
      text: 'x',
    };
    expect(decodeBody(encodeBody(body), SOME_CELL)).to.deep.equal({
      ...body,
      safeBigint: 12,
    });
  });

  it('reads ±2^53 stored as integers as bigints, and writes them back as the same integers', () => {
    // { "n" => 2**53, "m" => -2**53, "f" => 2.0**53 }, as Ruby's msgpack writes them.
    const bytes = Buffer.from(
      '83' +
        'a16e' +
        'cf0020000000000000' +
        'a16d' +
        'd3ffe0000000000000' +
        'a166' +
        'cb4340000000000000',
      'hex',
    );
    const body = decodeBody(bytes, SOME_CELL);
    // 2^53 is no safe integer: as a number it would be written back as a float.
    expect(body).to.deep.equal({ n: 2n ** 53n, m: -(2n ** 53n), f: 2 ** 53 });
    expect(encodeBody(body).toString('hex')).to.equal(bytes.toString('hex'));
  });

  it('reads a map whose keys are not all strings as a Map, keys with their types', () => {
    // { "m" => { "t" => 0, "2" => 1, 1 => "a", true => 2, 2^53+1 => 3, "s" => 4 } }, nested as a
    // Ruby writer may: its entries in their order, string keys before the first other included.
    const bytes = Buffer.from(
      '81a16d86' + 'a17400' + 'a13201' + '01a161' + 'c302' + 'cf002000000000000103' + 'a17304',
      'hex',
    );
    const body = decodeBody(bytes, SOME_CELL);
    expect(body.m).to.be.instanceOf(Map);
    expect([...(body.m as Map<unknown, unknown>)]).to.deep.equal([
      ['t', 0],
      ['2', 1],
      [1, 'a'],
      [true, 2],
      [2n ** 53n + 1n, 3],
      ['s', 4],
    ]);
    expect(encodeBody(body).toString('hex')).to.equal(bytes.toString('hex'));
  });

  it('reads a map of string keys as a plain object, a "__proto__" key as an own key', () => {
    const bytes = encodeBody(
      JSON.parse('{"__proto__": 1, "n": {"__proto__": [{"__proto__": 2}]}}'),
    );
    const body = decodeBody(bytes, SOME_CELL);
    expect(Object.getPrototypeOf(body)).to.equal(Object.prototype);
    expect(Object.keys(body)).to.deep.equal(['__proto__', 'n']);
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).to.equal(1);
    expect(JSON.stringify(body)).to.equal('{"__proto__":1,"n":{"__proto__":[{"__proto__":2}]}}');
    expect(encodeBody(body).toString('hex')).to.equal(bytes.toString('hex'));
  });

  it('reads a top-level key that is not a string as its string: a body is a map of string keys', () => {
    const bytes = Buffer.from('82' + '01a161' + 'a162c3', 'hex'); // { 1 => "a", "b" => true }
    expect(decodeBody(bytes, SOME_CELL)).to.deep.equal({ 1: 'a', b: true });
  });

  it('reads every extension but the timestamp as its type and bytes, and writes it back as it was', () => {
    // Each as a Ruby writer with registered types stores it: fixext 1, 2, 4, 8 and 16, then
    // ext 8, 16 and 32. Type 0 is msgpack-ruby's README's Symbol; msgpackr read it as
    // undefined, 0x73 as a Set of whatever followed, and 5 not at all.
    const extensions: [string, number, string][] = [
      ['d4' + '00' + '61', 0, '61'],
      ['d5' + '73' + '0102', 0x73, '0102'],
      ['d6' + '05' + '666f6f21', 5, '666f6f21'],
      ['d7' + 'fb' + '0102030405060708', -5, '0102030405060708'],
      ['d8' + '7f' + '00'.repeat(16), 127, '00'.repeat(16)],
      ['c7' + '03' + '00' + '666f6f', 0, '666f6f'],
      ['c8' + '0100' + '42' + 'ab'.repeat(256), 0x42, 'ab'.repeat(256)],
      ['c9' + '00010000' + '80' + 'cd'.repeat(65536), -128, 'cd'.repeat(65536)],
    ];
    for (const [stored, type, data] of extensions) {
      const bytes = Buffer.from('82' + 'a178' + stored + 'a179' + '9101', 'hex');
      const body = decodeBody(bytes, SOME_CELL);
      const value = body.x as MessagePackExtension;
      expect(value, stored.slice(0, 6)).to.be.instanceOf(MessagePackExtension);
      expect([value.type, value.data.toString('hex')]).to.deep.equal([type, data]);
      expect(body.y).to.deep.equal([1]);
      expect(encodeBody(body).toString('hex'), 'written back').to.equal(bytes.toString('hex'));
    }
    const made = new MessagePackExtension(1, Buffer.from('abc'));
    expect(valueBytes(made)).to.equal('c7 03 01 61 62 63');
    expect(JSON.stringify({ made })).to.equal('{"made":{"extension":1,"base64":"YWJj"}}');
    expect(() => new MessagePackExtension(128, Buffer.alloc(0))).to.throw(RangeError);
  });

  it('reads the timestamp extension, in each of its layouts, as a Date', () => {
    const at = Date.UTC(2026, 10, 26, 12, 0, 0, 250);
    const seconds = Math.floor(at / 1000)
      .toString(16)
      .padStart(8, '0');
    const nanoseconds = 250_000_000;
    const layouts = [
      ['d6ff' + seconds, at - 250],
      ['d7ff' + (nanoseconds * 4).toString(16).padStart(8, '0') + seconds, at],
      ['c70cff' + nanoseconds.toString(16).padStart(8, '0') + '00000000' + seconds, at],
    ] as const;
    for (const [stored, time] of layouts) {
      const body = decodeBody(Buffer.from('81a174' + stored, 'hex'), SOME_CELL);
      expect((body.t as Date).getTime(), stored).to.equal(time);
    }
  });

  it('reads every format of the other types as msgpackr did', () => {
    // Integers in wider formats than they need, as some writers store them, floats of 32 and
    // 64 bits, every string, binary, array and map header, nil and booleans.
    const cases: [string, unknown][] = [
      ['cc05', 5],
      ['cd0005', 5],
      ['ce00000005', 5],
      ['cf0000000000000005', 5],
      ['d0fb', -5],
      ['d1fffb', -5],
      ['d2fffffffb', -5],
      ['d3fffffffffffffffb', -5],
      ['e0', -32],
      ['ca3fc00000', 1.5],
      ['cb3ff8000000000000', 1.5],
      ['a3616263', 'abc'],
      ['d903616263', 'abc'],
      ['da0003616263', 'abc'],
      ['db00000003616263', 'abc'],
      ['a3ff6162', '\ufffdab'],
      ['c403010203', Buffer.from([1, 2, 3])],
      ['c50003010203', Buffer.from([1, 2, 3])],
      ['c600000003010203', Buffer.from([1, 2, 3])],
      ['dc000201c0', [1, null]],
      ['dd0000000201c3', [1, true]],
      ['de0001a161c2', { a: false }],
      ['df00000001a16180', { a: {} }],
    ];
    for (const [stored, value] of cases) {
      expect(decodeBody(Buffer.from('81a176' + stored, 'hex'), SOME_CELL).v, stored).to.deep.equal(
        value,
      );
    }
  });

  it('refuses what is not one MessagePack value: a 0xc1, data cut short, bytes after it', () => {
    for (const stored of ['81a176c1', '81a17692', '81a176cd00', '81a17601c0', '81a176d501']) {
      expect(() => decodeBody(Buffer.from(stored, 'hex'), SOME_CELL), stored)
        .to.throw(UnreadableBodyError)
        .with.property('message')
        .that.matches(
          /^cell meta@3 of rate 5e0f0000-0000-4000-8000-000000000000: the body cannot be read: not valid MessagePack \(/,
        );
    }
  });

  /** A map of one key `a` whose value is `levels - 1` arrays, one in another, around a 1. */
  const nestedBody = (levels: number) =>
    Buffer.concat([
      Buffer.from([0x81, 0xa1, 0x61]),
      Buffer.alloc(levels - 1, 0x91),
      Buffer.from([1]),
    ]);

  it('reads a body of 1000 levels, what a server can be set to take at most', () => {
    let value: unknown = decodeBody(nestedBody(1000), SOME_CELL)['a'];
    let levels = 1;
    while (Array.isArray(value)) {
      expect(value).to.have.length(1);
      value = value[0];
      levels++;
    }
    expect([levels, value]).to.deep.equal([1000, 1]);
  });

  it('refuses a deeper body (one written around the server) with a typed error naming the cell', () => {
    // 200,000 levels: what overflowed the stack as a bare RangeError before.
    for (const levels of [1001, 200_000]) {
      let caught: unknown;
      try {
        decodeBody(nestedBody(levels), SOME_CELL);
      } catch (error) {
        caught = error;
      }
      expect(caught, String(levels)).to.be.instanceOf(UnreadableBodyError);
      expect(caught).to.be.instanceOf(InternalError);
      const error = caught as UnreadableBodyError;
      expect([error.model, error.uuid, error.cell, error.refKey]).to.deep.equal([
        'rate',
        SOME_CELL.uuid,
        'meta',
        3,
      ]);
      expect(error.reason).to.match(/^nested deeper than 1000 levels/);
      expect(error.retryable).to.equal(false);
    }
  });
});
