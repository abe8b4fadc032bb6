// The one transaction that writes content rows: every append and every create goes through it,
// alone or grouped with others bound for the same partition (groupCommit.ts). It locks the
// log-lock row of each content table it writes, which gives three guarantees at once:
// - versions are contiguous: the latest ref_key read under the lock is still the latest at
//   insert, so concurrent writers get 0..n-1 with no gap and no duplicate;
// - writes are idempotent: a request id already applied is seen under the lock and answered
//   with the version it created;
// - each shard's log is gap-free: ids are allocated and committed in the same order, so a
//   reader of `id > cursor` never skips a row that commits later.
//
// Two round trips, one commit, for the whole group, in as few statements as possible (each one
// costs MySQL a parse and a result, whatever it does): the locks and the reads under them
// (lockedReads.ts), then the versions decided in memory (groupPlan.ts), inserted, and
// committed (insertRounds.ts). A group whose reads this server remembers goes in one round
// trip instead (oneTripWrite.ts), falling back to the usual two in the same transaction when
// what it remembered is stale. This file runs those steps and decides what to try again.
//
// Request ids are not looked up on the first attempt (almost every write is new, and the
// lookups cost as much as the other reads): a write sent before makes an INSERT fail on the
// request-id key, and a refused write may be the retry of one that succeeded (its expected
// version is now stale); either way the transaction is rolled back and run again with the
// lookups, which answer such writes as replays.
import type { CallScope } from '../base/callScope.js';
import { UnavailableError } from '../base/errors.js';
import { parsePosition } from '../base/gtidPosition.js';
import { type Logger, silentLogger } from '../base/logger.js';
import { NO_VERSION, type VersionCache } from '../base/versionCache.js';
import type { StoreLayout } from '../model/layout.js';
import type { StoredTimes } from '../model/storedTimes.js';
import type { LogNotifier } from '../log/logNotifier.js';
import type { SqlConnection } from '../mysql/mysqlPool.js';
import { OneTripBackoff } from '../mysql/oneTripBackoff.js';
import type { Partition } from '../mysql/partitions.js';
import { REQUEST_ID_KEY } from '../mysql/sql/contentDdl.js';
import { PRIMARY_POSITION } from '../mysql/sql/replication.js';
import {
  ROLLBACK,
  ROLLBACK_TO_SAVEPOINT,
  START_TRANSACTION,
  type Statement,
  runTogether,
} from '../mysql/sql/statement.js';
import { isNodeFailure } from '../mysql/galeraNodes.js';
import { duplicateKeyName, isDeadlock } from '../mysql/sqlErrors.js';
import { CellsInFlight } from './cellsInFlight.js';
import { type TableReads, cellKey, planGroup } from './groupPlan.js';
import { insertAndCommit } from './insertRounds.js';
import type { KnownRecords } from './knownRecords.js';
import { MissingLogLocks, readUnderLocks, restoreLogLocks, tablesOf } from './lockedReads.js';
import { REQUEST_APPLIED, STALE, oneTripReads, writeInOneTrip } from './oneTripWrite.js';
import { indexRowsOf } from './placedIndexRows.js';
import {
  type TransactionParts,
  TransactionLost,
  type Written,
  outcomeOf,
  tableOf,
} from './transactionParts.js';
import type { ItemOutcome, WriteItem } from './writeItems.js';

/** Deadlocks (between creates inserting the same index keys) are retried this often. */
const DEADLOCK_ATTEMPTS = 3;

const RETRY_WITH_LOOKUPS = Symbol('retry with request-id lookups');
const RETRY_AFTER_DEADLOCK = Symbol('retry after a deadlock');
type Retry = typeof RETRY_WITH_LOOKUPS | typeof RETRY_AFTER_DEADLOCK;

export class ShardTransaction {
  private readonly parts: TransactionParts;
  private readonly oneTrip = new OneTripBackoff();
  private readonly inFlight = new CellsInFlight();

  constructor(
    layout: StoreLayout,
    private readonly partition: Partition,
    private readonly notifier: LogNotifier,
    times: StoredTimes,
    knownRecords: KnownRecords,
    versions: VersionCache,
    logger: Logger = silentLogger,
  ) {
    this.parts = { layout, partition, times, knownRecords, versions, logger };
  }

