// The store's shard moves (SPEC §7, issue 54): the mover (moves/) run on this engine's
// partitions, its map published through the engine's routing, and the commands an operator
// gives — move a range, split every partition, finish, abort, say where the moves stand.
import { FailedPreconditionError, InvalidArgumentError } from './base/errors.js';
import type { Logger } from './base/logger.js';
import type { StoreLayout } from './model/layout.js';
import type { CompiledModel } from './model/model.js';
import type { PartitionMap } from './model/partitionMap.js';
import type { MoveHost } from './moves/moveHost.js';
import {
  type MoveProgress,
  type MoveRow,
  type MoveSummary,
  ShardMover,
  summary,
} from './moves/shardMover.js';
import {
  type MysqlPool,
  createMysqlPool,
  ensureDatabase,
  parseMysqlUrl,
  redactUrl,
} from './mysql/mysqlPool.js';
import type { Partition } from './mysql/partitions.js';

/** What an operator asks of the mover. */
export type MoveAction =
  | { readonly kind: 'move'; readonly shards: readonly number[]; readonly to: string }
  | { readonly kind: 'split'; readonly to: readonly string[] }
  | { readonly kind: 'finish' }
  | { readonly kind: 'abort' }
  | { readonly kind: 'status' };

/** What a move command leaves: each shard it touched, and the map the store serves now. */
export interface MoveOutcome {
  readonly shards: readonly MoveSummary[];
  readonly mapVersion: number;
  /**
   * The partitions' locations (passwords hidden) in the order the gem's partition list needs,
   * when every partition serves one contiguous, equal range; undefined otherwise.
   */
  readonly gemOrder: readonly string[] | undefined;
}

/** The engine's pieces a move needs; the Engine passes itself. */
export interface MovingStore {
  readonly layout: StoreLayout;
  readonly models: { all(): readonly CompiledModel[] };
  readonly partitionMap: PartitionMap;
  partition(id: number): Partition;
  publishPartitionMap(next: PartitionMap): Promise<void>;
  publishPartitionMapFirst(next: PartitionMap): Promise<{ everywhere: Promise<void> }>;
  preparePartitionMap(next: PartitionMap): Promise<void>;
  partitionMapAtHome(): Promise<PartitionMap>;
}

/** The pools a mover opens on targets: a new partition is not the engine's until published. */
interface MoverPoolOptions {
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
}

export class ShardMoves {
  constructor(
    private readonly store: MovingStore,
    private readonly pools: MoverPoolOptions,
    private readonly logger: Logger,
  ) {}

  /** The moves not finished or aborted, one row per shard; none for a store that never moved. */
  async activeMoves(): Promise<MoveRow[]> {
    const host = new EngineMoveHost(this.store, this.pools);
    return new ShardMover(host, { logger: this.logger }).activeMoves();
  }

  /**
   * Runs `action`, telling `onProgress` of each step; `signal` stops the mover at its next step
   * (its state kept, so the same action resumes it).
   */
  async run(
    action: MoveAction,
    onProgress: (progress: MoveProgress) => void,
    signal?: AbortSignal,
  ): Promise<MoveOutcome> {
    const host = new EngineMoveHost(this.store, this.pools);
    const mover = new ShardMover(host, {
      logger: this.logger,
      onProgress: (progress) => {
        // Thrown here, the mover stops where it is, as a killed one would.
        signal?.throwIfAborted();
        onProgress(progress);
      },
    });
    try {
      const shards = await this.dispatch(mover, action);
      const map = this.store.partitionMap;
      return {
        shards,
        mapVersion: map.version,
        gemOrder: map.gemOrder()?.map(redactLocation),
      };
    } finally {
      await host.close();
    }
  }

  private async dispatch(mover: ShardMover, action: MoveAction): Promise<MoveSummary[]> {
    switch (action.kind) {
      case 'move':
        this.refuseGaleraSources(action.shards);
        return mover.move({ shards: action.shards, to: action.to });
      case 'split':
        return this.split(mover, action.to);
      case 'finish':
        return mover.finish();
      case 'abort':
        return mover.abort();
      case 'status':
        return (await mover.activeMoves()).map(summary);
    }
  }

