// Cutting the calls queued in one tick into batches the server accepts: at most so many items
// (10,000 keys or writes, 1,000 puts or queries), so much weight (records a WhereMany asks for)
// and so many request bytes each.

/** What one batch may hold. */
export interface BatchBounds {
  /** Items per batch at most (the server refuses more). */
  readonly maxItems: number;
  /**
   * The weight of a batch at most, when items weigh more than one (WhereMany: records asked
   * for in all). `Infinity` when items only count.
   */
  readonly maxWeight: number;
  /** Request bytes per batch at most (an estimate: the items' encoded sizes). */
  readonly maxBytes: number;
}

/** How much room one item takes in a batch. */
export interface ItemSize {
  readonly bytes: number;
  readonly weight: number;
}

/**
 * Cuts `items` into consecutive batches within `bounds`, keeping their order: each batch takes
 * items until the next one would not fit. An item too big for any batch on its own is a batch
 * of its own (sent as its single call, so the server answers it as it would without
 * coalescing).
 */
export function splitIntoBatches<T>(
  items: readonly T[],
  sizeOf: (item: T) => ItemSize,
  bounds: BatchBounds,
): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  let weight = 0;
  for (const item of items) {
    const size = sizeOf(item);
    const fits =
      current.length < bounds.maxItems &&
      bytes + size.bytes <= bounds.maxBytes &&
      weight + size.weight <= bounds.maxWeight;
    if (!fits && current.length > 0) {
      batches.push(current);
      current = [];
      bytes = 0;
      weight = 0;
    }
    current.push(item);
    bytes += size.bytes;
    weight += size.weight;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
