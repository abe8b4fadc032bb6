// The values a fuzzed request is made of: integers at and past the edges of their wire types,
// names a server must refuse, and MessagePack bodies written byte by byte in every encoding,
// well-formed or not, nested a few levels or hundreds of thousands.
import fc from 'fast-check';

const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** A signed 32-bit integer: small ones most, the edges often. */
export const int32 = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -2, max: 8 }) },
  { weight: 2, arbitrary: fc.constantFrom(-1, INT32_MAX, -INT32_MAX - 1, 1000, -1000) },
  { weight: 1, arbitrary: fc.integer() },
);

/** An unsigned 32-bit integer; `caps` are values the server treats specially (a cap, cap + 1). */
export const uint32 = (...caps: number[]) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 8 }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(UINT32_MAX, INT32_MAX, INT32_MAX + 1, 65_536, ...caps),
    },
    { weight: 1, arbitrary: fc.nat({ max: UINT32_MAX }) },
  );

/** A signed 64-bit integer. */
export const int64 = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt(-2n, 40n) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      INT64_MIN,
      INT64_MAX,
      -1n,
      2n ** 31n,
      -(2n ** 31n) - 1n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
    ),
  },
  { weight: 1, arbitrary: fc.bigInt(INT64_MIN, INT64_MAX) },
);

/** An unsigned 64-bit integer (ids, cursors, epochs). */
export const uint64 = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt(0n, 40n) },
  { weight: 2, arbitrary: fc.constantFrom(UINT64_MAX, INT64_MAX, 2n ** 63n, 2n ** 53n + 1n) },
  { weight: 1, arbitrary: fc.bigInt(0n, UINT64_MAX) },
);

/** An enum's value: one it has, or one it does not. */
export const enumValue = (known: readonly number[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...known) },
    { weight: 1, arbitrary: fc.constantFrom(known.length, 99, -1, INT32_MAX) },
  );

/**
 * Text that is never a lowercase identifier ([a-z][a-z0-9_]*): empty, upper case, punctuation,
 * quotes and backticks, SQL, a NUL, non-ASCII, or past every length limit.
 */
export const notIdentifier = fc.oneof(
  fc.constantFrom(
    '',
    'Rate',
    '1rate',
    'rate-x',
    'rate`; DROP TABLE x; --',
    "rate' OR '1'='1",
    'rate\u0000',
    'räte',
    '../rate',
    '_rate',
    ' rate',
  ),
  fc.string({ maxLength: 12 }).map((text) => `-${text}`),
  fc.string({ unit: 'grapheme', maxLength: 8 }).map((text) => `É${text}`),
  fc.constantFrom(65, 256, 4096, 70_000).map((length) => `a${'x'.repeat(length)}`),
);

/** A name: one of `known` mostly, else an identifier that is no such name, else no identifier. */
export const nameOf = (known: readonly string[], unknownPool: readonly string[]) =>
  fc.oneof(
    { weight: 16, arbitrary: fc.constantFrom(...known) },
    { weight: 1, arbitrary: fc.constantFrom(...unknownPool) },
    { weight: 1, arbitrary: notIdentifier },
  );

/** Any short text, ASCII or not. */
export const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom(256, 3000).map((length) => 'y'.repeat(length)) },
);

/**
 * A repeated field: a few items, or (`huge`) far more than any cap, one small item over and
 * over: the cap, the count just past it, and 20,000. Only the outermost repeated field of a
 * message is huge, with an item that holds no huge field or large body of its own, so that no
 * message grows past a few MB.
 */
