// MessagePack values as trees that say how each value is written, for the property tests of
// test/properties ("whatever the server accepts, every client reads back"). A tree names the
// format of every value (a 5 written as a uint64, a 3-byte string as a str32), because the
// store keeps a body's bytes as sent: every format a writer may choose must survive every path.
//
// This module holds the shared parts: the random trees (fast-check), their exact bytes, a
// strict parser of those bytes, the shallow merge the server promises, and what each reader
// should make of a tree, as a typed description that the reader's own output is compared with:
// - the SDK (docs/sdk.md's mapping: safe integers as numbers, larger as bigints, floats as
//   numbers, Maps for non-string keys, MessagePackExtension, Buffer, a timestamp as a Date);
// - the CLI's JSON (docs/cli.md: 64-bit integers, floats with a fraction or exponent, the `$`
//   forms);
// - Python's msgpack and Ruby's msgpack (the gem's decoder), described by the scripts beside
//   this file in the common form below.
import fc from 'fast-check';
import { MessagePackExtension } from '@shameless/proto';

export type IntFormat =
  | 'positive fixint'
  | 'negative fixint'
  | 'uint8'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64';
export type FloatFormat = 'float32' | 'float64';
export type StrFormat = 'fixstr' | 'str8' | 'str16' | 'str32';
export type BinFormat = 'bin8' | 'bin16' | 'bin32';
export type ExtFormat =
  'fixext1' | 'fixext2' | 'fixext4' | 'fixext8' | 'fixext16' | 'ext8' | 'ext16' | 'ext32';
export type ArrayFormat = 'fixarray' | 'array16' | 'array32';
export type MapFormat = 'fixmap' | 'map16' | 'map32';

/** One MessagePack value and the format it is written in. */
export type Tree =
  | { readonly kind: 'nil' }
  | { readonly kind: 'bool'; readonly value: boolean }
  | { readonly kind: 'int'; readonly value: bigint; readonly format: IntFormat }
  /** `bits`: the IEEE 754 bits of the float32 or float64, so NaN payloads are exact too. */
  | { readonly kind: 'float'; readonly bits: bigint; readonly format: FloatFormat }
  | { readonly kind: 'str'; readonly text: string; readonly format: StrFormat }
  | { readonly kind: 'bin'; readonly bytes: Uint8Array; readonly format: BinFormat }
  | {
      readonly kind: 'ext';
      readonly type: number;
      readonly data: Uint8Array;
      readonly format: ExtFormat;
    }
  | { readonly kind: 'array'; readonly items: readonly Tree[]; readonly format: ArrayFormat }
  | { readonly kind: 'map'; readonly entries: readonly MapEntry[]; readonly format: MapFormat };

export type MapEntry = readonly [key: Tree, value: Tree];
type MapTree = Extract<Tree, { kind: 'map' }>;

/** The index fields of the property tests' model: never a body's own key. */
export const INDEX_FIELDS: ReadonlySet<string> = new Set(['batch', 'item']);

// ---------------------------------------------------------------------------------------------
// Formats: which values each can hold.

const INT_RANGES: Readonly<Record<IntFormat, readonly [bigint, bigint]>> = {
  'positive fixint': [0n, 127n],
  'negative fixint': [-32n, -1n],
  uint8: [0n, 0xffn],
  uint16: [0n, 0xffffn],
  uint32: [0n, 0xffff_ffffn],
  uint64: [0n, 2n ** 64n - 1n],
  int8: [-128n, 127n],
  int16: [-32768n, 32767n],
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
};
const INT_FORMATS = Object.keys(INT_RANGES) as IntFormat[];

/** The most bytes (or items, or entries) each sized format holds. */
const MOST: Readonly<Record<string, number>> = {
  fixstr: 31,
  str8: 0xff,
  str16: 0xffff,
  str32: 0xffff_ffff,
  bin8: 0xff,
  bin16: 0xffff,
  bin32: 0xffff_ffff,
  ext8: 0xff,
  ext16: 0xffff,
  ext32: 0xffff_ffff,
  fixarray: 15,
  array16: 0xffff,
  array32: 0xffff_ffff,
  fixmap: 15,
  map16: 0xffff,
  map32: 0xffff_ffff,
};
const FIXEXT_LENGTHS: Readonly<Record<string, number>> = {
  fixext1: 1,
  fixext2: 2,
  fixext4: 4,
  fixext8: 8,
  fixext16: 16,
};

export function intFormatsFor(value: bigint): IntFormat[] {
  return INT_FORMATS.filter((format) => {
    const [min, max] = INT_RANGES[format];
    return value >= min && value <= max;
  });
}

/** The formats of `family` that hold `size` bytes (or items), smallest first. */
function sizedFormats<F extends string>(family: readonly F[], size: number): F[] {
  return family.filter((format) =>
    format in FIXEXT_LENGTHS ? FIXEXT_LENGTHS[format] === size : size <= MOST[format]!,
  );
}
const STR_FORMATS: readonly StrFormat[] = ['fixstr', 'str8', 'str16', 'str32'];
const BIN_FORMATS: readonly BinFormat[] = ['bin8', 'bin16', 'bin32'];
const EXT_FORMATS: readonly ExtFormat[] = [
  'fixext1',
  'fixext2',
  'fixext4',
  'fixext8',
  'fixext16',
  'ext8',
  'ext16',
  'ext32',
];
const ARRAY_FORMATS: readonly ArrayFormat[] = ['fixarray', 'array16', 'array32'];
const MAP_FORMATS: readonly MapFormat[] = ['fixmap', 'map16', 'map32'];

export const strFormatsFor = (text: string) => sizedFormats(STR_FORMATS, utf8Length(text));
export const binFormatsFor = (bytes: Uint8Array) => sizedFormats(BIN_FORMATS, bytes.length);
export const extFormatsFor = (data: Uint8Array) => sizedFormats(EXT_FORMATS, data.length);
export const arrayFormatsFor = (count: number) => sizedFormats(ARRAY_FORMATS, count);
export const mapFormatsFor = (count: number) => sizedFormats(MAP_FORMATS, count);

const utf8Length = (text: string) => Buffer.byteLength(text, 'utf8');

// ---------------------------------------------------------------------------------------------
// Building trees by hand (the every-format example, the tests' own bodies).

