// The memory a response message holds, estimated without encoding it: admission control and
// stream buffering count with it.

/**
 * About the bytes a response message holds: the cell bodies it carries (which dominate any
 * message that is large) and a little for everything else, found without encoding it.
 */
export function messageBytes(message: unknown): number {
  let bytes = 64;
  const visit = (value: unknown, depth: number): void => {
    if (depth > 6 || value === null || typeof value !== 'object') {
      if (typeof value === 'string') bytes += value.length;
      else bytes += 8;
      return;
    }
    if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
      bytes += value.byteLength;
      return;
    }
    if (value instanceof Date) return;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      visit(child, depth + 1);
    }
  };
  visit(message, 0);
  return bytes;
}
