// Integer flags and arguments, checked with a message naming the flag. Each is held to the range
// of the proto field it fills: past it the request fails to serialize, which grpc-js reports as
// INTERNAL, as if the server had a bug.
import { UsageError } from './usageError.js';

const INTEGER = /^-?\d+$/;

/** The largest proto int32 (a ref_key) and uint32 (a shard, a page or batch size). */
export const INT32_MAX = 2 ** 31 - 1;
export const UINT32_MAX = 2 ** 32 - 1;

const BIGINT_RANGES = {
  int64: { min: -(2n ** 63n), max: 2n ** 63n - 1n },
  uint64: { min: 0n, max: 2n ** 64n - 1n },
} as const;

/** An integer from `min` to `max`, both safe integers. */
export function integerArgument(text: string, flag: string, min: number, max: number): number {
  const value = Number(text);
  if (!INTEGER.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(
      `${flag}: expected an integer from ${min} to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/** A 64-bit integer, exactly: an int64 (a shard_on value) or a uint64 (a cursor). */
export function bigintArgument(
  text: string,
  flag: string,
  type: keyof typeof BIGINT_RANGES = 'int64',
): bigint {
  const { min, max } = BIGINT_RANGES[type];
  const value = INTEGER.test(text.trim()) ? BigInt(text.trim()) : undefined;
  if (value === undefined || value < min || value > max) {
    throw new UsageError(
      `${flag}: expected an integer from ${min} to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}