export const nil: Tree = { kind: 'nil' };
export const bool = (value: boolean): Tree => ({ kind: 'bool', value });
/** An integer, in its smallest format unless one is given. */
export const int = (value: bigint | number, format?: IntFormat): Tree => {
  const big = BigInt(value);
  return { kind: 'int', value: big, format: format ?? intFormatsFor(big)[0]! };
};
export const float64 = (value: number): Tree => ({
  kind: 'float',
  bits: doubleBits(value),
  format: 'float64',
});
export const str = (text: string, format?: StrFormat): Tree => ({
  kind: 'str',
  text,
  format: format ?? strFormatsFor(text)[0]!,
});
export const bin = (bytes: Uint8Array, format?: BinFormat): Tree => ({
  kind: 'bin',
  bytes,
  format: format ?? binFormatsFor(bytes)[0]!,
});
export const ext = (type: number, data: Uint8Array, format?: ExtFormat): Tree => ({
  kind: 'ext',
  type,
  data,
  format: format ?? extFormatsFor(data)[0]!,
});
export const array = (items: readonly Tree[], format?: ArrayFormat): Tree => ({
  kind: 'array',
  items,
  format: format ?? arrayFormatsFor(items.length)[0]!,
});
export const map = (entries: readonly MapEntry[], format?: MapFormat): MapTree => ({
  kind: 'map',
  entries,
  format: format ?? mapFormatsFor(entries.length)[0]!,
});
/** A map with string keys, each in its smallest format. */
export const object = (entries: Readonly<Record<string, Tree>>): MapTree =>
  map(Object.entries(entries).map(([key, value]) => [str(key), value]));

export function doubleBits(value: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return view.getBigUint64(0);
}

function floatBitsOf(value: number): bigint {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, value);
  return BigInt(view.getUint32(0));
}

/** The number a float tree holds (a float32 widened exactly). */
export function floatValue(tree: Extract<Tree, { kind: 'float' }>): number {
  const view = new DataView(new ArrayBuffer(8));
  if (tree.format === 'float32') {
    view.setUint32(0, Number(tree.bits));
    return view.getFloat32(0);
  }
  view.setBigUint64(0, tree.bits);
  return view.getFloat64(0);
}

// ---------------------------------------------------------------------------------------------
// Bytes.

const TYPE_BYTE: Readonly<Record<string, number>> = {
  uint8: 0xcc,
  uint16: 0xcd,
  uint32: 0xce,
  uint64: 0xcf,
  int8: 0xd0,
  int16: 0xd1,
  int32: 0xd2,
  int64: 0xd3,
  float32: 0xca,
  float64: 0xcb,
  str8: 0xd9,
  str16: 0xda,
  str32: 0xdb,
  bin8: 0xc4,
  bin16: 0xc5,
  bin32: 0xc6,
  fixext1: 0xd4,
  fixext2: 0xd5,
  fixext4: 0xd6,
  fixext8: 0xd7,
  fixext16: 0xd8,
  ext8: 0xc7,
  ext16: 0xc8,
  ext32: 0xc9,
  array16: 0xdc,
  array32: 0xdd,
  map16: 0xde,
  map32: 0xdf,
};
/** The width of the length field of a sized format, by its name's last digits. */
const lengthWidth = (format: string): 1 | 2 | 4 =>
  format.endsWith('32') ? 4 : format.endsWith('16') ? 2 : 1;

/** The exact bytes of a tree, every value in the format it names. */
export function encodeTree(tree: Tree): Buffer {
  const parts: Buffer[] = [];
  writeTree(tree, parts);
  return Buffer.concat(parts);
}

function writeTree(tree: Tree, parts: Buffer[]): void {
  switch (tree.kind) {
    case 'nil':
      return void parts.push(Buffer.of(0xc0));
    case 'bool':
      return void parts.push(Buffer.of(tree.value ? 0xc3 : 0xc2));
    case 'int':
      return void parts.push(intBytes(tree.value, tree.format));
    case 'float': {
      if (tree.format === 'float32') {
        const bytes = Buffer.alloc(5);
        bytes[0] = 0xca;
        bytes.writeUInt32BE(Number(tree.bits), 1);
        return void parts.push(bytes);
      }
      const bytes = Buffer.alloc(9);
      bytes[0] = 0xcb;
      bytes.writeBigUInt64BE(tree.bits, 1);
      return void parts.push(bytes);
    }
    case 'str': {
      const utf8 = Buffer.from(tree.text, 'utf8');
      parts.push(
        tree.format === 'fixstr' ? Buffer.of(0xa0 | utf8.length) : sizedHeader(tree.format, utf8),
      );
      return void parts.push(utf8);
    }
    case 'bin':
      parts.push(sizedHeader(tree.format, tree.bytes));
      return void parts.push(Buffer.from(tree.bytes));
    case 'ext': {
      const fixed = tree.format in FIXEXT_LENGTHS;
      parts.push(fixed ? Buffer.of(TYPE_BYTE[tree.format]!) : sizedHeader(tree.format, tree.data));
      parts.push(Buffer.of(tree.type & 0xff));
      return void parts.push(Buffer.from(tree.data));
    }
    case 'array':
      parts.push(countHeader(tree.format, tree.items.length, 0x90));
      for (const item of tree.items) writeTree(item, parts);
      return;
    case 'map':
      parts.push(countHeader(tree.format, tree.entries.length, 0x80));
      for (const [key, value] of tree.entries) {
        writeTree(key, parts);
        writeTree(value, parts);
      }
      return;
  }
}

function intBytes(value: bigint, format: IntFormat): Buffer {
  if (format === 'positive fixint' || format === 'negative fixint') {
    return Buffer.of(Number(value) & 0xff);
  }
  const width = format.endsWith('64')
    ? 8
    : format.endsWith('32')
      ? 4
      : format.endsWith('16')
        ? 2
        : 1;
  const bytes = Buffer.alloc(1 + width);
  bytes[0] = TYPE_BYTE[format]!;
  const signed = format.startsWith('int');
  if (width === 8) {
    if (signed) bytes.writeBigInt64BE(value, 1);
    else bytes.writeBigUInt64BE(value, 1);
  } else if (signed) {
    bytes.writeIntBE(Number(value), 1, width);
  } else {
    bytes.writeUIntBE(Number(value), 1, width);
  }
  return bytes;
}

function sizedHeader(format: string, content: Uint8Array): Buffer {
  const width = lengthWidth(format);
  const header = Buffer.alloc(1 + width);
  header[0] = TYPE_BYTE[format]!;
  header.writeUIntBE(content.length, 1, width);
  return header;
}

function countHeader(format: ArrayFormat | MapFormat, count: number, fix: number): Buffer {
  if (format === 'fixarray' || format === 'fixmap') return Buffer.of(fix | count);
  const width = lengthWidth(format);
  const header = Buffer.alloc(1 + width);
  header[0] = TYPE_BYTE[format]!;
  header.writeUIntBE(count, 1, width);
  return header;
}

/**
 * The tree `bytes` hold, strictly: exactly one value, every format named as written. It reads
 * what a writer under test wrote (the SDK writing a body back), to compare formats.
 */
