// Every content write of the store, routed to its partition's group commit: single appends
// (WriteCell, a Put update), the appends of a WriteCells call, and creates. All of them are
// written by the one shard transaction (shardTransaction.ts), alone or grouped.
import type { CallScope } from '../base/callScope.js';
import {
  type GroupActivity,
  GroupCommit,
  type GroupLimits,
  type GroupStats,
} from './groupCommit.js';
import type { StoreLayout } from '../model/layout.js';
import type { KnownRecords } from './knownRecords.js';
import type { LogNotifier } from '../log/logNotifier.js';
import type { Logger } from '../base/logger.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { ShardTransaction } from './shardTransaction.js';
import type { StoredTimes } from '../model/storedTimes.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';
import type { VersionCache } from '../base/versionCache.js';
import type {
  AppendRequest,
  CreateOutcome,
  CreateRequest,
  ItemOutcome,
  RefusalError,
  WriteItem,
} from './writeItems.js';

export interface AppendResult {
  cell: StoredCell;
  /** True when the request id had been applied before: `cell` is that earlier version. */
  replayed: boolean;
}

/** What became of one append of many: its version, or why it was refused (nothing written). */
export type AppendOutcome = ({ ok: true } & AppendResult) | { ok: false; error: RefusalError };

export class CellWriter {
  /** Each partition's group commit, by id: made on first use, so that a partition a newer map adds gets one. */
  private readonly groups: GroupCommit[] = [];

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly notifier: LogNotifier,
    private readonly times: StoredTimes,
    private readonly knownRecords: KnownRecords,
    private readonly versions: VersionCache,
    private readonly logger: Logger,
    private readonly limits?: GroupLimits,
  ) {
    for (const partition of partitions.partitions) this.groupOf(partition.index);
  }

  private groupOf(index: number): GroupCommit {
    let group = this.groups[index];
    if (group) return group;
    const partition = this.partitions.at(index);
    const transaction = new ShardTransaction(
      this.layout,
      partition,
      this.notifier,
      this.times,
      this.knownRecords,
      this.versions,
      this.logger,
    );
    group = new GroupCommit(
      (scope, items) => transaction.run(scope, items),
      (item) => this.layout.contentShard(item.uuid),
      this.limits,
      partition.index,
    );
    this.groups[index] = group;
    return group;
  }

  /**
   * Appends one version, for the call of `scope` (as every method here).
   * @throws the refusal (NotFoundError, ConflictError)
   */
  async append(scope: CallScope, request: AppendRequest): Promise<AppendResult> {
    const result = await this.appendIfReached(scope, request);
    if (!result) throw new Error('an append without a reachedThrough row was answered unreachable');
    return result;
  }

  /**
   * Appends one version, unless `request.reachedThrough` no longer leads to the record:
   * undefined then, and nothing was written. @throws the refusal (NotFoundError, ConflictError)
   */
  async appendIfReached(
    scope: CallScope,
    request: AppendRequest,
  ): Promise<AppendResult | undefined> {
    const [outcome] = await this.submit(scope, this.partitionOf(request.uuid), [
      { kind: 'append', ...request },
    ]);
    switch (outcome!.status) {
      case 'written':
        return outcome!;
      case 'refused':
        throw outcome!.error;
      case 'unreachable':
        return undefined;
      case 'taken':
        throw new Error('an append was answered as a create');
    }
  }

  /**
   * Appends many versions: those of each partition in one transaction, in request order (the
   * versions of one cell chain), partitions in parallel. One outcome per request, in order. When
   * a partition fails the call fails, once every partition has settled (so nothing is still
   * running when the caller retries); partitions that committed stay committed, and the
   * caller's retry replays them by their request ids.
   */
  async appendAll(scope: CallScope, requests: readonly AppendRequest[]): Promise<AppendOutcome[]> {
    const byPartition = this.layout.byPartition(requests.keys(), (i) =>
      this.layout.contentShard(requests[i]!.uuid),
    );
    const outcomes = new Array<AppendOutcome>(requests.length);
    const settled = await Promise.allSettled(
      [...byPartition].map(async ([partition, positions]) => {
        const results = await this.submit(
          scope,
          partition,
          positions.map((i): WriteItem => ({ kind: 'append', ...requests[i]! })),
        );
        positions.forEach((position, i) => {
          const outcome = results[i]!;
          if (outcome.status === 'taken' || outcome.status === 'unreachable') {
            throw new Error(
              `an append without a reachedThrough row was answered ${outcome.status}`,
            );
          }
          outcomes[position] =
            outcome.status === 'written'
              ? { ok: true, cell: outcome.cell, replayed: outcome.replayed }
              : { ok: false, error: outcome.error };
        });
      }),
    );
    for (const result of settled) if (result.status === 'rejected') throw result.reason;
    return outcomes;
  }

  /** Creates a record: base version 0 and its index rows on the uuid's partition, together. */
  async create(scope: CallScope, request: CreateRequest): Promise<CreateOutcome> {
    const [outcome] = await this.submit(scope, this.partitionOf(request.uuid), [
      { kind: 'create', ...request },
    ]);
    if (outcome!.status === 'unreachable') throw new Error('a create was answered unreachable');
    return outcome!;
  }

  /** Transactions and items written so far, over every partition. */
  stats(): GroupStats {
    return this.groups.reduce(
      (sum, group) => ({
        groups: sum.groups + group.stats.groups,
        items: sum.items + group.stats.items,
      }),
      { groups: 0, items: 0 },
    );
  }

  /** Each partition's group commit, by partition index. */
  activity(): GroupActivity[] {
    return this.partitions.partitions.map((partition) => this.groupOf(partition.index).activity);
  }

  private partitionOf(uuid: string): number {
    return this.layout.partitionOf(this.layout.contentShard(uuid));
  }

  private submit(
    scope: CallScope,
    partition: number,
    items: readonly WriteItem[],
  ): Promise<ItemOutcome[]> {
    return this.groupOf(partition).submit(scope, items);
  }
}
