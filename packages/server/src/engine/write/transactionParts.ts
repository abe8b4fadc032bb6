// What the steps of one shard transaction share (shardTransaction.ts runs them): where a
// group's rows live, the partition it writes, the caches its commit teaches, and what a
// committed group answers.
import type { Logger } from '../base/logger.js';
import type { VersionCache } from '../base/versionCache.js';
import type { StoreLayout } from '../model/layout.js';
import type { StoredTimes } from '../model/storedTimes.js';
import type { Partition } from '../mysql/partitions.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';
import type { Decision } from './groupPlan.js';
import type { KnownRecords } from './knownRecords.js';
import type { ItemOutcome, WriteItem } from './writeItems.js';

/** The store's and the partition's parts a shard transaction reads and feeds. */
export interface TransactionParts {
  readonly layout: StoreLayout;
  readonly partition: Partition;
  readonly times: StoredTimes;
  readonly knownRecords: KnownRecords;
  readonly versions: VersionCache;
  readonly logger: Logger;
}

/** What a transaction that committed did: one outcome per item, and the cells it stored. */
export interface Written {
  readonly outcomes: ItemOutcome[];
  /** Every cell the commit stored, by content table, in id order. */
  readonly written: ReadonlyMap<string, readonly StoredCell[]>;
}

/**
 * A transaction on Galera that a round trip found ended before its COMMIT: a BF abort (another
 * node's write set wanting its locks) rolled it back during a statement that still answered
 * without an error, and MariaDB ran the statements after it outside any transaction (see
 * sql/galera.ts). Nothing of it is held any more; statements of that round trip after the abort
 * may have committed one by one, so it is run again from the start like a deadlock victim, and
 * request ids sort out what they stored.
 */
export class TransactionLost extends Error {
  constructor(where: string) {
    super(
      `a Galera transaction was rolled back by a BF abort that no statement reported (${where})`,
    );
  }
}

/** The content table `item` writes. */
export function tableOf(layout: StoreLayout, item: WriteItem): string {
  return layout.contentTable(item.model, layout.contentShard(item.uuid));
}

/** What a decision comes to once the group committed what `stored` holds. */
export function outcomeOf(
  decision: Decision,
  stored: ReadonlyMap<string, StoredCell[]>,
): ItemOutcome {
  switch (decision.kind) {
    case 'stored':
      return { status: 'written', cell: decision.cell, replayed: true };
    case 'insert':
      return {
        status: 'written',
        cell: stored.get(decision.table)![decision.position]!,
        replayed: decision.replayed,
      };
    case 'refused':
      return { status: 'refused', error: decision.error };
    case 'taken':
      return { status: 'taken', owner: decision.owner };
    case 'unreachable':
      return { status: 'unreachable' };
  }
}
