// The memory a response message holds, estimated without encoding it: admission control and
// stream buffering count with it.

/**
 * About the bytes a response message holds: the cell bodies it carries (which dominate any
 * message that is large) and a little for everything else, found without encoding it.
 */
export function messageBytes(message: unknown): number {
  return 64 + bytesOf(message, 0);
}

/**
 * The deepest field of this service's messages: a WhereMany answer's bodies (pages, a page,
 * records, a record, cells, a cell, its body). What lies deeper counts as 8 bytes.
 */
const MAX_DEPTH = 7;

// A plain recursion, walking objects with for-in: a GetCells answer of 1,000 cells is walked
// for every call. The walk was 6% of such a call's server time as a closure over Object.values;
// for-in allocates no array per object (a 1,000-cell answer: 230 µs against 320 with
// Object.keys). Messages are plain objects, so for-in sees exactly their own fields.
function bytesOf(value: unknown, depth: number): number {
  if (typeof value === 'string') return value.length;
  if (depth > MAX_DEPTH || value === null || typeof value !== 'object') return 8;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Date) return 0;
  let bytes = 0;
  if (Array.isArray(value)) {
    for (const child of value) bytes += bytesOf(child, depth + 1);
  } else {
    for (const key in value) bytes += bytesOf((value as Record<string, unknown>)[key], depth + 1);
  }
  return bytes;
}