export function parseTree(bytes: Buffer): Tree {
  let position = 0;
  const take = (length: number): Buffer => {
    if (position + length > bytes.length) throw new Error(`cut short at byte ${position}`);
    const taken = bytes.subarray(position, position + length);
    position += length;
    return taken;
  };
  const uint = (width: number) => take(width).readUIntBE(0, width);
  const formatOf = (byte: number) =>
    Object.entries(TYPE_BYTE).find(([, type]) => type === byte)?.[0];
  const read = (): Tree => {
    const byte = uint(1);
    if (byte <= 0x7f) return int(byte, 'positive fixint');
    if (byte >= 0xe0) return int(byte - 0x100, 'negative fixint');
    if (byte <= 0x8f) return readMap(byte & 0x0f, 'fixmap');
    if (byte <= 0x9f) return readArray(byte & 0x0f, 'fixarray');
    if (byte <= 0xbf) return str(take(byte & 0x1f).toString('utf8'), 'fixstr');
    if (byte === 0xc0) return nil;
    if (byte === 0xc2 || byte === 0xc3) return bool(byte === 0xc3);
    const format = formatOf(byte);
    if (format === undefined) throw new Error(`0x${byte.toString(16)} starts no value`);
    if (format in INT_RANGES) {
      const width = format.endsWith('64') ? 8 : lengthWidth(format);
      const raw = take(width);
      const value = format.startsWith('int')
        ? width === 8
          ? raw.readBigInt64BE(0)
          : BigInt(raw.readIntBE(0, width))
        : width === 8
          ? raw.readBigUInt64BE(0)
          : BigInt(raw.readUIntBE(0, width));
      return int(value, format as IntFormat);
    }
    if (format === 'float32') return { kind: 'float', bits: BigInt(uint(4)), format };
    if (format === 'float64') return { kind: 'float', bits: take(8).readBigUInt64BE(0), format };
    if (format.startsWith('str')) {
      return str(take(uint(lengthWidth(format))).toString('utf8'), format as StrFormat);
    }
    if (format.startsWith('bin'))
      return bin(Buffer.from(take(uint(lengthWidth(format)))), format as BinFormat);
    if (format.includes('ext')) {
      const length = FIXEXT_LENGTHS[format] ?? uint(lengthWidth(format));
      const type = take(1).readInt8(0);
      return ext(type, Buffer.from(take(length)), format as ExtFormat);
    }
    const count = uint(lengthWidth(format));
    return format.startsWith('array')
      ? readArray(count, format as ArrayFormat)
      : readMap(count, format as MapFormat);
  };
  const readArray = (count: number, format: ArrayFormat): Tree => {
    const items: Tree[] = [];
    for (let i = 0; i < count; i++) items.push(read());
    return array(items, format);
  };
  const readMap = (count: number, format: MapFormat): Tree => {
    const entries: MapEntry[] = [];
    for (let i = 0; i < count; i++) entries.push([read(), read()]);
    return map(entries, format);
  };
  const tree = read();
  if (position !== bytes.length)
    throw new Error(`${bytes.length - position} bytes after the value`);
  return tree;
}

// ---------------------------------------------------------------------------------------------
// Trees as short text, for failure messages: every format and value, long contents cut.

export interface TreeTextOptions {
  /** Whether a NaN's payload counts (false: every NaN of a format prints alike). */
  readonly nanPayload?: boolean;
}

export function treeText(tree: Tree, options: TreeTextOptions = {}): string {
  switch (tree.kind) {
    case 'nil':
      return 'nil';
    case 'bool':
      return String(tree.value);
    case 'int':
      return `${tree.format} ${tree.value}`;
    case 'float': {
      const value = floatValue(tree);
      if (Number.isNaN(value) && options.nanPayload === false) return `${tree.format} NaN`;
      const digits = tree.format === 'float32' ? 8 : 16;
      return `${tree.format} 0x${tree.bits.toString(16).padStart(digits, '0')} (${numberText(value)})`;
    }
    case 'str':
      return `${tree.format} ${cut(JSON.stringify(tree.text), utf8Length(tree.text))}`;
    case 'bin':
      return `${tree.format} <${cut(Buffer.from(tree.bytes).toString('hex'), tree.bytes.length)}>`;
    case 'ext':
      return `${tree.format} type ${tree.type} <${cut(Buffer.from(tree.data).toString('hex'), tree.data.length)}>`;
    case 'array':
      return `${tree.format} [${tree.items.map((item) => treeText(item, options)).join(', ')}]`;
    case 'map':
      return `${tree.format} {${tree.entries
        .map(([key, value]) => `${treeText(key, options)}: ${treeText(value, options)}`)
        .join(', ')}}`;
  }
}

function cut(text: string, bytes: number): string {
  return text.length <= 48 ? text : `${text.slice(0, 40)}… (${bytes} bytes)`;
}

/** A number as text that tells every double apart, -0 included. */
export const numberText = (value: number): string => (Object.is(value, -0) ? '-0' : String(value));

/** The tree printed as its text wherever fast-check prints a counterexample. */
function printable<T extends Tree>(tree: T): T {
  Object.defineProperty(tree, fc.toStringMethod, { value: () => treeText(tree) });
  return tree;
}

// ---------------------------------------------------------------------------------------------
// Random trees.

/** Integers at every format's edges, 2^53 ± 1 and the 64-bit ends included. */
const INT_EDGES: readonly bigint[] = [
  0n,
  1n,
  31n,
  32n,
  127n,
  128n,
  255n,
  256n,
  32767n,
  32768n,
  65535n,
  65536n,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n - 1n,
  2n ** 32n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  2n ** 63n,
  2n ** 64n - 1n,
  -1n,
  -32n,
  -33n,
  -128n,
  -129n,
  -32768n,
  -32769n,
  -(2n ** 31n),
  -(2n ** 31n) - 1n,
  -(2n ** 53n) + 1n,
  -(2n ** 53n),
  -(2n ** 53n) - 1n,
  -(2n ** 63n),
];

const intValue = fc.oneof(
  fc.constantFrom(...INT_EDGES),
  fc.integer({ min: -40, max: 300 }).map(BigInt),
  fc.bigInt({ min: -(2n ** 31n) - 2n, max: 2n ** 32n + 2n }),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
);

/** An integer in any format that holds it (a 5 may be a uint64). */
const intTree: fc.Arbitrary<Tree> = intValue.chain((value) =>
  fc.constantFrom(...intFormatsFor(value)).map((format): Tree => ({ kind: 'int', value, format })),
);

