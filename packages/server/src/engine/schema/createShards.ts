// Where new records' content goes. A create may put its record's content in any shard of the
// partition its primary-index row lives on: there one transaction writes the row and the base
// version. Creates that arrive in the same turn of the event loop are written together
// (groupCommit.ts), so they are given the same few shards, one per write transaction a
// partition runs at once, so that a group shared among transactions by shard (groupSplit.ts)
// still gives each its own. A group of creates then writes its base versions with one
// multi-row INSERT per transaction under one log lock, instead of one per shard that random
// uuids would have picked (about six for eight creates over sixteen shards). Each turn picks its
// shards at random, so over many turns content spreads over a partition's shards as evenly as
// random uuids spread it; within a turn it does not.
import { randomUUID } from 'node:crypto';
import type { StoreLayout } from '../model/layout.js';
import { lastContentShard, withContentShard } from '../model/sharding.js';

/** A partition's shards for the current turn, and how many creates they were given so far. */
interface TurnShards {
  readonly shards: readonly number[];
  given: number;
}

export class CreateShards {
  private readonly turn = new Map<number, TurnShards>();
  private clearScheduled = false;

  constructor(
    private readonly layout: StoreLayout,
    /** Shards per partition and turn: the write transactions a partition runs at once. */
    private readonly perTurn: number,
    /** Uniform in [0, 1): which shards, and which of a shard's uuid prefixes. */
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * A new record's uuid, random (v4) but for the first 4 hex characters, which put its content
   * in one of this turn's shards of `partition`, given in turn.
   */
  uuidOn(partition: number): string {
    let placed = this.turn.get(partition);
    if (!placed) {
      placed = { shards: this.pick(partition), given: 0 };
      this.turn.set(partition, placed);
      this.clearAfterTurn();
    }
    const shard = placed.shards[placed.given++ % placed.shards.length]!;
    const uuid = withContentShard(randomUUID(), shard, this.layout.shardsCount, this.random());
    // Built of pieces, the string keeps them all (randomUUID's own are many: some 600 bytes of
    // heap) until V8 flattens it, which reading a character does. Flattened here, where it is
    // made, it is flat in every cache that keeps it (known records, remembered versions, primary
    // keys): a known record holds 133 bytes instead of 223.
    uuid.charCodeAt(0);
    return uuid;
  }

  private clearAfterTurn(): void {
    if (this.clearScheduled) return;
    this.clearScheduled = true;
    // The same end of turn at which the group commit starts the groups these creates join.
    setImmediate(() => {
      this.clearScheduled = false;
      this.turn.clear();
    });
  }

  /** Up to `perTurn` distinct shards of the partition, at random, where a uuid can lead. */
  private pick(partition: number): number[] {
    // The partition's shards under the current map: one range of the gem's until a move, then
    // whichever the map gives it.
    const lastReachable = lastContentShard(this.layout.shardsCount);
    const all = this.layout.shardsOf(partition);
    const own =
      (all[all.length - 1] ?? 0) <= lastReachable
        ? all
        : all.filter((shard) => shard <= lastReachable);
    const reachable = own.length;
    if (reachable < 1) {
      throw new RangeError(
        `partition ${partition} holds shards ${describeShards(all)}, where no uuid's content can lie ` +
          '(a content shard is the uuid’s first 4 hex characters modulo the shard count)',
      );
    }
    if (reachable <= this.perTurn) {
      // Every shard, from a random one: a turn's lone create would otherwise always get the
      // first, and a partition whose shards are no more than its write transactions would hold
      // all its content in one shard.
      const start = Math.floor(this.random() * reachable);
      return Array.from({ length: reachable }, (_, i) => own[(start + i) % reachable]!);
    }
    const shards = new Set<number>();
    while (shards.size < this.perTurn) shards.add(own[Math.floor(this.random() * reachable)]!);
    return [...shards];
  }
}

/** `first-last` for a run of shards, else the list (`none` for no shard). */
function describeShards(shards: readonly number[]): string {
  if (shards.length === 0) return 'none';
  const first = shards[0]!;
  const last = shards[shards.length - 1]!;
  return last - first + 1 === shards.length ? `${first}-${last}` : shards.join(', ');
}