  /**
   * Applies the items, all on this partition, in one transaction and answers one outcome per
   * item, in order, once no earlier group of this server writes any of their cells. Fails as a
   * whole only when the partition fails (UnavailableError). Its statements serve the calls of
   * `scope` (the group's).
   */
  async run(scope: CallScope, items: readonly WriteItem[]): Promise<ItemOutcome[]> {
    const leave = await this.inFlight.enter(
      items.flatMap((item) =>
        item.kind === 'append' ? [`${this.tableOf(item)}/${cellKey(item.uuid, item.cell)}`] : [],
      ),
    );
    try {
      try {
        return await this.runAlone(scope, items);
      } catch (error) {
        if (!(error instanceof MissingLogLocks)) throw error;
        await this.partition.run(scope, (pool) =>
          restoreLogLocks(this.parts, pool, error.tables, false),
        );
        return await this.runAlone(scope, items);
      }
    } finally {
      leave();
    }
  }

  private async runAlone(scope: CallScope, items: readonly WriteItem[]): Promise<ItemOutcome[]> {
    let lookUpRequestIds = false;
    let deadlocks = 0;
    let nodeFailures = 0;
    const remembered = oneTripReads(this.parts, items);
    if (remembered && this.oneTrip.shouldTry()) {
      const result = await this.partition
        .withConnection(scope, (connection) =>
          this.attemptOneTripFirst(connection, items, remembered),
        )
        .catch((error: unknown) => this.onAnotherNode(error, (nodeFailures += 1)));
      if (result === RETRY_WITH_LOOKUPS) lookUpRequestIds = true;
      else if (result === RETRY_AFTER_DEADLOCK) deadlocks += 1;
      else if (result !== undefined) {
        return this.committed(items, await this.replaysNoted(scope, result));
      }
    }
    for (;;) {
      const result = await this.partition
        .withConnection(scope, (connection) => this.attempt(connection, items, lookUpRequestIds))
        .catch((error: unknown) => this.onAnotherNode(error, (nodeFailures += 1)));
      if (result === RETRY_WITH_LOOKUPS) {
        // With the lookups made there is nothing left to retry for, but another node.
        if (lookUpRequestIds && nodeFailures === 0) {
          throw new Error('a group asked for request-id lookups twice');
        }
        lookUpRequestIds = true;
      } else if (result === RETRY_AFTER_DEADLOCK) {
        deadlocks += 1;
        if (deadlocks >= DEADLOCK_ATTEMPTS) {
          throw new UnavailableError(
            this.partition.index,
            `partition ${this.partition.index} is busy (concurrent creates of the same values); retry`,
          );
        }
      } else {
        return this.committed(items, await this.replaysNoted(scope, result));
      }
    }
  }

  /**
   * On a partition on Galera, a transaction whose node failed (its connection lost, the node
   * out of the Primary component) is run again on the next node, once per node: it may have
   * committed before the node went (a lost answer to its COMMIT), so it is run with the
   * request-id lookups, which answer what committed as replays. The new node's causal reads
   * (sql/galera.ts) make its START TRANSACTION wait until it has applied that commit, if there
   * was one. Any other failure, or one past the nodes, goes to the caller.
   */
  private onAnotherNode(error: unknown, nodeFailures: number): Retry {
    const nodes = this.partition.galera?.nodeCount ?? 0;
    if (
      nodeFailures > nodes ||
      !(error instanceof UnavailableError) ||
      !isNodeFailure(error.cause)
    ) {
      throw error;
    }
    return RETRY_WITH_LOOKUPS;
  }

  /**
   * A replay commits nothing, so the caller's session token would not name the earlier commit
   * it answers, and a session read after it could be answered by a replica that has not applied
   * that commit (a retry whose first answer was lost, read through another server). The
   * primary's position, read after the replay saw the earlier write, covers it: it goes into
   * the token as this partition's commit. Only with replicas, only for groups with a replay.
   */
  private async replaysNoted(scope: CallScope, result: Written): Promise<Written> {
    const commits = scope.commits;
    if (commits === undefined || this.partition.replicas.length === 0) return result;
    if (!result.outcomes.some((outcome) => outcome.status === 'written' && outcome.replayed)) {
      return result;
    }
    const [rows] = (await this.partition.run(scope, (pool) =>
      runTogether(pool.reads, [PRIMARY_POSITION]),
    )) as { position: string | null }[][];
    commits.record(this.partition.index, parsePosition(rows?.[0]?.position ?? ''));
    return result;
  }

