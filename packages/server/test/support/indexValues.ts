import type { IndexValue } from '@shameless/proto';

/** Typed index values for Where conditions. */
export const int = (integer: number | bigint): IndexValue => ({
  kind: { $case: 'integer', integer: BigInt(integer) },
});
export const str = (string: string): IndexValue => ({ kind: { $case: 'string', string } });