export const repeated = <T, U = T>(
  item: fc.Arbitrary<T>,
  huge: { readonly caps: readonly number[]; readonly item: fc.Arbitrary<U> },
  maxLength = 4,
): fc.Arbitrary<(T | U)[]> =>
  fc.oneof(
    { weight: 12, arbitrary: fc.array(item as fc.Arbitrary<T | U>, { maxLength }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(huge.item, fc.constantFrom(...huge.caps, ...huge.caps.map((cap) => cap + 1), 20_000))
        .map(([one, count]): (T | U)[] => Array.from({ length: count }, () => one)),
    },
  );

// MessagePack, byte by byte.

const byte = (...bytes: number[]) => Buffer.from(bytes);

function uintBytes(value: number, width: 1 | 2 | 4): Buffer {
  const bytes = Buffer.alloc(width);
  bytes.writeUIntBE(value, 0, width);
  return bytes;
}

type LengthClass = 'fix' | 8 | 16 | 32;

/** A header of a length-prefixed value: `fix` (when the length fits) or 8/16/32-bit lengths. */
function lengthHeader(
  length: number,
  lengthClass: LengthClass,
  codes: { fix?: [number, number]; 8?: number; 16: number; 32: number },
): Buffer {
  if (lengthClass === 'fix' && codes.fix && length <= codes.fix[1]) {
    return byte(codes.fix[0] | length);
  }
  if ((lengthClass === 'fix' || lengthClass === 8) && codes[8] !== undefined && length <= 0xff) {
    return byte(codes[8], length);
  }
  if (lengthClass !== 32 && length <= 0xffff)
    return Buffer.concat([byte(codes[16]), uintBytes(length, 2)]);
  return Buffer.concat([byte(codes[32]), uintBytes(length, 4)]);
}

const lengthClass = fc.constantFrom<LengthClass>('fix', 'fix', 8, 16, 32);

export const mpString = (bytes: Buffer, cls: LengthClass = 'fix') =>
  Buffer.concat([
    lengthHeader(bytes.length, cls, { fix: [0xa0, 31], 8: 0xd9, 16: 0xda, 32: 0xdb }),
    bytes,
  ]);
const mpBinary = (bytes: Buffer, cls: LengthClass) =>
  Buffer.concat([lengthHeader(bytes.length, cls, { 8: 0xc4, 16: 0xc5, 32: 0xc6 }), bytes]);
export const mpArray = (items: readonly Buffer[], cls: LengthClass = 'fix') =>
  Buffer.concat([
    lengthHeader(items.length, cls, { fix: [0x90, 15], 16: 0xdc, 32: 0xdd }),
    ...items,
  ]);
export const mpMap = (entries: readonly (readonly [Buffer, Buffer])[], cls: LengthClass = 'fix') =>
  Buffer.concat([
    lengthHeader(entries.length, cls, { fix: [0x80, 15], 16: 0xde, 32: 0xdf }),
    ...entries.flat(),
  ]);
export const mpKey = (key: string) => mpString(Buffer.from(key, 'utf8'));

/** An integer in the given format: `0xcc`..`0xd3`, or a fixint. */
function mpInteger(code: number, value: bigint): Buffer {
  const widths: Record<number, [number, boolean]> = {
    0xcc: [1, false],
    0xcd: [2, false],
    0xce: [4, false],
    0xcf: [8, false],
    0xd0: [1, true],
    0xd1: [2, true],
    0xd2: [4, true],
    0xd3: [8, true],
  };
  const [width, signed] = widths[code]!;
  const bits = BigInt(width * 8);
  const wrapped = BigInt.asUintN(Number(bits), signed ? BigInt.asIntN(Number(bits), value) : value);
  const bytes = Buffer.alloc(1 + width);
  bytes[0] = code;
  for (let i = 0; i < width; i++) {
    bytes[width - i] = Number((wrapped >> BigInt(8 * i)) & 0xffn);
  }
  return bytes;
}

/** An integer written in the smallest format that holds it, as most encoders do. */
export function mpSmallestInteger(value: bigint): Buffer {
  if (value >= 0n && value <= 0x7fn) return byte(Number(value));
  if (value < 0n && value >= -32n) return byte(Number(value) & 0xff);
  if (value >= 0n) {
    if (value <= 0xffn) return mpInteger(0xcc, value);
    if (value <= 0xffffn) return mpInteger(0xcd, value);
    if (value <= 0xffffffffn) return mpInteger(0xce, value);
    return mpInteger(0xcf, value);
  }
  if (value >= -0x80n) return mpInteger(0xd0, value);
  if (value >= -0x8000n) return mpInteger(0xd1, value);
  if (value >= -0x80000000n) return mpInteger(0xd2, value);
  return mpInteger(0xd3, value);
}

const mpFloat32 = (value: number) => {
  const bytes = Buffer.alloc(5);
  bytes[0] = 0xca;
  bytes.writeFloatBE(value, 1);
  return bytes;
};
const mpFloat64 = (value: number) => {
  const bytes = Buffer.alloc(9);
  bytes[0] = 0xcb;
  bytes.writeDoubleBE(value, 1);
  return bytes;
};

const smallBytes = fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes));

