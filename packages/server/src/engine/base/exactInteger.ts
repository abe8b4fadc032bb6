// 64-bit integers inside the engine. Content-table ids are BIGINTs, log cursors are uint64 on
// the wire and integer index values int64: all wider than a JS number holds exactly. A bigint
// for every one would allocate per cell and spread `n` literals through code that almost
// always sees small ids, so the engine holds such an integer as a number while it is a safe
// integer and as a bigint beyond. `<` and `>` compare the two kinds correctly (`===` does
// not: compare with `<`/`>` or convert first); the wire edge converts with `BigInt(value)`.

/** An integer held exactly: a number when it is a safe integer (|v| <= 2^53 - 1), else a bigint. */
export type ExactInteger = number | bigint;

/**
 * A content row's id, or a shard-log cursor (the id to read after; any uint64, so a cursor
 * may lie past every id).
 */
export type RowId = ExactInteger;

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** `id` + `offset`, exactly: the id of the row `offset` places after `id`. */
export function offsetId(id: RowId, offset: number): RowId {
  if (typeof id === 'number' && Number.isSafeInteger(id + offset)) return id + offset;
  return exactInteger(BigInt(id) + BigInt(offset));
}

/**
 * The one way into an {@link ExactInteger}: from the wire (a bigint), from mysql2 (a number,
 * or with `supportBigNumbers` a decimal string for a BIGINT past 2^53) or from a decoded body
 * (a number, integral even when past 2^53, or a bigint).
 *
 * @throws RangeError for a number that is not an integer, SyntaxError for a string that is not
 *   a decimal integer: both are bugs of the caller, never user input.
 */
export function exactInteger(value: bigint | number | string): ExactInteger {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return value;
    if (Number.isInteger(value)) return BigInt(value);
    throw new RangeError(`${value} is not an integer`);
  }
  const integer = typeof value === 'bigint' ? value : BigInt(value);
  return integer >= MIN_SAFE && integer <= MAX_SAFE ? Number(integer) : integer;
}
