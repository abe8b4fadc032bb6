// The consumer groups' rows, read and written on the partitions that hold them (SQL in
// mysql/sql/groupTables.ts): members on partition 0, each shard's cursor, owner and epoch and
// its failed and parked cells on the shard's own partition. Every coordination decision is
// made from these rows and every change is a conditional write on them, so any server may
// stop at any time and another carries on from what they say.
import { type CallScope, UNBOUNDED } from '../base/callScope.js';
import type { RowId } from '../base/exactInteger.js';
import { UnavailableError } from '../base/errors.js';
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel } from '../model/model.js';
import type { Row, WriteResult } from '../mysql/mysqlPool.js';
import type { Partition, PartitionSet } from '../mysql/partitions.js';
import {
  type LogBacklog,
  readCellsById,
  readLogBacklogs,
  readMaxIds,
} from '../mysql/sql/contentReads.js';
import { type StoredCell, toStoredCell } from '../mysql/sql/contentRows.js';
import {
  GROUP_ERROR_MAX_BYTES,
  type GroupCellRow,
  type GroupKey,
  type GroupShardRow,
  type MemberRow,
  type MemberSessionRow,
  askReplay,
  claimShard,
  commitCursor,
  countFailedDelivery,
  countLostDeliveries,
  countParkedCells,
  createGroupCellsTableSql,
  createGroupMembersTableSql,
  createGroupShards,
  createGroupShardsTableSql,
  failedDeliveryCount,
  forgetFailures,
  forgetHandledFailures,
  joinMember,
  parkCell,
  readGroupShards,
  readLiveMembers,
  readMembers,
  readParkedCells,
  readReplays,
  readShardCells,
  removeExpiredMembers,
  removeMember,
  renewMember,
  replayHandled,
  setCursors,
  toGroupCellRow,
  toGroupShardRow,
  toMemberRow,
} from '../mysql/sql/groupTables.js';
import { TRANSACTION_STILL_OPEN, stillOpen } from '../mysql/sql/galera.js';
import { isDeadlock } from '../mysql/sqlErrors.js';
import {
  COMMIT,
  START_TRANSACTION,
  type Statement,
  directReader,
  runTogether,
} from '../mysql/sql/statement.js';

/** A cursor write of one owned shard: fenced by its owner and epoch. */
export interface CursorCommit {
  readonly shard: number;
  readonly memberId: string;
  readonly epoch: RowId;
  readonly cursor: RowId;
  /** Hand the shard back (no owner) with the cursor. */
  readonly release: boolean;
  /** Counts of failed deliveries at or below the cursor may go. */
  readonly forgetFailures: boolean;
}

/** What a coordinator reads of a group each turn. */
export interface GroupState {
  readonly members: MemberRow[];
  readonly shards: GroupShardRow[];
  /** Parked cells whose replay was asked for. */
  readonly replays: GroupCellRow[];
}

/** A shard of a group as described: its row, how far its log runs past the cursor, its parked cells. */
export interface ShardDescription extends GroupShardRow {
  readonly backlog: LogBacklog;
  readonly parked: number;
}

/**
 * A write of the group tables that a deadlock rolled back (on Galera also: an abort of another
 * node's write ended unreported) is run this often at most.
 */
const DEADLOCK_ATTEMPTS = 5;

/** The most cells a description counts behind a cursor (a count reads what it counts). */
export const LAG_COUNT_CAP = 1_000_000;

/** Runs work for the call of `scope` again where a moved shard now is (partitionRouting.ts). */
export type Fence = <T>(scope: CallScope, work: () => Promise<T>) => Promise<T>;

/**
 * The group tables' statements. A GroupStore's serve one scope (callScope.ts): the call, member
 * session or coordinator turn that uses it, which takes its own with `for`.
 */