/** Every scalar MessagePack has, in every format it may take. */
export const mpScalar: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constantFrom(byte(0xc0), byte(0xc2), byte(0xc3)),
  fc.integer({ min: -32, max: 127 }).map((value) => byte(value & 0xff)),
  fc
    .tuple(fc.constantFrom(0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3), int64)
    .map(([code, value]) => mpInteger(code, value)),
  uint64.map((value) => mpInteger(0xcf, value)),
  fc.float().map(mpFloat32),
  fc.double().map(mpFloat64),
  fc
    .tuple(fc.string({ unit: 'grapheme', maxLength: 20 }), lengthClass)
    .map(([value, cls]) => mpString(Buffer.from(value, 'utf8'), cls)),
  // A string whose bytes are not UTF-8.
  fc
    .tuple(smallBytes, lengthClass)
    .map(([bytes, cls]) => mpString(Buffer.concat([byte(0xff), bytes]), cls)),
  fc.tuple(smallBytes, lengthClass).map(([bytes, cls]) => mpBinary(bytes, cls)),
  // Extensions: fixext 1..16, ext 8/16/32; type -1 is the timestamp, of length 4, 8 or 12 only.
  fc
    .tuple(fc.integer({ min: -128, max: 127 }), fc.constantFrom(1, 2, 4, 8, 16), smallBytes)
    .map(([type, length, data]) =>
      Buffer.concat([
        byte({ 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 }[length]!, type & 0xff),
        Buffer.concat([data, Buffer.alloc(length)]).subarray(0, length),
      ]),
    ),
  fc
    .tuple(fc.integer({ min: -128, max: 127 }), smallBytes, fc.constantFrom(0xc7, 0xc8, 0xc9))
    .map(([type, data, code]) => {
      const width = code === 0xc7 ? 1 : code === 0xc8 ? 2 : 4;
      return Buffer.concat([byte(code), uintBytes(data.length, width), byte(type & 0xff), data]);
    }),
  fc
    .tuple(fc.constantFrom(4, 8, 12, 3, 0), smallBytes)
    .map(([length, data]) =>
      Buffer.concat([
        byte(0xc7, length, 0xff),
        Buffer.concat([data, Buffer.alloc(length)]).subarray(0, length),
      ]),
    ),
);

/** Any MessagePack value, a few levels deep: maps may have keys of any type. */
export const mpValue: fc.Arbitrary<Buffer> = fc.letrec<{ value: Buffer }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: mpScalar },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(tie('value'), { maxLength: 4 }), lengthClass)
        .map(([items, cls]) => mpArray(items, cls)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(fc.tuple(mpKeyBytes(), tie('value')), { maxLength: 4 }), lengthClass)
        .map(([entries, cls]) => mpMap(entries, cls)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(fc.tuple(tie('value'), tie('value')), { maxLength: 3 }), lengthClass)
        .map(([entries, cls]) => mpMap(entries, cls)),
    },
  ),
})).value;

function mpKeyBytes(): fc.Arbitrary<Buffer> {
  return fc
    .oneof(
      { weight: 4, arbitrary: fc.constantFrom('a', 'b', 'net_price', 'nested', '__proto__', '') },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }) },
    )
    .map(mpKey);
}

/** A map with string keys, the entries given as keys and encoded values. */
const mpStringMap = fc
  .tuple(fc.array(fc.tuple(mpKeyBytes(), mpValue), { maxLength: 6 }), lengthClass)
  .map(([entries, cls]) => mpMap(entries, cls));

