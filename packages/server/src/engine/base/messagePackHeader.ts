// One MessagePack value's header read from bytes: what kind of value starts at an offset and
// where it ends or its content starts. The walks over a body (encodedMap.ts, which checks and
// merges it, and bodyRules.ts, which holds it to what readers take) share it.

/** Why bytes are not a well-formed MessagePack map with string keys. */
export class MalformedMapError extends Error {}

export type Header =
  | { kind: 'map'; count: number; next: number }
  | { kind: 'array'; count: number; next: number }
  | { kind: 'str'; next: number; end: number }
  /** An extension: its type (a signed byte) and where its data starts. */
  | { kind: 'ext'; type: number; data: number; end: number }
  | { kind: 'scalar'; end: number };

/**
 * The value starting at `offset`: its kind, and where its content or the next value starts.
 * Every body written is read with it, three times an entry, so it makes no closures.
 */
export function readHeader(bytes: Buffer, offset: number): Header {
  const byte = bytes[reach(bytes, offset + 1) - 1]!;
  if (byte <= 0x7f || byte >= 0xe0) return { kind: 'scalar', end: offset + 1 };
  if (byte <= 0x8f) return { kind: 'map', count: byte & 0x0f, next: offset + 1 };
  if (byte <= 0x9f) return { kind: 'array', count: byte & 0x0f, next: offset + 1 };
  if (byte <= 0xbf) {
    return { kind: 'str', next: offset + 1, end: reach(bytes, offset + 1 + (byte & 0x1f)) };
  }
  switch (byte) {
    case 0xc0: // nil
    case 0xc2: // false
    case 0xc3: // true
      return { kind: 'scalar', end: offset + 1 };
    case 0xc4: // bin 8
      return { kind: 'scalar', end: sizedEnd(bytes, offset, 1) };
    case 0xc5: // bin 16
      return { kind: 'scalar', end: sizedEnd(bytes, offset, 2) };
    case 0xc6: // bin 32
      return { kind: 'scalar', end: sizedEnd(bytes, offset, 4) };
    case 0xc7: // ext 8: length, type, data
      return extension(bytes, offset + 2, sizedEnd(bytes, offset, 1, 1));
    case 0xc8: // ext 16
      return extension(bytes, offset + 3, sizedEnd(bytes, offset, 2, 1));
    case 0xc9: // ext 32
      return extension(bytes, offset + 5, sizedEnd(bytes, offset, 4, 1));
    case 0xca: // float 32
      return { kind: 'scalar', end: reach(bytes, offset + 5) };
    case 0xcb: // float 64
      return { kind: 'scalar', end: reach(bytes, offset + 9) };
    case 0xcc: // uint 8
    case 0xd0: // int 8
      return { kind: 'scalar', end: reach(bytes, offset + 2) };
    case 0xcd: // uint 16
    case 0xd1: // int 16
      return { kind: 'scalar', end: reach(bytes, offset + 3) };
    case 0xce: // uint 32
    case 0xd2: // int 32
      return { kind: 'scalar', end: reach(bytes, offset + 5) };
    case 0xcf: // uint 64
    case 0xd3: // int 64
      return { kind: 'scalar', end: reach(bytes, offset + 9) };
    case 0xd4: // fixext 1, 2, 4, 8, 16: type byte + data
      return extension(bytes, offset + 1, reach(bytes, offset + 3));
    case 0xd5:
      return extension(bytes, offset + 1, reach(bytes, offset + 4));
    case 0xd6:
      return extension(bytes, offset + 1, reach(bytes, offset + 6));
    case 0xd7:
      return extension(bytes, offset + 1, reach(bytes, offset + 10));
    case 0xd8:
      return extension(bytes, offset + 1, reach(bytes, offset + 18));
    case 0xd9: // str 8
      return { kind: 'str', next: offset + 2, end: sizedEnd(bytes, offset, 1) };
    case 0xda: // str 16
      return { kind: 'str', next: offset + 3, end: sizedEnd(bytes, offset, 2) };
    case 0xdb: // str 32
      return { kind: 'str', next: offset + 5, end: sizedEnd(bytes, offset, 4) };
    case 0xdc: // array 16
      return { kind: 'array', count: lengthAt(bytes, offset, 2), next: offset + 3 };
    case 0xdd: // array 32
      return { kind: 'array', count: lengthAt(bytes, offset, 4), next: offset + 5 };
    case 0xde: // map 16
      return { kind: 'map', count: lengthAt(bytes, offset, 2), next: offset + 3 };
    case 0xdf: // map 32
      return { kind: 'map', count: lengthAt(bytes, offset, 4), next: offset + 5 };
    default: // 0xc1 is never used
      throw new MalformedMapError(`byte 0x${byte.toString(16)} at ${offset} starts no value`);
  }
}

/** The extension whose type byte is at `typeAt`, its data following up to `end` (reached). */
function extension(bytes: Buffer, typeAt: number, end: number): Header {
  return { kind: 'ext', type: bytes.readInt8(typeAt), data: typeAt + 1, end };
}

/** `end`, when the bytes reach that far. */
function reach(bytes: Buffer, end: number): number {
  if (end > bytes.length) throw new MalformedMapError('truncated');
  return end;
}

/**
 * Where a value of a sized format ends: after its type byte, its length of `width` bytes,
 * `extra` bytes (an extension's type) and that many bytes of data.
 */
function sizedEnd(bytes: Buffer, offset: number, width: 1 | 2 | 4, extra = 0): number {
  return reach(bytes, offset + 1 + width + extra + lengthAt(bytes, offset, width));
}

/** The big-endian length of `width` bytes that follows the type byte at `offset`. */
function lengthAt(bytes: Buffer, offset: number, width: 1 | 2 | 4): number {
  reach(bytes, offset + 1 + width);
  if (width === 1) return bytes[offset + 1]!;
  return width === 2 ? bytes.readUInt16BE(offset + 1) : bytes.readUInt32BE(offset + 1);
}
