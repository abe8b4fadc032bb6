// Bodies merged as bytes: what a merge keeps, adds and replaces, and what is not a body.
import { expect } from 'chai';
import { encodeMessagePack } from '@shameless/proto';
import { Unpackr } from 'msgpackr';
import { EncodedMap, MalformedMapError } from '../../../src/engine/base/encodedMap.js';
import {
  array,
  fixint,
  float64,
  int64,
  map,
  nil,
  object,
  str,
  uint64,
} from '../../support/msgpackBytes.js';

const decode = (bytes: Buffer): unknown =>
  new Unpackr({ mapsAsObjects: false, int64AsType: 'bigint', useRecords: false }).unpack(bytes);

describe('encoded maps (pure)', () => {
  const gemBody = object({
    net_price: float64(120),
    big: uint64(2n ** 40n),
    low: int64(-(2n ** 63n)),
    nested: map([fixint(1), str('integer key')], [str('f'), float64(1.5)]),
    tags: array(str('a'), nil()),
  });

  it('reads keys and decodes single values on demand, exactly', () => {
    const body = EncodedMap.parse(gemBody);
    expect([...body.keys()]).to.deep.equal(['net_price', 'big', 'low', 'nested', 'tags']);
    expect(body.has('big')).to.equal(true);
    expect(body.has('absent')).to.equal(false);
    expect(body.get('big')).to.equal(2n ** 40n);
    expect(body.get('low')).to.equal(-(2n ** 63n));
    expect(body.get('nested')).to.deep.equal(
      new Map<unknown, unknown>([
        [1, 'integer key'],
        ['f', 1.5],
      ]),
    );
    expect(body.get('absent')).to.equal(undefined);
    expect(body.hasNonStringKey).to.equal(false);
    expect(EncodedMap.parse(map([fixint(1), nil()])).hasNonStringKey).to.equal(true);
  });

  it('decodes every scalar as msgpackr does, in each format integers and strings come in', () => {
    const values: unknown[] = [
      ...[0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1],
      ...[-1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31), -(2 ** 31) - 1],
      ...[0, 1, 31, 32, 255, 256, 70_000].map((n) => 'x'.repeat(n)),
      'é😀 day-00012',
      2n ** 63n - 1n,
      -(2n ** 63n),
      1.5,
      null,
      true,
      false,
      Buffer.from([1, 2, 3]),
    ];
    const types = new Set<number>();
    for (const value of values) {
      const bytes = encodeMessagePack({ v: value });
      const valueBytes = bytes.subarray(3); // 0x81, then the key "v" as 0xa1 0x76
      types.add(valueBytes[0]!);
      expect(EncodedMap.parse(bytes).get('v'), String(value).slice(0, 20)).to.deep.equal(
        decode(valueBytes),
      );
    }
    // Each format the fast path reads, and some it leaves to msgpackr.
    const read = [0x00, 0x7f, 0xff, 0xe0, 0xa0, 0xbf, 0xd9, 0xcc, 0xcd, 0xce, 0xd0, 0xd1, 0xd2];
    for (const type of [...read, 0xda, 0xdb, 0xcf, 0xd3, 0xcb, 0xc0, 0xc4]) {
      expect(types.has(type), `type 0x${type.toString(16)}`).to.equal(true);
    }
  });

  it('merges a patch over a body keeping every other value byte for byte', () => {
    const merged = EncodedMap.parse(gemBody).mergedWith(
      EncodedMap.parse(object({ big: fixint(7), added: str('new') })),
    );
    expect(merged).to.deep.equal(
      object({
        net_price: float64(120),
        big: fixint(7),
        low: int64(-(2n ** 63n)),
        nested: map([fixint(1), str('integer key')], [str('f'), float64(1.5)]),
        tags: array(str('a'), nil()),
        added: str('new'),
      }),
    );
  });

  it('returns the body itself for an empty patch, and the patch for an empty body', () => {
    const empty = EncodedMap.parse(Buffer.from([0x80]));
    expect(EncodedMap.parse(gemBody).mergedWith(empty)).to.equal(gemBody);
    expect(empty.mergedWith(EncodedMap.parse(gemBody))).to.equal(gemBody);
  });

  it('resolves a repeated key as decoders do: its last value, in its first place', () => {
    const patch = EncodedMap.parse(
      map([str('a'), fixint(1)], [str('b'), fixint(2)], [str('a'), fixint(3)]),
    );
    expect([...patch.keys()]).to.deep.equal(['a', 'b']);
    expect(patch.get('a')).to.equal(3);
    const empty = EncodedMap.parse(Buffer.from([0x80]));
    expect(empty.mergedWith(patch)).to.deep.equal(object({ a: fixint(3), b: fixint(2) }));
    const base = EncodedMap.parse(
      map([str('a'), fixint(9)], [str('c'), nil()], [str('a'), fixint(8)]),
    );
    expect(base.mergedWith(EncodedMap.parse(object({ a: fixint(0) })))).to.deep.equal(
      object({ a: fixint(0), c: nil() }),
    );
  });

  it('writes the smallest map header for the merged count', () => {
    const entries = (count: number, prefix: string) =>
      Buffer.concat(
        Array.from({ length: count }, (_, i) => Buffer.concat([str(`${prefix}${i}`), nil()])),
      );
    const fifteen = EncodedMap.parse(Buffer.concat([Buffer.from([0x8f]), entries(15, 'k')]));
    const sixteen = fifteen.mergedWith(EncodedMap.parse(object({ extra: nil() })));
    expect(sixteen.subarray(0, 3)).to.deep.equal(Buffer.from([0xde, 0x00, 0x10]));
    expect((decode(sixteen) as Map<string, unknown>).size).to.equal(16);

    const many = Buffer.concat([Buffer.from([0xde, 0xff, 0xff]), entries(65535, 'k')]);
    const grown = EncodedMap.parse(many).mergedWith(EncodedMap.parse(object({ extra: nil() })));
    expect(grown.subarray(0, 5)).to.deep.equal(Buffer.from([0xdf, 0x00, 0x01, 0x00, 0x00]));
    expect((decode(grown) as Map<string, unknown>).size).to.equal(65536);
  });

  it('drops keys without touching the others, and reads what is left as a parse of it would', () => {
    const body = EncodedMap.parse(gemBody);
    const kept = body.without(new Set(['big', 'tags']));
    const expected = object({
      net_price: float64(120),
      low: int64(-(2n ** 63n)),
      nested: map([fixint(1), str('integer key')], [str('f'), float64(1.5)]),
    });
    expect(kept.bytes).to.deep.equal(expected);
    const parsed = EncodedMap.parse(expected);
    expect([...kept.keys()]).to.deep.equal([...parsed.keys()]);
    for (const key of ['net_price', 'low', 'nested', 'big']) {
      expect(kept.get(key), key).to.deep.equal(parsed.get(key));
      expect(kept.has(key), key).to.equal(parsed.has(key));
      expect(kept.containerAt(key), key).to.equal(parsed.containerAt(key));
    }
    // What a merge or a second drop makes of it is what they make of the parsed bytes.
    const patch = EncodedMap.parse(object({ low: fixint(1), added: nil() }));
    expect(kept.mergedWith(patch)).to.deep.equal(parsed.mergedWith(patch));
    expect(kept.without(new Set(['low'])).bytes).to.deep.equal(
      parsed.without(new Set(['low'])).bytes,
    );
    expect(body.without(new Set(['absent']))).to.equal(body);

    // A header that shrinks (map16 to fixmap), and a repeated key, keep their places right.
    const wide = Buffer.concat([
      Buffer.from([0xde, 0x00, 0x12]),
      ...Array.from({ length: 17 }, (_, i) => Buffer.concat([str(`k${i}`), fixint(i)])),
      Buffer.concat([str('k3'), str('again')]),
    ]);
    const narrowed = EncodedMap.parse(wide).without(new Set(['k0', 'k1', 'k2', 'k4', 'k5']));
    const reparsed = EncodedMap.parse(narrowed.bytes);
    expect(narrowed.bytes[0]).to.equal(0x8d);
    expect(narrowed.size).to.equal(reparsed.size);
    for (const key of reparsed.keys()) {
      expect(narrowed.get(key), key).to.deep.equal(reparsed.get(key));
    }
    expect(narrowed.get('k3')).to.equal('again');
  });

  it('refuses what is not one well-formed map', () => {
    const refused = (bytes: Buffer) => {
      expect(() => EncodedMap.parse(bytes), bytes.toString('hex')).to.throw(MalformedMapError);
    };
    refused(Buffer.alloc(0));
    refused(array(nil()));
    refused(str('a map?'));
    refused(gemBody.subarray(0, gemBody.length - 1)); // truncated
    refused(Buffer.concat([gemBody, nil()])); // trailing bytes
    refused(Buffer.from([0x81, 0xa1, 0x61, 0xc1])); // 0xc1 is never used
    refused(Buffer.from([0x81, 0xa1, 0x61, 0xdd, 0xff, 0xff, 0xff, 0xff])); // 4G items, no bytes
    refused(Buffer.from([0x81, 0xa1, 0x61, 0xdb, 0xff, 0xff, 0xff, 0xff])); // str past the end
  });

  it('walks deep nesting without recursion', () => {
    const depth = 100_000;
    const bytes = Buffer.concat([
      Buffer.from([0x81, 0xa1, 0x61]),
      Buffer.alloc(depth, 0x91),
      nil(),
    ]);
    expect(EncodedMap.parse(bytes).size).to.equal(1);
  });
});