/** Float bits that no float arbitrary names on purpose: NaN payloads, subnormal ends. */
const FLOAT64_EDGES: readonly bigint[] = [
  0x7ff8_0000_0000_0000n, // the usual NaN
  0x7ff0_0000_0000_0001n, // a signalling NaN
  0xfff8_0000_0000_0001n, // a negative NaN with a payload
  0x0000_0000_0000_0001n, // the smallest subnormal
  0x000f_ffff_ffff_ffffn, // the largest subnormal
  0x8000_0000_0000_0000n, // -0
  0x7ff0_0000_0000_0000n, // Infinity
  0xfff0_0000_0000_0000n, // -Infinity
  0x4340_0000_0000_0000n, // 2^53: a whole float a JS reader cannot tell from an integer
  0x3ff0_0000_0000_0000n, // 1.0
];
const FLOAT32_EDGES: readonly number[] = [
  0x7fc0_0000,
  0x7f80_0001,
  0xffc0_0001,
  0x0000_0001,
  0x007f_ffff,
  0x8000_0000,
  0x7f80_0000,
  0xff80_0000,
  0x3f80_0000,
  0x3dcc_cccd, // 0.1f: not 0.1 as a float64
];

const floatTree: fc.Arbitrary<Tree> = fc.oneof(
  fc
    .oneof(
      fc.double().map(doubleBits),
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      fc.constantFrom(...FLOAT64_EDGES),
    )
    .map((bits): Tree => ({ kind: 'float', bits, format: 'float64' })),
  fc
    .oneof(
      fc.float().map(floatBitsOf),
      fc.integer({ min: 0, max: 0xffff_ffff }).map(BigInt),
      fc.constantFrom(...FLOAT32_EDGES).map(BigInt),
    )
    .map((bits): Tree => ({ kind: 'float', bits, format: 'float32' })),
);

/** Keys that mean something to a reader: a prototype, array indices, the CLI's forms. */
const SPECIAL_KEYS: readonly string[] = [
  '',
  '__proto__',
  'constructor',
  'toString',
  '0',
  '1',
  '10',
  '-1',
  '01',
  '4294967294',
  '4294967295',
  '$float',
  '$map',
  '$base64',
  '$ext',
  '$timestamp',
];

const keyText = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(...SPECIAL_KEYS) },
);

/** Text of `bytes` UTF-8 bytes or a few more: `unit` repeated. */
const textOfAbout = (unit: string, bytes: number) =>
  unit.repeat(Math.ceil(bytes / Math.max(1, utf8Length(unit))));

const text = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 8, maxLength: 90 }) },
  {
    // Across str8's end: 250 to 260 bytes.
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }),
        fc.integer({ min: 250, max: 260 }),
      )
      .map(([unit, bytes]) => unit.repeat(bytes)),
  },
);

const strTree = (texts: fc.Arbitrary<string>): fc.Arbitrary<Tree> =>
  texts.chain((value) =>
    fc
      .constantFrom(...strFormatsFor(value))
      .map((format): Tree => ({ kind: 'str', text: value, format })),
  );

const bytes = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 250, maxLength: 260 }) },
);

const binTree: fc.Arbitrary<Tree> = bytes.chain((value) =>
  fc
    .constantFrom(...binFormatsFor(value))
    .map((format): Tree => ({ kind: 'bin', bytes: value, format })),
);

/** Valid timestamps (type -1) in each layout: 32-bit seconds; 34-bit seconds and nanoseconds; 96-bit. */
const timestampData = fc.oneof(
  fc.integer({ min: 0, max: 0xffff_ffff }).map((seconds) => {
    const data = Buffer.alloc(4);
    data.writeUInt32BE(seconds);
    return data;
  }),
  fc
    .tuple(fc.bigInt({ min: 0n, max: 2n ** 34n - 1n }), fc.integer({ min: 0, max: 999_999_999 }))
    .map(([seconds, nanoseconds]) => {
      const data = Buffer.alloc(8);
      data.writeBigUInt64BE((BigInt(nanoseconds) << 34n) | seconds);
      return data;
    }),
  fc
    .tuple(
      fc.oneof(
        // Within a Date's range (±8.64e12 s), and anywhere in 64 bits.
        fc.bigInt({ min: -8_640_000_000_000n, max: 8_640_000_000_000n }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      ),
      fc.integer({ min: 0, max: 999_999_999 }),
    )
    .map(([seconds, nanoseconds]) => {
      const data = Buffer.alloc(12);
      data.writeUInt32BE(nanoseconds);
      data.writeBigInt64BE(seconds, 4);
      return data;
    }),
);

const extTree: fc.Arbitrary<Tree> = fc
  .oneof(
    {
      weight: 4,
      arbitrary: fc.tuple(
        // Any type but the timestamp's, whose data has a meaning: negative (reserved) ones too.
        fc.integer({ min: -128, max: 127 }).filter((type) => type !== -1),
        fc.oneof(
          fc
            .constantFrom(1, 2, 4, 8, 16)
            .chain((length) => fc.uint8Array({ minLength: length, maxLength: length })),
          bytes,
        ),
      ),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constant(-1), timestampData) },
  )
  .chain(([type, data]) =>
    fc
      .constantFrom(...extFormatsFor(data))
      .map((format): Tree => ({ kind: 'ext', type, data, format })),
  );

const scalarTree: fc.Arbitrary<Tree> = fc.oneof(
  fc.constant(nil),
  fc.boolean().map(bool),
  intTree,
  floatTree,
  strTree(text),
  binTree,
  extTree,
);

/**
 * A map key other readers can hold apart: Python's dict takes 1, 1.0 and True for one key and
 * Ruby's Hash takes the string "a" and the binary "a" for one, so each map's keys differ in
 * these classes (a NaN is never a key: it equals no key, itself included).
 */
function keyClass(key: Tree): string {
  switch (key.kind) {
    case 'nil':
      return 'nil';
    case 'bool':
      return `number ${key.value ? 1 : 0}`;
    case 'int':
      return `number ${key.value}`;
    case 'float': {
      const value = floatValue(key);
      return Number.isInteger(value)
        ? `number ${BigInt(value)}`
        : `number ${numberText(value + 0)}`;
    }
    case 'str':
      return `bytes ${Buffer.from(key.text, 'utf8').toString('hex')}`;
    case 'bin':
      return `bytes ${Buffer.from(key.bytes).toString('hex')}`;
    default:
      return treeText(key);
  }
}

const mixedKey: fc.Arbitrary<Tree> = fc.oneof(
  strTree(keyText),
  intTree,
  floatTree.filter((key) => !Number.isNaN(floatValue(key as Extract<Tree, { kind: 'float' }>))),
  binTree,
  fc.boolean().map(bool),
  fc.constant(nil),
);

const withArrayFormat = (items: Tree[]): fc.Arbitrary<Tree> =>
  fc
    .constantFrom(...arrayFormatsFor(items.length))
    .map((format): Tree => ({ kind: 'array', items, format }));