  /** Tells the log's followers, and remembers what the group's commit made known. */
  private committed(items: readonly WriteItem[], result: Written): ItemOutcome[] {
    for (const [table, cells] of result.written) this.notifier.notify(table, cells);
    result.outcomes.forEach((outcome, i) => {
      const item = items[i]!;
      if (outcome.status !== 'written') return;
      // Records written to before were known or read to exist; created ones are new.
      if (item.kind === 'create') this.parts.knownRecords.add(item.model.name, item.uuid);
      // A replay answers an earlier version, not the latest.
      if (outcome.replayed) return;
      const { cell } = outcome;
      const table = this.tableOf(item);
      if (item.kind !== 'create') {
        this.parts.versions.set(table, cell.uuid, cell.name, cell.refKey, cell.body);
        return;
      }
      this.parts.versions.setCreated(table, cell.uuid, cell.name, cell.refKey, cell.body);
      for (const other of item.model.spec.cells) {
        this.parts.versions.setCreated(table, cell.uuid, other, NO_VERSION, undefined);
      }
    });
    return result.outcomes;
  }

  private tableOf(item: WriteItem): string {
    return tableOf(this.parts.layout, item);
  }

  /**
   * The group in one round trip, or where a key was taken (a remembered version stale, a
   * create's values held, a request id applied), the usual way in the same transaction, from
   * the savepoint after its locks. Undefined when it is to be written the usual way from the
   * start.
   */
  private async attemptOneTripFirst(
    connection: SqlConnection,
    items: readonly WriteItem[],
    reads: ReadonlyMap<string, TableReads>,
  ): Promise<Written | Retry | undefined> {
    const tried = await writeInOneTrip(this.parts, connection, items, reads);
    if (tried !== STALE && tried !== REQUEST_APPLIED) {
      if (tried !== undefined) this.oneTrip.succeeded();
      return tried;
    }
    if (tried === STALE) this.oneTrip.failed();
    return this.attempt(connection, items, tried === REQUEST_APPLIED, ROLLBACK_TO_SAVEPOINT);
  }

  /**
   * The usual attempt: `begin` starts the transaction, or goes back to the savepoint of one
   * that already holds the group's locks (attemptOneTripFirst).
   */
  private async attempt(
    connection: SqlConnection,
    items: readonly WriteItem[],
    lookUpRequestIds: boolean,
    begin: Statement = START_TRANSACTION,
  ): Promise<Written | Retry> {
    const tables = tablesOf(this.parts.layout, items);
    const indexRows = indexRowsOf(items);
    let open = true;
    try {
      const reads = await readUnderLocks(
        this.parts,
        connection,
        items,
        tables,
        indexRows,
        lookUpRequestIds,
        begin,
      );
      const plan = planGroup(
        items,
        (item) => this.tableOf(item),
        reads.tables,
        reads.fates,
        reads.unreachable,
        new Date(),
      );
      // An append not written may be the retry of one that was: look its request id up.
      const unwrittenAppend = plan.decisions.some(
        (decision, i) =>
          (decision.kind === 'refused' || decision.kind === 'unreachable') &&
          items[i]!.kind === 'append',
      );
      if (!lookUpRequestIds && unwrittenAppend) {
        await runTogether(connection, [ROLLBACK]);
        open = false;
        return RETRY_WITH_LOOKUPS;
      }
      if (plan.inserts.size === 0) {
        await runTogether(connection, [ROLLBACK]);
        open = false;
        return { outcomes: plan.decisions.map((d) => outcomeOf(d, new Map())), written: new Map() };
      }
      const stored = await insertAndCommit(
        this.parts,
        connection,
        plan,
        tables,
        items,
        reads.fates,
      );
      open = false;
      return {
        outcomes: plan.decisions.map((decision) => outcomeOf(decision, stored)),
        written: stored,
      };
    } catch (error) {
      if (isDeadlock(error)) return RETRY_AFTER_DEADLOCK; // InnoDB rolled it back
      // A BF abort rolled it back without a word (sql/galera.ts): nothing is open, and it is
      // run again like a deadlock's victim.
      if (error instanceof TransactionLost) return RETRY_AFTER_DEADLOCK;
      if (open) await runTogether(connection, [ROLLBACK]).catch(() => connection.destroy());
      const key = duplicateKeyName(error);
      if (key === REQUEST_ID_KEY && !lookUpRequestIds) return RETRY_WITH_LOOKUPS;
      if (key !== undefined) {
        // Only a writer that bypasses the log lock (the gem, a manual INSERT) can race us.
        throw new UnavailableError(
          this.partition.index,
          `a concurrent write outside Shameless touched partition ${this.partition.index}; retry`,
          { cause: error },
        );
      }
      throw error;
    }
  }
}
