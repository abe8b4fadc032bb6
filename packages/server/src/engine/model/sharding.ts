// Shard and partition routing, exactly as the Ruby gem does it (SPEC §2). Pure functions: the
// layout of every stored row depends on them, so they must never change behaviour.

/**
 * The shard of a shardable integer value: the gem's Ruby `value % shards_count`, a floored
 * modulo (`findShard(-1, 4) === 3`), for the whole int64 range. Values past 2^53 come as
 * bigints (a number there may already be another integer).
 */
export function findShard(value: number | bigint, shardsCount: number): number {
  if (typeof value === 'bigint') {
    const count = BigInt(shardsCount);
    return Number(((value % count) + count) % count);
  }
  return ((value % shardsCount) + shardsCount) % shardsCount;
}

/** The content shard of a record: its UUID's first 4 hex characters, read as an integer. */
export function contentShard(uuid: string, shardsCount: number): number {
  return findShard(Number.parseInt(uuid.slice(0, 4), 16), shardsCount);
}

/** The values a uuid's first 4 hex characters can take, which decide its content shard. */
const UUID_PREFIXES = 0x10000;

/** The last shard a uuid's content can lie in: a shard count may pass the 65,536 prefixes. */
export function lastContentShard(shardsCount: number): number {
  return Math.min(shardsCount, UUID_PREFIXES) - 1;
}

/**
 * `uuid` with its first 4 hex characters chosen so that its content shard is `shard`: the
 * `fraction`th (0 ≤ fraction < 1) of the prefixes that lead there. With a uniformly random
 * fraction it is what redrawing a random uuid until it lands in the shard would give, and a v4
 * uuid stays one (those characters are random in v4).
 */
export function withContentShard(
  uuid: string,
  shard: number,
  shardsCount: number,
  fraction: number,
): string {
  if (!(shard >= 0 && shard <= lastContentShard(shardsCount))) {
    throw new RangeError(`no uuid's content lies in shard ${shard} of ${shardsCount}`);
  }
  const prefixes = Math.floor((UUID_PREFIXES - 1 - shard) / shardsCount) + 1;
  const prefix = shard + shardsCount * Math.floor(fraction * prefixes);
  return prefix.toString(16).padStart(4, '0') + uuid.slice(4);
}

/** Each partition holds a contiguous block of `shardsCount / partitionCount` shards. */
export function partitionOfShard(shard: number, shardsCount: number, partitionCount: number) {
  return Math.floor(shard / (shardsCount / partitionCount));
}

/** The first and last shard held by a partition. */
export function shardsOfPartition(partition: number, shardsCount: number, partitionCount: number) {
  const perPartition = shardsCount / partitionCount;
  return { first: partition * perPartition, last: (partition + 1) * perPartition - 1 };
}

/** Why a shard layout is invalid, or undefined when it is valid. */
export function shardLayoutProblem(
  shardsCount: number,
  partitionCount: number,
): string | undefined {
  if (!Number.isInteger(shardsCount) || shardsCount < 1 || shardsCount > 999_999) {
    return `shardsCount must be an integer from 1 to 999999 (got ${shardsCount})`;
  }
  if (!Number.isInteger(partitionCount) || partitionCount < 1) {
    return `at least one partition is required (got ${partitionCount})`;
  }
  if (shardsCount % partitionCount !== 0) {
    return `shardsCount (${shardsCount}) must be a multiple of the number of partitions (${partitionCount})`;
  }
  return undefined;
}