const withMapFormat = (entries: MapEntry[]): fc.Arbitrary<MapTree> =>
  fc
    .constantFrom(...mapFormatsFor(entries.length))
    .map((format): MapTree => ({ kind: 'map', entries, format }));

/** Entries with keys of `keys`, unique by `by`, values of `values`. */
const entriesOf = (
  keys: fc.Arbitrary<Tree>,
  by: (key: Tree) => string,
  values: fc.Arbitrary<Tree>,
  constraints: { minLength?: number; maxLength: number },
): fc.Arbitrary<MapEntry[]> =>
  fc
    .uniqueArray(keys, { ...constraints, selector: by })
    .chain((unique) =>
      fc.tuple(...unique.map((key) => values.map((value): MapEntry => [key, value]))),
    );

const stringKey = strTree(keyText);
const byText = (key: Tree) => (key as Extract<Tree, { kind: 'str' }>).text;

/** 16 to 40 items or entries of scalars: past fixarray and fixmap. */
const wideTree: fc.Arbitrary<Tree> = fc.oneof(
  fc.array(scalarTree, { minLength: 16, maxLength: 40 }).chain(withArrayFormat),
  entriesOf(stringKey, byText, scalarTree, { minLength: 16, maxLength: 40 }).chain(withMapFormat),
);

/** A scalar inside 2 to 32 levels of one-item arrays and one-entry maps. */
const deepTree: fc.Arbitrary<Tree> = fc
  .tuple(
    scalarTree,
    fc.array(fc.oneof(fc.constant(null), stringKey), { minLength: 2, maxLength: 32 }),
  )
  .map(([leaf, levels]) =>
    levels.reduce<Tree>(
      (inner, key) => (key === null ? array([inner]) : map([[key, inner]])),
      leaf,
    ),
  );

/**
 * Any value: scalars, arrays and maps (string keys mostly, any scalar keys too), some wide
 * (array16/map16 by necessity), some nested deep (chains of up to 32 levels).
 */
export const valueTree: fc.Arbitrary<Tree> = fc.letrec<{ value: Tree }>((tie) => {
  const value = tie('value');
  const options = { maxLength: 5, depthIdentifier: 'value' } as const;
  return {
    value: fc.oneof(
      { depthSize: 'small', maxDepth: 5, depthIdentifier: 'value' },
      { weight: 6, arbitrary: scalarTree },
      { weight: 2, arbitrary: fc.array(value, options).chain(withArrayFormat) },
      { weight: 2, arbitrary: entriesOf(stringKey, byText, value, options).chain(withMapFormat) },
      { weight: 1, arbitrary: entriesOf(mixedKey, keyClass, value, options).chain(withMapFormat) },
      { weight: 1, arbitrary: wideTree },
      { weight: 1, arbitrary: deepTree },
    ),
  };
}).value;

/** A value too large for a 16-bit length (str32, bin32, ext32 by necessity), or past 255 bytes. */
const largeTree: fc.Arbitrary<Tree> = fc
  .tuple(
    fc.constantFrom('str', 'bin', 'ext'),
    fc.oneof(fc.integer({ min: 256, max: 1500 }), fc.integer({ min: 65_536, max: 66_000 })),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }),
    fc.integer({ min: -128, max: 127 }).filter((type) => type !== -1),
  )
  .chain(([kind, size, unit, type]) => {
    if (kind === 'str') return strTree(fc.constant(textOfAbout(unit, size)));
    const data = Buffer.alloc(size, utf8Length(unit) * 37);
    if (kind === 'bin') {
      return fc
        .constantFrom(...binFormatsFor(data))
        .map((format): Tree => ({ kind: 'bin', bytes: data, format }));
    }
    return fc
      .constantFrom(...extFormatsFor(data))
      .map((format): Tree => ({ kind: 'ext', type, data, format }));
  });

/** A body's own key: a string, never an index field of the tests' model. */
const bodyKey: fc.Arbitrary<Tree> = stringKey.filter((key) => !INDEX_FIELDS.has(byText(key)));

/** A body: a map with unique string keys (none an index field), its values any values. */
export const bodyTree: fc.Arbitrary<MapTree> = entriesOf(
  bodyKey,
  byText,
  fc.oneof({ weight: 12, arbitrary: valueTree }, { weight: 1, arbitrary: largeTree }),
  { maxLength: 8 },
)
  .chain(withMapFormat)
  .map(printable);

/** A few bodies at once: what one round of a property writes and reads back. */
export const bodies = (most: number): fc.Arbitrary<MapTree[]> =>
  fc.array(bodyTree, { minLength: 1, maxLength: most });

/**
 * A body and a patch for a merge: the patch's keys are some of the body's (each perhaps in
 * another string format: a key is its text) and new ones.
 */
export const bodyAndPatch: fc.Arbitrary<[MapTree, MapTree]> = bodyTree.chain((body) => {
  const bodyKeys = body.entries.map(([key]) => byText(key));
  const patchKey = fc.oneof(
    bodyKey,
    ...(bodyKeys.length === 0
      ? []
      : [fc.constantFrom(...bodyKeys).chain((key) => strTree(fc.constant(key)))]),
  );
  return entriesOf(patchKey, byText, valueTree, { maxLength: 8 })
    .chain(withMapFormat)
    .map((patch): [MapTree, MapTree] => [body, printable(patch)]);
});

// ---------------------------------------------------------------------------------------------
// Every format at once: the example each property runs first, so that every format and length
// class is covered whatever the seed and the number of runs.

const bytesOf = (length: number) => Buffer.alloc(length, 0xa5);
const floatOf = (format: FloatFormat, bits: bigint | number): Tree => ({
  kind: 'float',
  bits: BigInt(bits),
  format,
});

