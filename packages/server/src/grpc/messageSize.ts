// The memory a response message holds, estimated without encoding it: admission control and
// stream buffering count with it.

/**
 * About the bytes a response message holds: the cell bodies it carries (which dominate any
 * message that is large) and a little for everything else, found without encoding it.
 */
export function messageBytes(message: unknown): number {
  return 64 + bytesOf(message, 0);
}

// A plain recursion over own keys: a GetCells answer of 1,000 cells is walked for every call,
// and one array of values per object (Object.values) made the walk 6% of such a call's server
// time.
function bytesOf(value: unknown, depth: number): number {
  if (typeof value === 'string') return value.length;
  if (depth > 6 || value === null || typeof value !== 'object') return 8;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Date) return 0;
  let bytes = 0;
  if (Array.isArray(value)) {
    for (const child of value) bytes += bytesOf(child, depth + 1);
  } else {
    for (const key of Object.keys(value)) {
      bytes += bytesOf((value as Record<string, unknown>)[key], depth + 1);
    }
  }
  return bytes;
}
