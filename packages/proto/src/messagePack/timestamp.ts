// The timestamp extension (type -1) of the MessagePack spec: seconds since the epoch and
// nanoseconds, in one of three layouts by their range. The SDK reads one as a Date (to the
// millisecond); the CLI prints it to the nanosecond.

/** The extension type of a timestamp. */
export const TIMESTAMP_TYPE = -1;

/** An instant as the timestamp extension holds it. */
export interface Timestamp {
  /** Seconds since 1970-01-01T00:00:00Z; 64-bit signed in the widest layout. */
  seconds: bigint;
  /** 0 to 999999999 in a well-formed timestamp; the 64- and 96-bit layouts can hold more. */
  nanoseconds: number;
}

/** The instant `data` holds, or undefined when it is of no timestamp layout (4, 8 or 12 bytes). */
export function readTimestamp(data: Buffer): Timestamp | undefined {
  switch (data.length) {
    case 4:
      return { seconds: BigInt(data.readUInt32BE(0)), nanoseconds: 0 };
    case 8: {
      const high = data.readUInt32BE(0);
      return {
        seconds: BigInt((high & 0x3) * 2 ** 32 + data.readUInt32BE(4)),
        nanoseconds: Math.floor(high / 4),
      };
    }
    case 12:
      return { seconds: data.readBigInt64BE(4), nanoseconds: data.readUInt32BE(0) };
    default:
      return undefined;
  }
}
