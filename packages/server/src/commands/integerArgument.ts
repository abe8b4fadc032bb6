// Integer flags and arguments, checked with a message naming the flag.
import { UsageError } from './usageError.js';

const INTEGER = /^-?\d+$/;

/** A safe integer of at least `min`. */
export function integerArgument(text: string, flag: string, min = 0): number {
  const value = Number(text);
  if (!INTEGER.test(text.trim()) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(
      `${flag}: expected an integer of at least ${min}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/** Any 64-bit integer, exactly (a shard_on value, an id, a cursor). */
export function bigintArgument(text: string, flag: string): bigint {
  if (!INTEGER.test(text.trim())) {
    throw new UsageError(`${flag}: expected an integer, got ${JSON.stringify(text)}`);
  }
  return BigInt(text.trim());
}