/** A value nested `depth` levels deep: arrays, maps or both, nil at the bottom. */
export function nested(depth: number, kind: 'array' | 'map' | 'mixed'): Buffer {
  const arrayLevel = byte(0x91);
  const mapLevel = Buffer.concat([byte(0x81), mpKey('k')]);
  const levels = Buffer.alloc(depth * 3);
  let at = 0;
  for (let level = 0; level < depth; level++) {
    const one = kind === 'array' || (kind === 'mixed' && level % 2 === 0) ? arrayLevel : mapLevel;
    one.copy(levels, at);
    at += one.length;
  }
  return Buffer.concat([levels.subarray(0, at), byte(0xc0)]);
}

/** Depths of the deeply nested bodies drawn: past any limit a reader has, at the largest. */
export const NESTING_DEPTHS: readonly number[] = [16, 100, 512, 1000, 5000, 20_000, 200_000];

/** A small well-formed body: what a huge repeated field repeats. */
export const smallBody = fc
  .array(fc.tuple(mpKeyBytes(), mpScalar), { maxLength: 3 })
  .map((entries) => mpMap(entries));

/** A value nested one of `depths` deep. */
export const deepValue = (depths: readonly number[]) =>
  fc
    .tuple(fc.constantFrom(...depths), fc.constantFrom('array', 'map', 'mixed' as const))
    .map(([depth, kind]) => nested(depth, kind));

/** A body in which some value is nested one of `depths` deep. */
export const deepBody = (depths: readonly number[]) =>
  deepValue(depths).map((value) => mpMap([[mpKey('deep'), value]]));

/** Bytes that are not one well-formed MessagePack map. */
const malformedBody = fc.oneof(
  // Cut short, or with bytes after it.
  fc
    .tuple(mpStringMap, fc.nat())
    .map(([map, cut]) => map.subarray(0, cut % Math.max(map.length, 1))),
  fc.tuple(mpStringMap, smallBytes).map(([map, tail]) => Buffer.concat([map, byte(0xc0), tail])),
  // 0xc1, which MessagePack never uses.
  fc.constant(Buffer.concat([byte(0x81), mpKey('a'), byte(0xc1)])),
  // Lengths that promise far more than the bytes hold.
  fc
    .constantFrom(0xdd, 0xdf, 0xdb, 0xc6, 0xc9)
    .map((code) => Buffer.concat([byte(0x81), mpKey('a'), byte(code, 0xff, 0xff, 0xff, 0xff)])),
  fc.constant(byte(0xdf, 0xff, 0xff, 0xff, 0xff)),
  fc.constant(Buffer.alloc(0)),
  smallBytes,
);

/** A body whose top-level keys include index fields of the model (never allowed in a cell). */
const bodyWithField = (fields: readonly string[]) =>
  fc.tuple(fc.constantFrom(...fields), mpValue, mpStringMap).map(([field, value, rest]) =>
    mpMap([
      [mpKey(field), value],
      [mpKey('x'), rest],
    ]),
  );

/** A large body: one binary of a size that counts (past the message limit at the largest). */
const largeBody = fc
  .constantFrom(64 * 1024, 1024 * 1024, 3 * 1024 * 1024)
  .map((size) => mpMap([[mpKey('blob'), mpBinary(Buffer.alloc(size, 0x61), 32)]]));

/**
 * A cell body as a writer might send it: mostly a well-formed map with string keys, else one
 * nested deep, a map with other keys, no map at all, malformed bytes, index fields, large.
 */
export const bodyOf = (indexFields: readonly string[], depths: readonly number[]) =>
  fc.oneof(
    { weight: 20, arbitrary: mpStringMap },
    { weight: depths.length > 0 ? 4 : 0, arbitrary: deepBody(depths.length > 0 ? depths : [1]) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(mpValue, mpValue), { minLength: 1, maxLength: 3 })
        .map((entries) => mpMap(entries)),
    },
    { weight: 1, arbitrary: mpValue },
    { weight: 2, arbitrary: malformedBody },
    { weight: 1, arbitrary: bodyWithField(indexFields.length > 0 ? indexFields : ['id']) },
    { weight: 1, arbitrary: largeBody },
  );
