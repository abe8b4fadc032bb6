// How a group of writes that several free transaction slots could carry is shared among them.
// One transaction at a time keeps one MySQL core busy while the others wait; two carrying half
// the writes each finish sooner when there are enough writes to pay for a second transaction's
// own statements and commit. Measured on the project's machine (2 cores, 16 Put updates in
// flight, coalesced): two transactions of 8 did 4% more per second than one of 16, and 24%
// more at 64 in flight; at 4 in flight, two of 2 did 13% less. So a group is split only into
// parts of at least a few writes.
//
// A caller's writes stay in one part, in order. Units that share a shard go to the same part,
// so parts seldom wait on each other's log locks: only when a unit of several shards meets
// shards already placed in different parts does it go with the first of them, and the parts
// then take that shard's lock in turn (in table-name order, as every transaction does, so they
// cannot deadlock).

/**
 * Splits `units` (in queue order) into at most `maxParts` parts of at least `minPartSize`
 * items each where possible, each part in queue order, balanced by items. A unit goes to the
 * part of the first of its shards already placed, else to the lightest part. One part when
 * splitting does not pay.
 */
export function splitByShard<T>(
  units: readonly T[],
  maxParts: number,
  minPartSize: number,
  shardsOf: (unit: T) => readonly number[],
  sizeOf: (unit: T) => number,
): T[][] {
  const total = units.reduce((sum, unit) => sum + sizeOf(unit), 0);
  const parts = Math.min(maxParts, Math.floor(total / Math.max(1, minPartSize)));
  if (parts < 2 || units.length < 2) return [[...units]];
  const split: T[][] = Array.from({ length: parts }, () => []);
  const load = new Array<number>(parts).fill(0);
  const partOfShard = new Map<number, number>();
  for (const unit of units) {
    const shards = shardsOf(unit);
    let part = shards.map((shard) => partOfShard.get(shard)).find((p) => p !== undefined);
    part ??= load.indexOf(Math.min(...load));
    split[part]!.push(unit);
    load[part]! += sizeOf(unit);
    for (const shard of shards) if (!partOfShard.has(shard)) partOfShard.set(shard, part);
  }
  return split.filter((part) => part.length > 0);
}
