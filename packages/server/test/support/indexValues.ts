import type { IndexValue } from '@shameless/proto';

/** Typed index values for Where conditions. */
export const int = (integer: number): IndexValue => ({ kind: { $case: 'integer', integer } });
export const str = (string: string): IndexValue => ({ kind: { $case: 'string', string } });