  /**
   * A cut-over holds a shard's writes with LOCK TABLES, which holds them on one server: on a
   * Galera cluster the other nodes would go on taking writes the copy never sees.
   */
  private refuseGaleraSources(shards: readonly number[]): void {
    const map = this.store.partitionMap;
    for (const shard of shards) {
      const partition = this.store.partition(map.partitionOf(shard));
      if (partition.galera) {
        throw new FailedPreconditionError(
          `shard ${shard} is on partition ${partition.index}, a Galera cluster: moving shards off Galera ` +
            'is not supported (the cut-over could hold writes on one node only)',
        );
      }
    }
  }

  /**
   * Doubles the partitions as the gem's layout for twice the list would have them: with n
   * locations given, the store's shards read as n equal ranges, and the upper half of range i
   * moves to `to[i]`. Shards already there are left as they are, so a split stopped part-way
   * resumes when run again with the same list. The gem can read the result (MoveOutcome's
   * gemOrder) when each range was served by one partition before.
   */
  private async split(mover: ShardMover, to: readonly string[]): Promise<MoveSummary[]> {
    const shardsCount = this.store.layout.shardsCount;
    const n = to.length;
    if (n === 0) throw new InvalidArgumentError('split.to', 'give one location per partition');
    if (shardsCount % (2 * n) !== 0) {
      throw new InvalidArgumentError(
        'split.to',
        `${shardsCount} shards cannot be split into ${2 * n} equal ranges (${n} location(s) given: one per partition)`,
      );
    }
    const size = shardsCount / n;
    this.refuseGaleraSources(range(0, shardsCount));
    const summaries: MoveSummary[] = [];
    for (let i = 0; i < n; i++) {
      const upper = range(i * size + size / 2, (i + 1) * size);
      summaries.push(...(await mover.move({ shards: upper, to: to[i]! })));
    }
    return summaries;
  }
}

function range(first: number, end: number): number[] {
  return Array.from({ length: end - first }, (_, i) => first + i);
}

/** A map location as shown to people: each URL of a Galera list with its password hidden. */
function redactLocation(location: string): string {
  return location
    .split('|')
    .map((url) => redactUrl(url))
    .join('|');
}

/** The mover's view of this engine: its partitions and map, and pools of its own on targets. */
class EngineMoveHost implements MoveHost {
  private readonly targets = new Map<string, MysqlPool>();

  constructor(
    private readonly store: MovingStore,
    private readonly pools: MoverPoolOptions,
  ) {}

  get layout(): StoreLayout {
    return this.store.layout;
  }

  models(): readonly CompiledModel[] {
    return this.store.models.all();
  }

  currentMap(): PartitionMap {
    return this.store.partitionMap;
  }

  latestMap(): Promise<PartitionMap> {
    return this.store.partitionMapAtHome();
  }

  source(partitionId: number): Partition {
    return this.store.partition(partitionId);
  }

  async target(location: string): Promise<MysqlPool> {
    let pool = this.targets.get(location);
    if (!pool) {
      let parsed;
      try {
        parsed = parseMysqlUrl(location);
      } catch (error) {
        throw new InvalidArgumentError('to', (error as Error).message);
      }
      await ensureDatabase(parsed, this.pools.connectTimeoutMs);
      pool = createMysqlPool(parsed, {
        connectionLimit: this.pools.poolSize,
        connectTimeoutMs: this.pools.connectTimeoutMs,
      });
      this.targets.set(location, pool);
    }
    return pool;
  }

  publishMap(next: PartitionMap): Promise<void> {
    return this.store.publishPartitionMap(next);
  }

  publishMapFirst(next: PartitionMap): Promise<{ everywhere: Promise<void> }> {
    return this.store.publishPartitionMapFirst(next);
  }

  preparePublish(next: PartitionMap): Promise<void> {
    return this.store.preparePartitionMap(next);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.targets.values()].map((pool) => pool.end()));
  }
}
