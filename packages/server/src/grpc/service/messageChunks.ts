// A streamed answer's items cut into messages that fit the largest message the server sends:
// grpc-js refuses to send a larger one only once it is encoded, failing the stream.

/**
 * Consecutive runs of `items`, in order, each of at most `maxItems` items and, by `bytesOf`,
 * at most `maxBytes` (an item larger than that goes alone).
 */
export function* chunksWithin<T>(
  items: readonly T[],
  bytesOf: (item: T) => number,
  maxBytes: number,
  maxItems = Infinity,
): Generator<T[]> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    if (chunk.length > 0 && (bytes + size > maxBytes || chunk.length >= maxItems)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}