export function everyFormatBody(): MapTree {
  const ints = INT_EDGES.flatMap((value) =>
    intFormatsFor(value).map((format) => int(value, format)),
  );
  const floats = [
    ...FLOAT64_EDGES.map((bits) => floatOf('float64', bits)),
    ...FLOAT32_EDGES.map((bits) => floatOf('float32', bits)),
    float64(0.1),
    float64(-1e300),
    float64(2 ** 60),
  ];
  const strings = [0, 1, 31, 32, 255, 256, 65_535, 65_536].flatMap((length) =>
    strFormatsFor('x'.repeat(length)).map((format) => str('x'.repeat(length), format)),
  );
  const binaries = [0, 1, 255, 256, 65_535, 65_536].flatMap((length) =>
    binFormatsFor(bytesOf(length)).map((format) => bin(bytesOf(length), format)),
  );
  const extensions = [0, 1, 2, 3, 4, 8, 16, 17, 255, 256, 65_536].flatMap((length) =>
    extFormatsFor(bytesOf(length)).map((format) =>
      ext(length % 2 === 0 ? 5 : -128, bytesOf(length), format),
    ),
  );
  const timestamps = [
    Buffer.from('00000000', 'hex'), // the epoch, 32-bit
    Buffer.from('ee6b27fc00000001', 'hex'), // 999999999 ns past second 1, 64-bit
    Buffer.from('3b9ac9ffffffffffffffffff', 'hex'), // -1 s + 999999999 ns, 96-bit
    Buffer.from('00000001fffff82457de8000', 'hex'), // 1 ns past -8.64e12 s (a Date's first), 96-bit
  ].map((data) => ext(-1, data));
  const deep = Array.from({ length: 32 }).reduce<Tree>(
    (inner, _, i) => (i % 2 ? array([inner]) : object({ d: inner })),
    int(1),
  );
  return printable(
    object({
      nil,
      booleans: array([bool(true), bool(false)]),
      ints: array(ints),
      floats: array(floats),
      strings: array(strings),
      utf8: str('é€😀 \u0000', 'str32'),
      binaries: array(binaries),
      extensions: array([...extensions, ...timestamps]),
      empty: array([array([], 'array32'), map([], 'map16'), map([], 'fixmap')]),
      arrays: array(
        Array.from({ length: 16 }, (_, i) => int(i)),
        'array32',
      ),
      maps: map(
        Array.from({ length: 16 }, (_, i) => [str(`k${i}`), int(i)]),
        'map32',
      ),
      keys: map([
        [int(7), str('int')],
        [float64(1.5), str('float')],
        [floatOf('float64', 0x8000_0000_0000_0000n), str('-0.0')],
        [bin(Buffer.from('ab')), str('bin')],
        [bool(true), str('true')],
        [nil, str('nil')],
        [str('1'), str('string')],
        [int(2n ** 64n - 1n), str('uint64')],
      ]),
      order: map(
        ['b', '10', 'a', '2', '__proto__', '4294967295'].map((key, i) => [str(key), int(i)]),
      ),
      forms: object({ $float: str('NaN'), $map: array([]) }),
      deep,
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The shallow merge (the gem's, on the encoded map: encodedMap.ts mergedWith): a key of both
// takes the patch's entry (its key and value bytes as sent) where the body had it, the patch's
// other keys follow in its order, every other entry keeps its bytes; the result's header is the
// smallest, unless one side is empty and the other is kept as sent.

export function mergedBody(body: MapTree, patch: MapTree): MapTree {
  if (patch.entries.length === 0) return body;
  if (body.entries.length === 0) return patch;
  const patchEntries = new Map(patch.entries.map((entry) => [byText(entry[0]), entry]));
  const merged = body.entries.map(
    ([key, value]): MapEntry => patchEntries.get(byText(key)) ?? [key, value],
  );
  const bodyKeys = new Set(body.entries.map(([key]) => byText(key)));
  merged.push(...patch.entries.filter(([key]) => !bodyKeys.has(byText(key))));
  return map(merged);
}

/** A body without the given keys (the index fields a Put sends besides its values). */
export function withoutKeys(body: MapTree, keys: ReadonlySet<string>): MapTree {
  return { ...body, entries: body.entries.filter(([key]) => !keys.has(byText(key))) };
}

// ---------------------------------------------------------------------------------------------
// What readers make of a value. `Described` is JSON, so that a script in another language can
// print it and a failure shows where two differ.

export type Described = string | number | boolean | readonly Described[];

/**
 * The common description, which describeBodies.py and describeBodies.rb print too: a float by
 * its float64 bits ("NaN" for any NaN: no reader but the raw bytes keeps a payload), a
 * timestamp as each reader reads one (`timestamp`).
 */
export function described(tree: Tree, timestamp: (data: Uint8Array) => Described): Described {
  switch (tree.kind) {
    case 'nil':
      return ['nil'];
    case 'bool':
      return ['bool', tree.value];
    case 'int':
      return ['int', String(tree.value)];
    case 'float':
      return ['float', floatDescription(floatValue(tree))];
    case 'str':
      return ['str', tree.text];
    case 'bin':
      return ['bin', hex(tree.bytes)];
    case 'ext':
      return tree.type === -1 ? timestamp(tree.data) : ['ext', tree.type, hex(tree.data)];
    case 'array':
      return ['array', tree.items.map((item) => described(item, timestamp))];
    case 'map':
      return [
        'map',
        tree.entries.map(([key, value]) => [
          described(key, timestamp),
          described(value, timestamp),
        ]),
      ];
  }
}

export const floatDescription = (value: number): string =>
  Number.isNaN(value) ? 'NaN' : doubleBits(value).toString(16).padStart(16, '0');

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** The instant of a timestamp extension's data (the trees hold valid ones only). */
export function timestampOf(data: Uint8Array): { seconds: bigint; nanoseconds: number } {
  const buffer = Buffer.from(data);
  if (buffer.length === 4) return { seconds: BigInt(buffer.readUInt32BE(0)), nanoseconds: 0 };
  if (buffer.length === 8) {
    const both = buffer.readBigUInt64BE(0);
    return { seconds: both & (2n ** 34n - 1n), nanoseconds: Number(both >> 34n) };
  }
  return { seconds: buffer.readBigInt64BE(4), nanoseconds: buffer.readUInt32BE(0) };
}

/** Python's msgpack reads the timestamp extension as a msgpack.Timestamp. */
export const pythonDescription = (tree: Tree): Described =>
  described(tree, (data) => {
    const { seconds, nanoseconds } = timestampOf(data);
    return ['timestamp', String(seconds), nanoseconds];
  });

/**
 * msgpack-ruby with `allow_unknown_ext: true` reads every extension, the timestamp included
 * (no type is registered by default), as a MessagePack::ExtensionValue.
 */
export const rubyDescription = (tree: Tree): Described =>
  described(tree, (data) => ['ext', -1, hex(data)]);

/** Whether the tree holds an extension whose type `which` accepts (any type by default). */
export function holdsExtension(tree: Tree, which: (type: number) => boolean = () => true): boolean {
  if (tree.kind === 'ext') return which(tree.type);
  if (tree.kind === 'array') return tree.items.some((item) => holdsExtension(item, which));
  if (tree.kind !== 'map') return false;
  return tree.entries.some(
    ([key, value]) => holdsExtension(key, which) || holdsExtension(value, which),
  );
}

/**
 * Keys in the order a JS object lists them: array indices (canonical integers below 2^32 - 1)
 * first, ascending, then the others as inserted. The SDK and the CLI read a map with string
 * keys into an object, so this is the order they give its entries back in.
 */
export function inPropertyOrder<T>(entries: readonly T[], keyOf: (entry: T) => string): T[] {
  const isIndex = (key: string) => /^(0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1;
  const indices = entries.filter((entry) => isIndex(keyOf(entry)));
  indices.sort((a, b) => Number(keyOf(a)) - Number(keyOf(b)));
  return [...indices, ...entries.filter((entry) => !isIndex(keyOf(entry)))];
}

// The SDK's reading (docs/sdk.md, "Integers" and "Maps inside a body").

/** What the SDK's reader gives for a tree, as {@link describeSdkValue} describes a JS value. */
export function sdkExpected(tree: Tree): Described {
  switch (tree.kind) {
    case 'nil':
      return ['null'];
    case 'bool':
      return ['boolean', tree.value];
    case 'int':
      return tree.value >= -MAX_SAFE && tree.value <= MAX_SAFE
        ? ['number', numberText(Number(tree.value))]
        : ['bigint', String(tree.value)];
    case 'float':
      return ['number', numberText(floatValue(tree))];
    case 'str':
      return ['string', tree.text];
    case 'bin':
      return ['Buffer', hex(tree.bytes)];
    case 'ext':
      return tree.type === -1 && dateMilliseconds(tree.data) !== undefined
        ? ['Date', dateMilliseconds(tree.data)!]
        : ['MessagePackExtension', tree.type, hex(tree.data)];
    case 'array':
      return ['array', tree.items.map(sdkExpected)];
    case 'map': {
      if (tree.entries.every(([key]) => key.kind === 'str')) {
        const ordered = inPropertyOrder(tree.entries, ([key]) => byText(key));
        return ['object', ordered.map(([key, value]) => [byText(key), sdkExpected(value)])];
      }
      return [
        'Map',
        tree.entries.map(([key, value]) => [sdkExpected(mapKey(key)), sdkExpected(value)]),
      ];
    }
  }
}

/**
 * A key as a JS Map keeps it: a Map compares keys as SameValueZero and stores a -0 key as 0, so
 * the float -0.0 as a key reads as the number 0 and is written back as the integer 0
 * (docs/sdk.md, "Maps inside a body"). Python, Ruby and the CLI keep it.
 */
function mapKey(key: Tree): Tree {
  return key.kind === 'float' && Object.is(floatValue(key), -0) ? int(0) : key;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** A Date's range: ±8.64e15 ms from the epoch. */
const MOST_DATE_MS = 8_640_000_000_000_000n;

/**
 * A timestamp's instant to the millisecond, rounded down, as a Date holds it; undefined past a
 * Date's range (the SDK reads such a timestamp as a MessagePackExtension).
 */
function dateMilliseconds(data: Uint8Array): number | undefined {
  const { seconds, nanoseconds } = timestampOf(data);
  const milliseconds = seconds * 1000n + BigInt(Math.floor(nanoseconds / 1e6));
  return milliseconds < -MOST_DATE_MS || milliseconds > MOST_DATE_MS
    ? undefined
    : Number(milliseconds);
}

/** A JS value as {@link sdkExpected} describes one: its type as the SDK gives it, and its value. */
export function describeSdkValue(value: unknown): Described {
  if (value === null) return ['null'];
  switch (typeof value) {
    case 'boolean':
      return ['boolean', value];
    case 'number':
      return ['number', numberText(value)];
    case 'bigint':
      return ['bigint', String(value)];
    case 'string':
      return ['string', value];
    case 'object':
      break;
    default:
      return ['unexpected', typeof value];
  }
  if (Buffer.isBuffer(value)) return ['Buffer', value.toString('hex')];
  if (value instanceof Date)
    return ['Date', Number.isNaN(value.getTime()) ? 'Invalid Date' : value.getTime()];
  if (Array.isArray(value)) return ['array', value.map(describeSdkValue)];
  if (value instanceof Map) {
    return [
      'Map',
      [...value].map(([key, item]) => [describeSdkValue(key), describeSdkValue(item)]),
    ];
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) {
    const object = value as Record<string, unknown>;
    return ['object', Object.keys(object).map((key) => [key, describeSdkValue(object[key])])];
  }
  if (value instanceof MessagePackExtension) {
    return ['MessagePackExtension', value.type, value.data.toString('hex')];
  }
  return ['unexpected', value.constructor.name];
}

/**
 * The tree the SDK writes for the value it read from `tree` (docs/sdk.md, "Integers"): every
 * integer, and every float whose value is a safe integer other than -0 (a JS number cannot say
 * float), in the smallest integer format; any other number as a float64; strings, binaries,
 * extensions, arrays and maps in their smallest formats, an object's keys in property order.
 * Undefined when the tree holds a timestamp, which the SDK reads as a Date to the millisecond
 * and so does not promise to write back as it was.
 */
export function sdkWritten(tree: Tree): Tree | undefined {
  try {
    return rewritten(tree);
  } catch (error) {
    if (error === HOLDS_A_DATE) return undefined;
    throw error;
  }
}

const HOLDS_A_DATE = Symbol('a timestamp, read as a Date');

function rewritten(tree: Tree): Tree {
  switch (tree.kind) {
    case 'nil':
    case 'bool':
      return tree;
    case 'int':
      return int(tree.value);
    case 'float': {
      const value = floatValue(tree);
      return Number.isSafeInteger(value) && !Object.is(value, -0) ? int(value) : float64(value);
    }
    case 'str':
      return str(tree.text);
    case 'bin':
      return bin(tree.bytes);
    case 'ext':
      if (tree.type === -1 && dateMilliseconds(tree.data) !== undefined) throw HOLDS_A_DATE;
      return ext(tree.type, tree.data);
    case 'array':
      return array(tree.items.map(rewritten));
    case 'map': {
      const object = tree.entries.every(([key]) => key.kind === 'str');
      const entries = tree.entries.map(([key, value]): MapEntry => [
        rewritten(object ? key : mapKey(key)),
        rewritten(value),
      ]);
      return map(object ? inPropertyOrder(entries, ([key]) => byText(key)) : entries);
    }
  }
}

/**
 * Where two descriptions first differ (`at [2][1]: expected …, got …`), or undefined when they
 * are the same: the line a failure shows instead of two long values.
 */
export function differenceOf(expected: Described, actual: Described, at = ''): string | undefined {
  // Descriptions are tagged (['int', '5']): another tag shows the whole of both values.
  const sameTag = (a: readonly Described[], b: readonly Described[]) =>
    typeof a[0] !== 'string' || a[0] === b[0];
  if (Array.isArray(expected) && Array.isArray(actual) && sameTag(expected, actual)) {
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      if (i >= expected.length || i >= actual.length) {
        return `at ${at}: expected ${expected.length} elements, got ${actual.length}`;
      }
      const inner = differenceOf(expected[i]!, actual[i]!, `${at}[${i}]`);
      if (inner !== undefined) return inner;
    }
    return undefined;
  }
  if (expected === actual) return undefined;
  return `at ${at || 'the top'}: expected ${shortJson(expected)}, got ${shortJson(actual)}`;
}

const shortJson = (value: Described) => {
  const text = JSON.stringify(value);
  return text.length <= 200 ? text : `${text.slice(0, 200)}…`;
};

/**
 * A tree with its formats as a description, so that {@link differenceOf} points at the first
 * value written otherwise: each scalar as its text, each array and map with its format.
 */
export function formatsDescribed(tree: Tree, options: TreeTextOptions = {}): Described {
  if (tree.kind === 'array')
    return [tree.format, tree.items.map((item) => formatsDescribed(item, options))];
  if (tree.kind === 'map') {
    return [
      tree.format,
      tree.entries.map(([key, value]) => [
        formatsDescribed(key, options),
        formatsDescribed(value, options),
      ]),
    ];
  }
  return treeText(tree, options);
}

// The CLI's JSON (docs/cli.md, "Bodies as JSON"), described as the common description is, a
// timestamp with the instant the CLI prints beside its bytes.

const FORM_KEYS: ReadonlySet<string> = new Set(['$base64', '$ext', '$float', '$map', '$timestamp']);

/** What `shameless get`, `where` and `tail` print for a tree, described. */
export function cliExpected(tree: Tree): Described {
  if (tree.kind === 'ext' && tree.type === -1) {
    const instant = instantText(tree.data);
    return instant === undefined
      ? ['ext', -1, hex(tree.data)]
      : ['ext', -1, hex(tree.data), instant];
  }
  if (tree.kind === 'array') return ['array', tree.items.map(cliExpected)];
  if (tree.kind === 'map') {
    // An object where JSON can hold the map (its keys in a JS object's order), else {"$map"}.
    const plain = tree.entries.every(([key]) => key.kind === 'str' && !FORM_KEYS.has(key.text));
    const entries = plain ? inPropertyOrder(tree.entries, ([key]) => byText(key)) : tree.entries;
    return ['map', entries.map(([key, value]) => [cliExpected(key), cliExpected(value)])];
  }
  return described(tree, () => []);
}

/** A timestamp's instant in UTC to the nanosecond, when a Date can show its second. */
function instantText(data: Uint8Array): string | undefined {
  const { seconds, nanoseconds } = timestampOf(data);
  if (seconds * 1000n < -MOST_DATE_MS || seconds * 1000n > MOST_DATE_MS) return undefined;
  const second = new Date(Number(seconds) * 1000).toISOString();
  return second.replace(/\.000Z$/, `.${String(nanoseconds).padStart(9, '0')}Z`);
}

/** A JSON value with each number's literal kept: {@link describeCliJson} reads it. */
export type ExactJson =
  | null
  | boolean
  | string
  | { readonly literal: string }
  | readonly ExactJson[]
  | { readonly entries: readonly [string, ExactJson][] };

/** Parses JSON keeping each number's literal and each object's entries in order. */
export function parseJsonExactly(text: string): ExactJson {
  let at = 0;
  const space = () => {
    while (' \t\r\n'.includes(text[at] ?? 'x')) at += 1;
  };
  const fail = () => {
    throw new Error(`not JSON at character ${at}: ${text.slice(at, at + 40)}`);
  };
  const token = (pattern: RegExp): string => {
    pattern.lastIndex = at;
    const match = pattern.exec(text) ?? fail()!;
    at += match[0].length;
    return match[0];
  };
  const value = (): ExactJson => {
    space();
    const char = text[at];
    if (char === '"') return JSON.parse(token(/"(?:[^"\\]|\\.)*"/y)) as string;
    if (char === '[' || char === '{') {
      at += 1;
      const items: ExactJson[] = [];
      const entries: [string, ExactJson][] = [];
      space();
      while (text[at] !== (char === '[' ? ']' : '}')) {
        if (items.length + entries.length > 0) {
          if (text[at] !== ',') fail();
          at += 1;
        }
        if (char === '[') {
          items.push(value());
        } else {
          space();
          const key = JSON.parse(token(/"(?:[^"\\]|\\.)*"/y)) as string;
          space();
          if (text[at] !== ':') fail();
          at += 1;
          entries.push([key, value()]);
        }
        space();
      }
      at += 1;
      return char === '[' ? items : { entries };
    }
    const word = token(/true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y);
    return word === 'true'
      ? true
      : word === 'false'
        ? false
        : word === 'null'
          ? null
          : { literal: word };
  };
  const result = value();
  space();
  if (at !== text.length) fail();
  return result;
}

/** The CLI's JSON of a value, described: the `$` forms read as the values they stand for. */
export function describeCliJson(json: ExactJson): Described {
  if (json === null) return ['nil'];
  if (typeof json === 'boolean') return ['bool', json];
  if (typeof json === 'string') return ['str', json];
  if (Array.isArray(json)) return ['array', json.map(describeCliJson)];
  if ('literal' in json) {
    // An integer has neither fraction nor exponent: that is how the CLI tells 2 from 2.0.
    return /^-?\d+$/.test(json.literal)
      ? ['int', String(BigInt(json.literal))]
      : ['float', floatDescription(Number(json.literal))];
  }
  const { entries } = json as { entries: readonly [string, ExactJson][] };
  const form = Object.fromEntries(entries);
  const shape = entries
    .map(([key]) => key)
    .sort()
    .join(',');
  if (shape === '$float') return ['float', floatDescription(Number(form.$float!))];
  if (shape === '$base64') return ['bin', fromBase64(form.$base64!)];
  if (shape === '$base64,$ext' || shape === '$base64,$ext,$timestamp') {
    const type = Number((form.$ext as { literal: string }).literal);
    const extension: Described[] = ['ext', type, fromBase64(form.$base64!)];
    return form.$timestamp === undefined ? extension : [...extension, form.$timestamp as string];
  }
  if (shape === '$map') {
    const pairs = form.$map as readonly (readonly ExactJson[])[];
    return ['map', pairs.map(([key, value]) => [describeCliJson(key!), describeCliJson(value!)])];
  }
  return ['map', entries.map(([key, value]) => [['str', key], describeCliJson(value)])];
}

const fromBase64 = (text: ExactJson | undefined) =>
  Buffer.from(text as string, 'base64').toString('hex');

/** Throws, naming `what` and where they first differ, unless the descriptions are the same. */
export function expectDescribed(what: string, expected: Described, actual: Described): void {
  const difference = differenceOf(expected, actual);
  if (difference !== undefined) throw new Error(`${what}: ${difference}`);
}
