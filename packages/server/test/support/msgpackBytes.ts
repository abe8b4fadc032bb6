// MessagePack written byte by byte, so that a test can say exactly which encoding a value has
// (a float64 120.0, a uint64 2^40) where an encoder would pick its own.

export const float64 = (value: number): Buffer => {
  const bytes = Buffer.alloc(9);
  bytes[0] = 0xcb;
  bytes.writeDoubleBE(value, 1);
  return bytes;
};

export const uint64 = (value: bigint): Buffer => {
  const bytes = Buffer.alloc(9);
  bytes[0] = 0xcf;
  bytes.writeBigUInt64BE(value, 1);
  return bytes;
};

export const int64 = (value: bigint): Buffer => {
  const bytes = Buffer.alloc(9);
  bytes[0] = 0xd3;
  bytes.writeBigInt64BE(value, 1);
  return bytes;
};

/** A positive fixint (0..127). */
export const fixint = (value: number): Buffer => Buffer.from([value]);

/** A string of up to 31 bytes (fixstr) or up to 255 (str 8). */
export const str = (value: string): Buffer => {
  const utf8 = Buffer.from(value, 'utf8');
  return utf8.length < 32
    ? Buffer.concat([Buffer.from([0xa0 | utf8.length]), utf8])
    : Buffer.concat([Buffer.from([0xd9, utf8.length]), utf8]);
};

export const nil = (): Buffer => Buffer.from([0xc0]);

/** A map of up to 15 entries (fixmap); keys are encoded values too, so they may be non-strings. */
export const map = (...entries: [Buffer, Buffer][]): Buffer =>
  Buffer.concat([Buffer.from([0x80 | entries.length]), ...entries.flat()]);

/** A map with string keys. */
export const object = (entries: Record<string, Buffer>): Buffer =>
  map(...Object.entries(entries).map(([key, value]): [Buffer, Buffer] => [str(key), value]));

/** An array of up to 15 values (fixarray). */
export const array = (...values: Buffer[]): Buffer =>
  Buffer.concat([Buffer.from([0x90 | values.length]), ...values]);