export class GroupStore {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    /**
     * Runs reads of content tables again where a moved shard now is (the fence,
     * mysql/partitionRouting.ts); as they are when left out.
     */
    private readonly fenced: Fence = (_scope, work) => work(),
    /** What its statements serve. */
    readonly scope: CallScope = UNBOUNDED,
    /** Per partition: its group tables exist (created once per process, on first use). */
    private readonly tablesReady = new Map<number, Promise<void>>(),
  ) {}

  /** The same store, its statements serving the call (or session, or turn) of `scope`. */
  for(scope: CallScope): GroupStore {
    return new GroupStore(this.layout, this.partitions, this.fenced, scope, this.tablesReady);
  }

  /** Creates the group tables where they are missing: members on partition 0, the rest everywhere. */
  async ensureTables(): Promise<void> {
    await Promise.all(
      this.partitions.partitions.map((partition) => {
        let ready = this.tablesReady.get(partition.index);
        if (!ready) {
          const sql = [
            createGroupShardsTableSql(this.layout.groupShardsTable),
            createGroupCellsTableSql(this.layout.groupCellsTable),
          ];
          if (partition.index === 0)
            sql.push(createGroupMembersTableSql(this.layout.groupMembersTable));
          // Shared by every later user: it serves none of them.
          ready = partition.run(UNBOUNDED, async (pool) => {
            for (const text of sql) await pool.query(text);
          });
          // A failure is not remembered: the next use tries again.
          ready.catch(() => this.tablesReady.delete(partition.index));
          this.tablesReady.set(partition.index, ready);
        }
        return ready;
      }),
    );
  }

  /** Whether any member ever joined the group (its shard rows exist). */
  async exists(group: GroupKey): Promise<boolean> {
    await this.ensureTables();
    const [rows = []] = (await this.atPartition(0).read(this.scope, (reader) =>
      reader.read([readGroupShards(this.layout.groupShardsTable, group)]),
    )) as Row[][];
    return rows.length > 0;
  }

  /**
   * Gives the group a row for every shard unless it has them: each at its beginning, or with
   * `latest` at the shard's highest id now. Rows already there keep their cursors.
   */
  async createGroup(group: GroupKey, model: CompiledModel, latest: boolean): Promise<void> {
    return this.fenced(this.scope, async () => {
      await this.ensureTables();
      await Promise.all(
        this.partitions.partitions.map(async (partition) => {
          const shards = this.layout.shardsOf(partition.index);
          const cursors: RowId[] = latest
            ? await partition.read(this.scope, (reader) =>
                readMaxIds(
                  reader,
                  shards.map((shard) => this.layout.contentTable(model, shard)),
                ),
              )
            : shards.map(() => 0);
          await partition.run(this.scope, (pool) =>
            runTogether(pool, [
              createGroupShards(
                this.layout.groupShardsTable,
                group,
                shards.map((shard, i) => ({ shard, cursor: cursors[i]! })),
              ),
            ]),
          );
        }),
      );
    });
  }

  async join(group: GroupKey, member: MemberSessionRow): Promise<void> {
    await this.atPartition(0).run(this.scope, (pool) =>
      runTogether(pool, [joinMember(this.layout.groupMembersTable, group, member)]),
    );
  }

  /** Extends a session; false once it expired or another session of the member replaced it. */
  async renew(
    group: GroupKey,
    memberId: string,
    session: string,
    leftMs: number,
  ): Promise<boolean> {
    const [result] = (await this.atPartition(0).run(this.scope, (pool) =>
      runTogether(pool, [
        renewMember(this.layout.groupMembersTable, group, memberId, session, leftMs),
      ]),
    )) as WriteResult[];
    return (result?.affectedRows ?? 0) > 0;
  }

  async leave(group: GroupKey, memberId: string, session: string): Promise<void> {
    await this.atPartition(0).run(this.scope, (pool) =>
      runTogether(pool, [removeMember(this.layout.groupMembersTable, group, memberId, session)]),
    );
  }

  /**
   * The group's members (expired ones removed first), every shard's row and the replays asked
   * for: one round trip per partition, in parallel.
   */
  async readState(group: GroupKey): Promise<GroupState> {
    const [members, perPartition] = await Promise.all([
      this.atPartition(0).run(this.scope, async (pool) => {
        const results = (await runTogether(pool, [
          removeExpiredMembers(this.layout.groupMembersTable, group),
          readMembers(this.layout.groupMembersTable, group),
        ])) as [WriteResult, Row[]];
        return results[1].map(toMemberRow);
      }),
      Promise.all(
        this.partitions.partitions.map((partition) =>
          partition.read(this.scope, (reader) =>
            reader.read([
              readGroupShards(this.layout.groupShardsTable, group),
              readReplays(this.layout.groupCellsTable, group),
            ]),
          ),
        ),
      ),
    ]);
    const shards: GroupShardRow[] = [];
    const replays: GroupCellRow[] = [];
    for (const [shardRows = [], replayRows = []] of perPartition as Row[][][]) {
      shards.push(...shardRows.map(toGroupShardRow));
      replays.push(...replayRows.map(toGroupCellRow));
    }
    return { members, shards, replays };
  }

  /**
   * Takes the shard for the member if its epoch is still the one read; the row as taken, or
   * undefined when another claim came first.
   */
  async claim(
    group: GroupKey,
    shard: number,
    memberId: string,
    epoch: RowId,
  ): Promise<GroupShardRow | undefined> {
    const [claimed, rows] = (await this.forShard(shard).run(this.scope, (pool) =>
      runTogether(pool, claimShard(this.layout.groupShardsTable, group, shard, memberId, epoch)),
    )) as [WriteResult, Row[]];
    if (claimed.affectedRows === 0 || !rows[0]) return undefined;
    const row = toGroupShardRow(rows[0]);
    // The read is a statement of its own: a claim landing between the two took the shard on.
    if (row.owner !== memberId || BigInt(row.epoch) !== BigInt(epoch) + 1n) return undefined;
    return row;
  }

  /** The shard's failed and parked cells past its cursor. */
  async shardCells(group: GroupKey, shard: number, cursor: RowId): Promise<GroupCellRow[]> {
    const [rows = []] = (await this.forShard(shard).read(this.scope, (reader) =>
      reader.read([readShardCells(this.layout.groupCellsTable, group, shard, cursor)]),
    )) as Row[][];
    return rows.map(toGroupCellRow);
  }

  /**
   * Writes cursors, one round trip per partition; answers the shards whose write matched
   * (owner and epoch still the committer's), the others were lost.
   */
  async commit(group: GroupKey, commits: readonly CursorCommit[]): Promise<Set<number>> {
    const kept = new Set<number>();
    await Promise.all(
      [...this.layout.byPartition(commits, ({ shard }) => shard)].map(async ([index, list]) => {
        const statements: Statement[] = [];
        const at: number[] = [];
        for (const commit of list) {
          at.push(statements.length);
          statements.push(
            commitCursor(
              this.layout.groupShardsTable,
              group,
              commit.shard,
              commit.memberId,
              commit.epoch,
              commit.cursor,
              commit.release,
            ),
          );
          if (commit.forgetFailures) {
            statements.push(
              forgetHandledFailures(
                this.layout.groupCellsTable,
                this.layout.groupShardsTable,
                group,
                commit.shard,
                commit.memberId,
                commit.epoch,
                commit.cursor,
              ),
            );
          }
        }
        const results = (await this.atPartition(index).run(this.scope, (pool) =>
          runTogether(pool, statements),
        )) as WriteResult[];
        list.forEach((commit, i) => {
          if ((results[at[i]!]?.affectedRows ?? 0) > 0) kept.add(commit.shard);
        });
      }),
    );
    return kept;
  }

  /**
   * Counts a failed delivery of a cell; its attempts so far, as stored. One statement: a
   * deadlock (on Galera, a BF abort the node's own retry of the statement did not get past)
   * rolled it back whole, so it is run again rather than the count left to the member's memory.
   */
  async countFailure(group: GroupKey, shard: number, id: RowId, error: string): Promise<number> {
    const count = countFailedDelivery(
      this.layout.groupCellsTable,
      group,
      shard,
      id,
      keptError(error),
    );
    return this.forShard(shard).run(this.scope, async (pool) => {
      const [result] = (await untilNotDeadlocked(() =>
        runTogether(pool, [count]),
      )) as WriteResult[];
      return failedDeliveryCount(result!);
    });
  }

  /** Counts a delivery of each cell, held by a member that died. */
  async countLost(
    group: GroupKey,
    cells: readonly { shard: number; id: RowId }[],
    error: string,
  ): Promise<void> {
    await Promise.all(
      [...this.layout.byPartition(cells, ({ shard }) => shard)].map(([index, list]) =>
        this.atPartition(index).run(this.scope, (pool) =>
          runTogether(pool, [
            countLostDeliveries(this.layout.groupCellsTable, group, list, keptError(error)),
          ]),
        ),
      ),
    );
  }

  async park(
    group: GroupKey,
    shard: number,
    id: RowId,
    attempts: number,
    error: string,
  ): Promise<void> {
    // One upsert, run again after a deadlock as the count is: a park that failed would leave
    // the cell to a delivery more than maxDeliveries.
    const park = parkCell(
      this.layout.groupCellsTable,
      group,
      shard,
      id,
      attempts,
      keptError(error),
    );
    await this.forShard(shard).run(this.scope, (pool) =>
      untilNotDeadlocked(() => runTogether(pool, [park])),
    );
  }

  async replayHandled(group: GroupKey, shard: number, id: RowId): Promise<void> {
    await this.forShard(shard).run(this.scope, (pool) =>
      runTogether(pool, [replayHandled(this.layout.groupCellsTable, group, shard, id)]),
    );
  }

  /** Asks for a parked cell's replay; false when the cell is not parked. */
  async askReplay(group: GroupKey, shard: number, id: RowId): Promise<boolean> {
    await this.ensureTables();
    const [result] = (await this.forShard(shard).run(this.scope, (pool) =>
      runTogether(pool, [askReplay(this.layout.groupCellsTable, group, shard, id)]),
    )) as WriteResult[];
    return (result?.affectedRows ?? 0) > 0;
  }

  /** Cells of one shard by id, whole, in id order. */
  async readCells(
    model: CompiledModel,
    shard: number,
    ids: readonly RowId[],
  ): Promise<StoredCell[]> {
    return this.fenced(this.scope, async () => {
      const rows = await this.forShard(shard).read(this.scope, (reader) =>
        readCellsById(reader, this.layout.contentTable(model, shard), ids),
      );
      return rows.map((row) => toStoredCell(row, shard));
    });
  }

  /** Every shard's row with its backlog and parked count, and the members. */
  async describe(
    group: GroupKey,
    model: CompiledModel,
  ): Promise<{ members: MemberRow[]; shards: ShardDescription[] }> {
    return this.fenced(this.scope, async () => {
      const state = await this.readState(group);
      const byShard = new Map(state.shards.map((row) => [row.shard, row]));
      const shards: ShardDescription[] = [];
      await Promise.all(
        this.partitions.partitions.map(async (partition) => {
          const rows = this.layout
            .shardsOf(partition.index)
            .map((shard) => byShard.get(shard))
            .filter((row): row is GroupShardRow => row !== undefined);
          const [backlogs, parked] = await partition.read(this.scope, async (reader) => {
            const logs = rows.map(({ shard, cursor }) => ({
              table: this.layout.contentTable(model, shard),
              cursor,
            }));
            const [counts = []] = (await reader.read([
              countParkedCells(this.layout.groupCellsTable, group),
            ])) as Row[][];
            return [await readLogBacklogs(reader, logs, LAG_COUNT_CAP), counts] as const;
          });
          const parkedByShard = new Map(
            parked.map((row) => [Number(row.shard), Number(row.parked)]),
          );
          rows.forEach((row, i) =>
            shards.push({
              ...row,
              backlog: backlogs[i]!,
              parked: parkedByShard.get(row.shard) ?? 0,
            }),
          );
        }),
      );
      shards.sort((a, b) => a.shard - b.shard);
      return { members: state.members.filter((member) => member.alive), shards };
    });
  }

  /** Parked cells after (shard, id), in that order, at most `limit`, with their cells. */
  async parked(
    group: GroupKey,
    model: CompiledModel,
    after: { shard: number; id: RowId },
    onlyShard: number | undefined,
    limit: number,
  ): Promise<{ row: GroupCellRow; cell: StoredCell | undefined }[]> {
    return this.fenced(this.scope, async () => {
      await this.ensureTables();
      let found: GroupCellRow[] = [];
      const read = async (partition: Partition, want: number) => {
        const [rows = []] = (await partition.read(this.scope, (reader) =>
          reader.read([
            readParkedCells(this.layout.groupCellsTable, group, after, onlyShard, want),
          ]),
        )) as Row[][];
        return rows.map(toGroupCellRow);
      };
      if (this.layout.map.version === 0) {
        // Partitions hold ascending blocks of shards: read them in order until the page is full.
        for (const partition of this.partitions.partitions) {
          const shards = this.layout.shardsOf(partition.index);
          if (shards[shards.length - 1]! < after.shard) continue;
          if (onlyShard !== undefined && !shards.includes(onlyShard)) continue;
          found.push(...(await read(partition, limit - found.length)));
          if (found.length >= limit) break;
        }
      } else {
        // After a move a partition's shards need not follow the previous one's, and it may keep
        // rows of a shard it no longer serves: each partition's own, merged in (shard, id) order.
        const pages = await Promise.all(
          this.partitions.partitions.map(async (partition) => {
            const shards = new Set(this.layout.shardsOf(partition.index));
            if (shards.size === 0 || (onlyShard !== undefined && !shards.has(onlyShard))) return [];
            return (await read(partition, limit)).filter((row) => shards.has(row.shard));
          }),
        );
        found = pages
          .flat()
          .sort((a, b) => a.shard - b.shard || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, limit);
      }
      const cells = new Map<string, StoredCell>();
      for (const [shard, rows] of groupBy(found, (row) => row.shard)) {
        for (const cell of await this.readCells(
          model,
          shard,
          rows.map((row) => row.id),
        )) {
          cells.set(`${shard}/${cell.id}`, cell);
        }
      }
      return found.map((row) => ({ row, cell: cells.get(`${row.shard}/${row.id}`) }));
    });
  }

  /** Member ids of the group's live sessions. */
  async liveMembers(group: GroupKey): Promise<string[]> {
    await this.ensureTables();
    const [rows = []] = (await this.atPartition(0).read(this.scope, (reader) =>
      reader.read([readLiveMembers(this.layout.groupMembersTable, group)]),
    )) as Row[][];
    return rows.map((row) => String(row.member_id));
  }

  /**
   * Sets cursors (no owner afterwards), and clears counts of failed deliveries: on each
   * partition in one transaction, run until it committed whole (the values are absolute).
   */
  async setCursors(
    group: GroupKey,
    cursors: readonly { shard: number; cursor: RowId }[],
  ): Promise<void> {
    await Promise.all(
      [...this.layout.byPartition(cursors, ({ shard }) => shard)].map(([index, list]) =>
        this.writeWhole(this.atPartition(index), [
          ...setCursors(this.layout.groupShardsTable, group, list),
          forgetFailures(
            this.layout.groupCellsTable,
            group,
            list.map(({ shard }) => shard),
          ),
        ]),
      ),
    );
  }

  /**
   * Runs `writes` in one transaction on the partition, and again after a deadlock or, on
   * Galera, after a BF abort that ended the transaction without a word (sql/galera.ts): the
   * statements after such an abort committed one by one, a part of the whole. Only for writes
   * that set absolute values, which a second run puts where the first meant to whatever of it
   * stayed. The transaction itself is checked, not the rows read back after it: a member may
   * join and claim a shard right after a reset, and a read-back would take that for a lost one.
   *
   * On Galera the writes' round trip ends with TRANSACTION_STILL_OPEN (last, so that an abort
   * during it is reported as a deadlock), and the COMMIT goes alone in a second round trip,
   * where an abort before it is reported too. Elsewhere nothing ends a transaction unreported,
   * and it all goes in one round trip.
   */
  private async writeWhole(partition: Partition, writes: readonly Statement[]): Promise<void> {
    const galera = partition.galera !== undefined;
    for (let attempt = 1; ; attempt += 1) {
      const committed = await partition.withConnection(this.scope, async (connection) => {
        try {
          if (!galera) {
            await runTogether(connection, [START_TRANSACTION, ...writes, COMMIT]);
            return true;
          }
          const results = await runTogether(connection, [
            START_TRANSACTION,
            ...writes,
            TRANSACTION_STILL_OPEN,
          ]);
          if (!stillOpen(results[results.length - 1] as Row[])) return false;
          await runTogether(connection, [COMMIT]);
          return true;
        } catch (error) {
          if (isDeadlock(error)) return false; // rolled back whole
          throw error;
        }
      });
      if (committed) return;
      if (attempt >= DEADLOCK_ATTEMPTS) {
        throw new UnavailableError(
          partition.index,
          `partition ${partition.index}: a transaction of the group tables was rolled back ${attempt} times (deadlocks, or Galera aborts); retry`,
        );
      }
    }
  }

  /** The highest id of each shard now. */
  async maxIds(model: CompiledModel, shards: readonly number[]): Promise<Map<number, RowId>> {
    return this.fenced(this.scope, async () => {
      const maxIds = new Map<number, RowId>();
      await Promise.all(
        [...this.layout.byPartition(shards, (shard) => shard)].map(async ([index, list]) => {
          const ids = await this.atPartition(index).run(this.scope, (pool) =>
            readMaxIds(
              directReader(pool),
              list.map((shard) => this.layout.contentTable(model, shard)),
            ),
          );
          list.forEach((shard, i) => maxIds.set(shard, ids[i]!));
        }),
      );
      return maxIds;
    });
  }

  private forShard(shard: number): Partition {
    return this.partitions.forShard(shard);
  }

  private atPartition(index: number): Partition {
    const partition = this.partitions.partitions[index];
    if (!partition) throw new UnavailableError(index, `no partition ${index}`);
    return partition;
  }
}

/** An error text as kept: at most GROUP_ERROR_MAX_BYTES bytes of UTF-8, cut on a character. */
function keptError(error: string): string {
  if (Buffer.byteLength(error) <= GROUP_ERROR_MAX_BYTES) return error;
  let cut = error.slice(0, GROUP_ERROR_MAX_BYTES);
  while (Buffer.byteLength(cut) > GROUP_ERROR_MAX_BYTES - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}

function groupBy<T, K>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = groups.get(key);
    if (list) list.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/**
 * Runs a write of one autocommitted statement again after a deadlock, which rolled it back
 * whole (on Galera also: a conflict with another node's write that the node's own retry of the
 * statement did not get past), up to DEADLOCK_ATTEMPTS times.
 */
async function untilNotDeadlocked<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await write();
    } catch (failure) {
      if (!isDeadlock(failure) || attempt >= DEADLOCK_ATTEMPTS) throw failure;
    }
  }
}
