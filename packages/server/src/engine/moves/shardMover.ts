// The mover: moves shards from the partition serving them to another, while the store serves
// (SPEC §7, issue 54; the design in notes/moves-design.md). Per shard: create its tables on the
// target and capture its index changes on the source, copy, catch up, verify, cut over (the
// shard's writes held for milliseconds while the map's next version is published and the
// source tables are renamed away: the fence), and later finish (drop the frozen source) or,
// before the cut-over, abort (drop the copy). Each step starts from what the shard's row in
// `<ns>_shameless_shard_moves` says and is idempotent, so a mover killed anywhere resumes when
// the same command runs again.
import { UNBOUNDED } from '../base/callScope.js';
import { EngineError, FailedPreconditionError, InvalidArgumentError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/logger.js';
import type { PartitionMap } from '../model/partitionMap.js';
import type { Row, ScopedPool, SqlConnection, SqlSession } from '../mysql/mysqlPool.js';
import type { Partition } from '../mysql/partitions.js';
import { isDeadlock, isLockContention } from '../mysql/sqlErrors.js';
import {
  type MovePhase,
  type MoveRow,
  type MoveUpdate,
  type TableShape,
  UNLOCK_TABLES,
  DATABASE_CLOCK,
  databaseClockOf,
  bindKey,
  createChangeTriggersSql,
  createMoveChangesTableSql,
  createShardMovesTableSql,
  createTableLikeSql,
  deleteChangesOf,
  dropChangeTriggersSql,
  dropTableSql,
  existingTables,
  fenceGroupShards,
  insertMove,
  insertRows,
  lockHolder,
  lockTablesSql,
  lockWaitSql,
  misplacedTriggers,
  dropTriggerSql,
  moveLockName,
  pendingChangeKeys,
  readActiveMoves,
  readGroupRows,
  readMove,
  readTableShapes,
  releaseLock,
  renameTableSql,
  renameTablesSql,
  tryLock,
  updateMove,
} from '../mysql/sql/shardMoves.js';
import { type Statement, runTogether, statement } from '../mysql/sql/statement.js';
import { claimStoreRecord, insertLogLocks } from '../mysql/sql/storeTables.js';
import { inspectTables } from '../mysql/sql/schemaInspection.js';
import { applySchemaChanges } from '../schema/applySchemaChanges.js';
import { bookkeepingChanges, bookkeepingTables } from '../schema/schemaPlan.js';
import { storeTableName } from '../model/tableNames.js';
import type { MoveHost } from './moveHost.js';
import {
  ShardMoveDifferenceError,
  ShardMoveInterruptedError,
  failedOn,
  markingFailures,
} from './moveErrors.js';
import { movedName, shardTables } from './shardTables.js';
import {
  type LastRowsPlan,
  type TableCursor,
  applyChanges,
  copyRows,
  lastPass,
  maxId,
  writeLastRows,
} from './tableCopy.js';
import { compareTable } from './tableVerify.js';

export type { MovePhase, MoveRow } from '../mysql/sql/shardMoves.js';

export interface MoveRequest {
  /** The shards to move; each must be served now by a partition other than the target. */
  readonly shards: readonly number[];
  /**
   * Where to: a MySQL URL (a new partition, which takes the next id) or the location of a
   * partition the map lists, exactly as it lists it.
   */
  readonly to: string;
}

/** What the mover did last for one shard: one event per step and per chunk copied. */
export interface MoveProgress {
  readonly moveId: number;
  readonly shard: number;
  /** The partition ids the shard moves from and to. */
  readonly source: number;
  readonly target: number;
  readonly phase: MovePhase;
  /** What just happened: `created`, `copied`, `caught_up`, `verified`, `locked`, `published`, … */
  readonly step: string;
  /** Rows this move wrote on the target so far (content and index rows, changes applied). */
  readonly rowsCopied: number;
  /** Cells the target is behind: the source's highest id less the copy's, over the shard's content tables. */
  readonly lag: number;
  /** How long the shard's writes were held at its cut-over, once it is done. */
  readonly holdMs?: number;
}

export interface MoverOptions {
  logger?: Logger;
  /**
   * Told of each step; awaited, so a slow listener slows the move (never while writes are held
   * but for the `locked` step: tests pause there to hold a write; the server's listener only
   * queues the event). An error thrown here stops the mover where it
   * is, as a kill would (tests use it so).
   */
  onProgress?: (progress: MoveProgress) => void | Promise<void>;
  /** A catch-up pass that copies fewer rows than this ends the catch-up; 500 by default. */
  catchUpRows?: number;
  /** The most catch-up passes before the verify; 20 by default. */
  maxCatchUpPasses?: number;
  /**
   * How long the cut-over's LOCK TABLES waits for transactions in flight on the shard's tables
   * (writes queue behind it meanwhile) before it lets go and tries again; 2 s by default.
   */
  lockWaitSeconds?: number;
  /** Tables of a shard copied and verified at once; 4 by default. */
  tablesInFlight?: number;
}

/** Where a shard's move stands. */
export interface MoveSummary {
  readonly moveId: number;
  readonly shard: number;
  readonly source: number;
  readonly target: number;
  readonly phase: MovePhase;
  readonly rowsCopied: number;
  readonly holdMs?: number;
}

/** How many times a cut-over is tried when its LOCK TABLES waits too long or is a deadlock's victim. */
const CUT_OVER_ATTEMPTS = 3;
/** How long a mover waits for the movers' lock before it says another mover is running. */
const LOCK_WAIT_SECONDS = 2;
/** The most pending changes of a table read to explain a difference the verify found. */
const PENDING_KEYS_READ = 100_000;
const ACTIVE: readonly MovePhase[] = ['copying', 'catching_up', 'verified'];

/** A shard's move as it runs: its row, its tables on both sides, and its copy's cursors. */
interface ShardRun {
  row: MoveRow;
  readonly source: Partition;
  /** Statements on the source partition's pool. */
  readonly sourceSession: SqlSession;
  readonly target: ScopedPool;
  /** The shard's tables with their shapes on the source (at their names there now). */
  content: TableShape[];
  index: TableShape[];
  readonly changesTable: string;
  readonly cursors: Record<string, TableCursor>;
  rowsCopied: number;
  /** Captured index changes applied on the target so far. */
  changesApplied: number;
  lag: number;
  /** What is under way, and on which partition: for the error a failure becomes. */
  step: string;
  at: number;
}

export class ShardMover {
  private readonly logger: Logger;
  /**
   * The last cut-over's hold (`holdMs`: from LOCK TABLES asked to the map published) and where
   * its time went (ms from LOCK TABLES sent, on the mover's clock: `lockedMs` when it was granted
   * with the last rows read, `writtenMs` when the target committed them and `renamedMs` when the
   * renames answered (sent at once), `publishedMs`), for benches and tests.
   */
  lastHold: Record<string, number> | undefined;

  constructor(
    private readonly host: MoveHost,
    private readonly options: MoverOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
  }

  private get movesTable(): string {
    return storeTableName(this.host.layout.namespace, 'shard_moves');
  }

  private get changesTable(): string {
    return storeTableName(this.host.layout.namespace, 'move_changes');
  }

  private get home(): Partition {
    return this.host.source(0);
  }

  /** Moves not finished or aborted, by shard. */
  async activeMoves(): Promise<MoveRow[]> {
    return this.home.run(UNBOUNDED, async (pool) => {
      if ((await existingTables(pool, [this.movesTable])).size === 0) return [];
      return readActiveMoves(pool, this.movesTable);
    });
  }

  /**
   * Moves each shard to `to` through its cut-over (or resumes the moves of a command run
   * before). Shards go one at a time; a shard already cut over is left as it is. Throws, with
   * the shard's state kept, on the first failure: running the same request again resumes.
   */
  async move(request: MoveRequest): Promise<MoveSummary[]> {
    const map = this.host.currentMap();
    const shards = [...new Set(request.shards)].sort((a, b) => a - b);
    if (shards.length === 0) throw new InvalidArgumentError('shards', 'name at least one shard');
    for (const shard of shards) {
      if (!(Number.isInteger(shard) && shard >= 0 && shard < map.shardsCount)) {
        throw new InvalidArgumentError(
          'shards',
          `shard ${shard} is not in the store (0-${map.shardsCount - 1})`,
        );
      }
    }
    return this.withMoverLock(async () => {
      const summaries: MoveSummary[] = [];
      for (const shard of shards) {
        const row = await this.rowFor(shard, request.to);
        if (!row) continue;
        summaries.push(summary(await this.runShard(row)));
      }
      return summaries;
    });
  }

  /**
   * Ends the moves that are cut over (of the shards given, else all): checks that every row of
   * each frozen source table is on the target, equal, then drops the source tables and their
   * triggers.
   */
  async finish(shards?: readonly number[]): Promise<MoveSummary[]> {
    return this.withMoverLock(async () => {
      const active = await readActiveMoves(this.home.primaryReads(UNBOUNDED), this.movesTable);
      const reversed = new Set(active.map((row) => row.reverseOf).filter((id) => id !== undefined));
      // A move being taken back (and the move taking it back) ends with its abort, not here.
      const rows = active.filter(
        (row) =>
          row.phase === 'cut_over' &&
          row.reverseOf === undefined &&
          !reversed.has(row.moveId) &&
          (!shards || shards.includes(row.shard)),
      );
      const done: MoveSummary[] = [];
      for (const row of rows) done.push(summary(await this.finishShard(row)));
      return done;
    });
  }

  /**
   * Puts back the moves not finished (of the shards given, else all). Before its cut-over: the
   * target's copy dropped, the source's triggers removed. After it: the reverse move, with the
   * same steps (the shard's writes held for milliseconds again at its cut-over), then the
   * frozen tables on both sides dropped. Answers the moves aborted.
   */
  async abort(shards?: readonly number[]): Promise<MoveSummary[]> {
    return this.withMoverLock(async () => {
      const active = await readActiveMoves(this.home.primaryReads(UNBOUNDED), this.movesTable);
      const rows = active.filter(
        (row) => row.reverseOf === undefined && (!shards || shards.includes(row.shard)),
      );
      const aborted: MoveSummary[] = [];
      for (const row of rows) {
        const done =
          row.phase === 'cut_over'
            ? await this.reverseShard(
                row,
                active.find((other) => other.reverseOf === row.moveId),
              )
            : await this.abortShard(row);
        aborted.push(summary(done));
      }
      return aborted;
    });
  }

  // ---- the lock: one mover per store ----

  private async withMoverLock<T>(work: () => Promise<T>): Promise<T> {
    const home = this.home;
    const name = moveLockName(home.location.database, this.host.layout.namespace);
    const connection = await home.run(UNBOUNDED, (pool) => pool.getConnection());
    let healthy = false;
    try {
      if (!(await tryLock(connection, name, LOCK_WAIT_SECONDS))) {
        const holder = await lockHolder(connection, name);
        throw new FailedPreconditionError(
          `another mover of this store (namespace ${JSON.stringify(this.host.layout.namespace)}) is running` +
            `${holder === undefined ? '' : ` (connection ${holder} on partition 0)`}: wait for it to end, or stop it ` +
            'and run this command again (its state is kept; a stopped mover resumes where it was)',
        );
      }
      await home.run(UNBOUNDED, (pool) =>
        runTogether(pool, [statement(createShardMovesTableSql(this.movesTable))]),
      );
      const answer = await work();
      await releaseLock(connection, name);
      healthy = true;
      return answer;
    } catch (error) {
      // The moves' own rows, on the home partition: what is not a shard's step failed there.
      if (error instanceof EngineError) throw error;
      throw new ShardMoveInterruptedError(
        undefined,
        0,
        "reading or writing the moves' rows",
        error,
      );
    } finally {
      // A failure may have left the session anywhere: closed, it lets go of the lock, as a
      // killed mover's would.
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  // ---- rows ----

  /** The shard's active move (resumed), a new one, or undefined when the shard is there already. */
  private async rowFor(shard: number, to: string): Promise<MoveRow | undefined> {
    const home = this.home;
    const active = (await readActiveMoves(home.primaryReads(UNBOUNDED), this.movesTable)).filter(
      (row) => row.shard === shard,
    );
    const reverse = active.find((row) => row.reverseOf !== undefined);
    if (reverse) {
      throw new FailedPreconditionError(
        `shard ${shard} is being moved back (the abort of move ${reverse.reverseOf} is under way): ` +
          'run the abort again to complete it, then move the shard anew',
      );
    }
    const existing = active[0];
    if (existing) {
      if (existing.targetLocation !== to) {
        throw new FailedPreconditionError(
          `shard ${shard} is being moved to partition ${existing.target} (move ${existing.moveId}), not to the location given: ` +
            'run that move again with its own --to, or abort it first',
        );
      }
      return existing;
    }
    const map = this.host.currentMap();
    const source = map.partitionOf(shard);
    const target = await this.targetId(map, to);
    if (source === target) return undefined;
    const moveId = await home.run(UNBOUNDED, (pool) =>
      insertMove(pool, this.movesTable, { shard, source, target, targetLocation: to }),
    );
    this.logger.info('shard move started', { shard, moveId, source, target });
    return (await home.run(UNBOUNDED, (pool) => readMove(pool, this.movesTable, moveId)))!;
  }

  /** The id of the partition at `to`: one the map lists, or the next, shared by moves to it. */
  private async targetId(map: PartitionMap, to: string): Promise<number> {
    const listed = map.locations.indexOf(to);
    if (listed >= 0) return listed;
    const active = await readActiveMoves(this.home.primaryReads(UNBOUNDED), this.movesTable);
    const same = active.find((row) => row.targetLocation === to);
    if (same) return same.target;
    const taken = active.filter((row) => row.target >= map.partitionCount);
    if (taken.length > 0) {
      throw new FailedPreconditionError(
        `a move to another new partition (${taken[0]!.target}) is under way: finish its cut-over before moving shards to a third place`,
      );
    }
    return map.partitionCount;
  }

  private async update(run: ShardRun, update: MoveUpdate): Promise<void> {
    await this.home.run(UNBOUNDED, (pool) =>
      updateMove(pool, this.movesTable, run.row.moveId, update),
    );
    run.row = { ...run.row, ...stateOf(update) };
  }

  private async tell(run: ShardRun, step: string, holdMs?: number): Promise<void> {
    await this.options.onProgress?.({
      moveId: run.row.moveId,
      shard: run.row.shard,
      source: run.row.source,
      target: run.row.target,
      phase: run.row.phase,
      step,
      rowsCopied: run.rowsCopied,
      lag: run.lag,
      ...(holdMs === undefined ? {} : { holdMs }),
    });
  }

  // ---- one shard ----

  private async runShard(row: MoveRow): Promise<MoveRow> {
    if (row.phase === 'cut_over') return row;
    const run = await this.prepare(row);
    try {
      if (run.row.phase === 'copying') {
        await this.create(run);
        await this.copy(run);
        await this.update(run, {
          phase: 'catching_up',
          contentCursor: JSON.stringify(run.cursors),
        });
      }
      if (run.row.phase === 'catching_up') {
        await this.catchUp(run);
        await this.verify(run);
        await this.update(run, { phase: 'verified', error: null });
        await this.tell(run, 'verified');
      }
      if (run.row.phase === 'verified') await this.cutOver(run);
      return run.row;
    } catch (error) {
      throw await this.failed(run, error);
    }
  }

  /** The error a failure becomes, kept in the shard's row (when the home partition takes it). */
  private async failed(run: ShardRun, error: unknown): Promise<unknown> {
    const told =
      error instanceof EngineError
        ? error
        : new ShardMoveInterruptedError(run.row.shard, failedOn(error) ?? run.at, run.step, error);
    this.logger.warn('shard move stopped', {
      shard: run.row.shard,
      step: run.step,
      reason: told.message,
    });
    await this.update(run, { error: told.message.slice(0, 8000) }).catch(() => {});
    return told;
  }

  private async prepare(row: MoveRow): Promise<ShardRun> {
    try {
      return await this.prepareRun(row);
    } catch (error) {
      if (error instanceof EngineError) throw error;
      throw new ShardMoveInterruptedError(row.shard, row.source, 'reading the shard tables', error);
    }
  }

  private async prepareRun(row: MoveRow): Promise<ShardRun> {
    const source = this.host.source(row.source);
    const sourceSession: SqlSession = {
      query: (sql, values) => source.run(UNBOUNDED, (pool) => pool.query(sql, values)),
    };
    const targetPool = await this.host.target(row.targetLocation).catch((error: unknown) => {
      throw new ShardMoveInterruptedError(row.shard, row.target, 'connecting to the target', error);
    });
    const target = markingFailures(targetPool, row.target);
    const run: ShardRun = {
      row,
      source,
      sourceSession,
      target,
      content: [],
      index: [],
      changesTable: this.changesTable,
      cursors: JSON.parse(row.contentCursor) as Record<string, TableCursor>,
      rowsCopied: row.rowsCopied,
      changesApplied: row.changesApplied,
      lag: 0,
      step: 'reading the shard tables',
      at: row.source,
    };
    if (ACTIVE.includes(row.phase)) {
      const names = shardTables(this.host.layout, this.host.models(), row.shard);
      const shapes = await readTableShapes(sourceSession, [...names.content, ...names.index]);
      const missing = [...names.content, ...names.index].filter((name) => !shapes.has(name));
      // Every table present: before the cut-over. None: a cut-over renamed them, and its row
      // was not updated before the mover stopped (cutOver finds the moved names).
      if (missing.length > 0 && missing.length < names.content.length + names.index.length) {
        const moved = await existingTables(
          sourceSession,
          missing.map((name) => movedName(name, row.moveId)),
        );
        if (moved.size !== missing.length) {
          throw new FailedPreconditionError(
            `shard ${row.shard}: table(s) ${missing.join(', ')} are missing on partition ${row.source}: ` +
              'a model defined during the move, or a table dropped by hand; abort the move and start it again',
          );
        }
      }
      for (const name of names.content) {
        const shape = shapes.get(name);
        if (!shape) continue;
        if (shape.key.length !== 1 || shape.key[0]!.name !== 'id') {
          throw new FailedPreconditionError(
            `shard ${row.shard}: content table ${name} is not keyed by id`,
          );
        }
        run.content.push(shape);
      }
      for (const name of names.index) {
        const shape = shapes.get(name);
        if (!shape) continue;
        if (shape.key.length === 0) {
          throw new FailedPreconditionError(
            `shard ${row.shard}: index table ${name} has neither a primary nor a unique key: its rows cannot be told apart to copy them`,
          );
        }
        run.index.push(shape);
      }
    }
    return run;
  }

  /** Runs a step's statements, remembering what and where for the error a failure becomes. */
  private at(run: ShardRun, partition: number, step: string): void {
    run.at = partition;
    run.step = step;
  }

  /**
   * On the target: the store's bookkeeping tables and its record (as partition `target`), the
   * shard's tables as they are on the source, their log-lock rows. On the source: the change
   * table and each index table's triggers. All idempotent.
   */
  private async create(run: ShardRun): Promise<void> {
    const { layout } = this.host;
    const { row, target } = run;
    this.at(run, row.target, 'creating the bookkeeping tables on the target');
    const existing = await inspectTables(target, bookkeepingTables(layout));
    await applySchemaChanges(
      target,
      bookkeepingChanges(layout, row.target, existing),
      this.logger,
      {
        concurrency: 1,
        fields: { partition: row.target },
      },
    );
    const map = this.host.currentMap();
    const stored = await claimStoreRecord(target, layout.storeTable, {
      namespace: layout.namespace,
      shardsCount: layout.shardsCount,
      partitionCount: Math.max(map.partitionCount, row.target + 1),
      partitionIndex: row.target,
    });
    if (
      stored.namespace !== layout.namespace ||
      stored.shardsCount !== layout.shardsCount ||
      stored.partitionIndex !== row.target
    ) {
      throw new FailedPreconditionError(
        `shard ${row.shard}: the target database holds another store's data (namespace ${JSON.stringify(stored.namespace)}, ` +
          `${stored.shardsCount} shards, partition ${stored.partitionIndex}); move to an empty database or to partition ${stored.partitionIndex} of that store`,
      );
    }
    this.at(run, row.target, 'creating the shard tables on the target');
    for (const shape of [...run.content, ...run.index]) {
      const ddl = await createTableLikeSql(run.sourceSession, shape.name);
      await target.query(ddl);
    }
    await insertLogLocks(
      target,
      layout.logLocksTable,
      run.content.map((shape) => shape.name),
    );
    this.at(run, row.source, 'installing the change capture on the source');
    await run.sourceSession.query(createMoveChangesTableSql(run.changesTable));
    for (const name of await misplacedTriggers(
      run.sourceSession,
      run.index.map((shape) => shape.name),
    )) {
      await run.sourceSession.query(dropTriggerSql(name));
    }
    for (const shape of run.index) {
      for (const sql of createChangeTriggersSql(shape, run.changesTable)) {
        await run.sourceSession.query(sql);
      }
    }
    await this.tell(run, 'created');
  }

  /** The target's highest id of each content table: where its copy stands (a prefix of the source's). */
  private async contentCursors(run: ShardRun): Promise<void> {
    this.at(run, run.row.target, 'reading the copy cursors on the target');
    await Promise.all(
      run.content.map(async (shape) => {
        const id = await maxId(run.target, shape);
        run.cursors[shape.name] = { ...run.cursors[shape.name], key: [id.toString()] };
      }),
    );
  }

  private async measureLag(run: ShardRun, session: SqlSession = run.sourceSession): Promise<void> {
    let lag = 0n;
    for (const shape of run.content) {
      const high = await maxId(session, shape);
      const copied = BigInt(run.cursors[shape.name]?.key?.[0] ?? '0');
      if (high > copied) lag += high - copied;
    }
    run.lag = Number(lag);
  }

  /** Content by id, then index rows by key; the row updated after each chunk. */
  private async copy(run: ShardRun): Promise<void> {
    await this.contentCursors(run);
    await this.measureLag(run);
    const onChunk = async (rows: number) => {
      run.rowsCopied += rows;
      run.lag = Math.max(0, run.lag - rows);
      await this.update(run, {
        contentCursor: JSON.stringify(run.cursors),
        rowsCopied: run.rowsCopied,
      });
      await this.tell(run, 'copying');
    };
    this.at(run, run.row.source, 'copying content');
    await inFlight(run.content, this.options.tablesInFlight ?? 4, async (shape) => {
      const cursor = run.cursors[shape.name]!;
      await copyRows(run.sourceSession, run.target, shape, cursor, 'insert', onChunk);
      cursor.done = true;
    });
    this.at(run, run.row.source, 'copying index rows');
    await inFlight(run.index, this.options.tablesInFlight ?? 4, async (shape) => {
      const cursor = (run.cursors[shape.name] ??= {});
      if (cursor.done) return;
      await copyRows(run.sourceSession, run.target, shape, cursor, 'ignore', onChunk);
      cursor.done = true;
    });
    await this.measureLag(run);
    await this.tell(run, 'copied');
  }

  /** One pass: content written since the cursor, and the index changes captured. */
  private async catchUpPass(
    run: ShardRun,
    session: SqlSession,
    readCursors = true,
  ): Promise<number> {
    if (readCursors) await this.contentCursors(run);
    this.at(run, run.row.source, 'catching up');
    let copied = 0;
    for (const shape of run.content) {
      copied += await copyRows(
        session,
        run.target,
        shape,
        run.cursors[shape.name]!,
        'insert',
        () => {},
      );
    }
    const applied = await applyChanges(
      session,
      run.target,
      run.changesTable,
      new Map(run.index.map((shape) => [shape.name, shape])),
    );
    run.rowsCopied += copied + applied;
    run.changesApplied += applied;
    return copied + applied;
  }

  /** What the cut-over's last pass copies from: the content after the cursors, the changes. */
  private lastRowsPlan(run: ShardRun): LastRowsPlan {
    return {
      content: run.content.map((shape) => ({ shape, cursor: run.cursors[shape.name]! })),
      changesTable: run.changesTable,
      indexShapes: new Map(run.index.map((shape) => [shape.name, shape])),
    };
  }

  private async catchUp(run: ShardRun): Promise<void> {
    const small = this.options.catchUpRows ?? 500;
    const passes = this.options.maxCatchUpPasses ?? 20;
    for (let pass = 0; pass < passes; pass++) {
      const copied = await this.catchUpPass(run, run.sourceSession);
      await this.measureLag(run);
      await this.update(run, {
        contentCursor: JSON.stringify(run.cursors),
        rowsCopied: run.rowsCopied,
        changesApplied: run.changesApplied,
      });
      await this.tell(run, 'catching_up');
      if (copied < small) break;
    }
    await this.tell(run, 'caught_up');
  }

  /**
   * Every table, source against target: content up to the copy's cursor, index tables whole
   * (a chunk that differs is compared again after the changes captured meanwhile are applied).
   */
  private async verify(run: ShardRun): Promise<void> {
    await this.contentCursors(run);
    this.at(run, run.row.source, 'verifying');
    const apply = async () => {
      await applyChanges(
        run.sourceSession,
        run.target,
        run.changesTable,
        new Map(run.index.map((shape) => [shape.name, shape])),
      );
    };
    const tables = [
      ...run.content.map((shape) => ({
        shape,
        upTo: bindKey(shape, run.cursors[shape.name]!.key!),
      })),
      ...run.index.map((shape) => ({ shape, upTo: undefined })),
    ];
    await inFlight(tables, this.options.tablesInFlight ?? 4, async ({ shape, upTo }) => {
      const difference = await compareTable(run.sourceSession, run.target, shape, {
        upTo,
        rechecks: upTo ? 0 : 3,
        beforeRecheck: apply,
        ...(upTo ? {} : { pendingKeys: () => this.pendingKeys(run, shape.name) }),
      });
      if (difference) {
        throw new ShardMoveDifferenceError(
          run.row.shard,
          shape.name,
          difference.key,
          difference.detail,
        );
      }
    });
  }

  /** The keys of the table's captured changes not applied yet, as JSON of their text. */
  private async pendingKeys(run: ShardRun, table: string): Promise<Set<string>> {
    const [rows = []] = (await runTogether(run.sourceSession, [
      pendingChangeKeys(run.changesTable, table, PENDING_KEYS_READ),
    ])) as Row[][];
    return new Set(rows.map((row) => JSON.stringify(JSON.parse(String(row.key_json)))));
  }

  /**
   * Holds the shard's writes (LOCK TABLES … WRITE on one source connection: writers wait),
   * copies what they wrote last, moves the consumer groups' rows, renames the source tables
   * away (a write waiting then fails with ER_NO_SUCH_TABLE and goes to the new partition once
   * it finds the new map), publishes the map's next version.
   */
  private async cutOver(run: ShardRun): Promise<void> {
    const { row } = run;
    // The store's map as partition 0 has it now, not as this server last read it: a mover that
    // stopped may have published it.
    const published = (await this.latestMap()).partitionOf(row.shard) === row.target;
    // A cut-over stopped between its renames and its publish left tables at their moved names,
    // the target perhaps without the last rows (they are written while the renames run): with
    // the map still naming the source, they go back to their names, the target catches up
    // again (the writes refused meanwhile come back at once) and the cut-over runs again.
    this.at(run, row.source, 'putting back the tables a stopped cut-over renamed');
    if (!published && (await this.renameBack(run))) await this.catchUp(run);
    const originals = [...run.content, ...run.index];
    // The consumer-group tables, when the store has them: their shapes read before the lock.
    const groupShapes = await readTableShapes(run.sourceSession, [
      this.host.layout.groupShardsTable,
      this.host.layout.groupCellsTable,
    ]);
    // Published, the cut-over had moved them before (in the target's transaction that came
    // before the publish), and members may have moved the target's cursors on since.
    const groupTables = published
      ? []
      : [...groupShapes.values()].sort((a, b) => a.name.localeCompare(b.name));
    for (const { name } of groupTables) {
      this.at(run, row.target, 'creating the consumer-group tables on the target');
      await run.target.query(await createTableLikeSql(run.sourceSession, name));
    }
    // What the publish needs besides its inserts (a pool on a new partition, the map table on
    // each partition) made ready now, so that the hold has only the inserts to wait for.
    if (!published && this.host.preparePublish) {
      this.at(run, row.target, 'preparing the partition map');
      await this.host.preparePublish(this.nextMap(this.host.currentMap(), row));
    }
    for (let attempt = 1; ; attempt++) {
      try {
        // Most of the work done while writes still flow, so that little is left under the lock:
        // this pass last before it, after everything else the cut-over prepares.
        await this.catchUpPass(run, run.sourceSession);
        await this.cutOverOnce(run, originals, groupTables);
        return;
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause ?? error;
        if (attempt >= CUT_OVER_ATTEMPTS || !(isDeadlock(cause) || isLockContention(cause)))
          throw error;
        this.logger.warn('cut-over could not lock the shard tables; trying again', {
          shard: row.shard,
          attempt,
        });
      }
    }
  }

  /**
   * The shard's tables found at their moved names put back at their own (one RENAME TABLE, all
   * or none), and read again for the run; false when none was moved. Only while the map names
   * the source: the shard is not served anywhere meanwhile (its writes fail "being moved"), and
   * is served at the source again after. Leaves the run's step as it was: after a failed
   * cut-over, the failure told is the cut-over's.
   */
  private async renameBack(run: ShardRun): Promise<boolean> {
    const { row } = run;
    const names = shardTables(this.host.layout, this.host.models(), row.shard);
    const all = [...names.content, ...names.index];
    const moved = await existingTables(
      run.sourceSession,
      all.map((name) => movedName(name, row.moveId)),
    );
    const back = all.filter((name) => moved.has(movedName(name, row.moveId)));
    if (back.length === 0) return false;
    await run.sourceSession.query(
      renameTablesSql(back.map((name) => [movedName(name, row.moveId), name])),
    );
    this.logger.info('tables of a stopped cut-over put back', { shard: row.shard, tables: back });
    const again = await this.prepareRun(row);
    run.content = again.content;
    run.index = again.index;
    return true;
  }

  /** The store's map as partition 0 has it now (as this server last read it, for a host that cannot say). */
  private async latestMap(): Promise<PartitionMap> {
    return (await this.host.latestMap?.()) ?? this.host.currentMap();
  }

  /** `map` with the row's shard served by its target (a new partition takes the next id). */
  private nextMap(map: PartitionMap, row: MoveRow): PartitionMap {
    return map.moved(
      [row.shard],
      row.target,
      row.target === map.partitionCount ? row.targetLocation : undefined,
    );
  }

  private async cutOverOnce(
    run: ShardRun,
    originals: readonly TableShape[],
    groupTables: readonly TableShape[],
  ): Promise<void> {
    const { row } = run;
    const names = originals.map((shape) => shape.name);
    this.at(run, row.source, 'locking the shard tables');
    const connection: SqlConnection = await run.source.run(UNBOUNDED, (pool) =>
      pool.getConnection(),
    );
    let released = false;
    const release = (destroy: boolean) => {
      if (released) return;
      released = true;
      // Closed, the connection lets go of its table locks, as a killed mover's would.
      if (destroy) connection.destroy();
      else connection.release();
    };
    await connection.query(lockWaitSql(this.options.lockWaitSeconds ?? 2)).catch((error) => {
      release(true);
      throw error;
    });
    // Where the hold's time goes, for the log: waiting for transactions in flight on the
    // tables with the last rows read, the target's commit and the renames (at once), publishing.
    const marks: Record<string, number> = {};
    const started = performance.now();
    const mark = (name: string) => (marks[name] = Math.round(performance.now() - started));
    let holdMs = 0;
    let renamesSent = false;
    try {
      // The lock and the last pass's reads in one round trip: under the lock, every statement
      // on these tables goes through this connection, and the cursors are where the pass before
      // the lock left them (the target took nothing since).
      const pass = lastPass(this.lastRowsPlan(run));
      const [lockAsked, , ...read] = (await runTogether(connection, [
        statement(DATABASE_CLOCK),
        statement(
          lockTablesSql([...names, run.changesTable, ...groupTables.map((shape) => shape.name)]),
        ),
        ...pass.reads,
        ...groupTables.map((shape) => readGroupRows(shape, row.shard)),
      ])) as Row[][];
      mark('lockedMs');
      await this.tell(run, 'locked');
      this.at(run, row.source, 'catching up');
      const groups = this.groupRowsMoved(run, groupTables, read.slice(pass.reads.length));
      const last = pass.rows(read.slice(0, pass.reads.length), groups.onTarget);
      if (!last) {
        // Much written since the pass before the lock: copied in chunks under it, then the
        // groups' rows, before the renames.
        await this.catchUpPass(run, connection, false);
        if (groups.onTarget.length > 0) await runTogether(run.target, groups.onTarget);
      }
      // The renames are sent while the target commits the last rows: from the renames no server
      // can write the shard here, whatever map it holds (a statement waiting for the lock fails
      // at once with ER_NO_SUCH_TABLE); the group cursors are fenced before (a member still
      // holding the shard here fails its next commit), and their tables stay locked until the
      // map is published, so that no member routing by the old map leases them again. A write
      // turned away reloads the map and, finding none newer yet, waits a moment (the engine's
      // fence) and finds the next version. The map is published only once both are done: a
      // cut-over stopped in between leaves the shard refusing writes ("being moved") until the
      // mover runs again and puts the tables back (renameBack) — never writable in two places,
      // never published without its last rows.
      this.at(run, row.source, 'renaming the source tables away');
      let renamedAt = 0;
      renamesSent = true;
      const renames = runTogether(connection, [
        ...groups.fences,
        ...names.map((name) => statement(renameTableSql(name, movedName(name, row.moveId)))),
        statement(DATABASE_CLOCK),
      ]).then((rows) => {
        renamedAt = performance.now();
        mark('renamedMs');
        return rows as Row[][];
      });
      const written = (last ? writeLastRows(run.target, last) : Promise.resolve()).then(() => {
        mark('writtenMs');
      });
      const [renamed, wrote] = await Promise.allSettled([renames, written]);
      if (wrote.status === 'rejected') {
        this.at(run, row.target, 'writing the last rows on the target');
        throw wrote.reason;
      }
      if (renamed.status === 'rejected') throw renamed.reason;
      if (last) {
        run.rowsCopied += last.copied + last.applied;
        run.changesApplied += last.applied;
      }
      this.at(run, row.source, 'publishing the partition map');
      const map = this.host.currentMap();
      // Published once partition 0 has the version (where a rival publish is refused, and
      // where a server reading the map finds it): the other partitions' copies need not hold
      // the writes, and are waited for once they flow again.
      let everywhere: Promise<void> | undefined;
      if (map.partitionOf(row.shard) !== row.target) {
        if (this.host.publishMapFirst) {
          ({ everywhere } = await this.host.publishMapFirst(this.nextMap(map, row)));
        } else {
          await this.host.publishMap(this.nextMap(map, row));
        }
      }
      mark('publishedMs');
      // Held from LOCK TABLES asked to the renames done, on the source's clock (what the mover
      // hears later when its process is busy is not the writes' hold), then until the map is
      // published, on the mover's: the shard's writes go nowhere before.
      const renamedAtSource = renamed.value[renamed.value.length - 1]!;
      holdMs = Math.round(
        (databaseClockOf(renamedAtSource) - databaseClockOf(lockAsked!)) * 1000 +
          (performance.now() - renamedAt),
      );
      // Let go once the map is published: the shard's own tables are renamed away, so this
      // holds only the consumer groups' tables and the changes table, not the shard's writes.
      this.at(run, row.source, 'letting go of the lock (the map is published)');
      await runTogether(connection, [statement(UNLOCK_TABLES)]);
      release(false);
      // The changes applied, deleted now that the writes flow: their tables are frozen, so what
      // is left (a failure here, a mover stopped before) only waits for the finish, which
      // deletes the shard's.
      if (last && last.settle.length > 0) {
        await runTogether(run.sourceSession, last.settle).catch((failure: unknown) =>
          this.logger.warn('could not delete the changes a cut-over applied; the finish will', {
            shard: row.shard,
            reason: (failure as Error).message,
          }),
        );
      }
      // A copy that failed fails the cut-over before it is recorded, as a publish failing part
      // way did: run again, the mover publishes the same version again.
      await everywhere;
      // Told once the writes flow again: a listener never lengthens the hold.
      await this.tell(run, 'published');
    } catch (error) {
      release(true);
      // Renamed but not published (the target's commit or the renames failed): the tables go
      // back at once, so that the shard is served where it was until the cut-over runs again.
      // Only once the store's map is read and still names the source: a publish may have
      // reached partition 0 before it failed.
      if (renamesSent) {
        await this.latestMap()
          .then((map) => (map.partitionOf(row.shard) === row.target ? false : this.renameBack(run)))
          .catch((failure: unknown) =>
            this.logger.warn('could not put back the tables of a failed cut-over', {
              shard: row.shard,
              reason: (failure as Error).message,
            }),
          );
      }
      throw error;
    }
    const movedNames: Record<string, string> = {};
    for (const name of shardTables(this.host.layout, this.host.models(), row.shard).content.concat(
      shardTables(this.host.layout, this.host.models(), row.shard).index,
    )) {
      movedNames[name] = movedName(name, row.moveId);
    }
    await this.update(run, {
      phase: 'cut_over',
      holdMs,
      movedNames: JSON.stringify(movedNames),
      contentCursor: JSON.stringify(run.cursors),
      rowsCopied: run.rowsCopied,
      changesApplied: run.changesApplied,
      error: null,
    });
    this.logger.info('shard cut over', { shard: row.shard, moveId: row.moveId, holdMs, ...marks });
    this.lastHold = { holdMs, ...marks };
    await this.tell(run, 'cut_over', holdMs);
  }

  /**
   * The shard's consumer-group rows for the target, from their reads under the lock: cursors
   * with the next epoch and no owner (the shard is leased anew there), failed and parked cells
   * as they are, to go in the last pass's transaction; and the statements that fence the cursors
   * on the source the same way (so that a member still holding the shard there fails), for the
   * locked connection's next round trip.
   */
  private groupRowsMoved(
    run: ShardRun,
    groupTables: readonly TableShape[],
    read: readonly Row[][],
  ): { onTarget: Statement[]; fences: Statement[] } {
    const { layout } = this.host;
    const onTarget: Statement[] = [];
    const fences: Statement[] = [];
    groupTables.forEach((shape, i) => {
      const rows = read[i] ?? [];
      if (rows.length === 0) return;
      if (shape.name === layout.groupShardsTable) {
        const moved = rows.map((row) => ({
          ...row,
          epoch: BigInt(String(row.epoch)) + 1n,
          owner: null,
        }));
        // REPLACE: rows an earlier attempt of this cut-over wrote are written again.
        onTarget.push(insertRows(shape, moved, 'replace'));
        fences.push(fenceGroupShards(shape.name, run.row.shard));
      } else {
        onTarget.push(insertRows(shape, rows, 'replace'));
      }
    });
    return { onTarget, fences };
  }

  // ---- finish and abort ----

  private async finishShard(row: MoveRow): Promise<MoveRow> {
    const run = await this.prepare(row);
    try {
      const movedNames = JSON.parse(row.movedNames ?? '{}') as Record<string, string>;
      const pairs = Object.entries(movedNames);
      this.at(run, row.source, 'verifying the frozen source against the target');
      const shapes = await readTableShapes(
        run.sourceSession,
        pairs.map(([, moved]) => moved),
      );
      const present = pairs.filter(([, moved]) => shapes.has(moved));
      await inFlight(present, this.options.tablesInFlight ?? 4, async ([original, moved]) => {
        const shape = shapes.get(moved)!;
        const difference = await compareTable(
          run.sourceSession,
          run.target,
          shape,
          { sourceSubset: true },
          original,
        );
        if (difference) {
          throw new ShardMoveDifferenceError(
            row.shard,
            original,
            difference.key,
            `after the cut-over: ${difference.detail}`,
            'finish',
          );
        }
      });
      this.at(run, row.source, 'dropping the frozen source tables');
      await this.dropFrozen(run, row, true);
      await this.update(run, { phase: 'finished', error: null });
      await this.tell(run, 'finished');
      return run.row;
    } catch (error) {
      throw await this.failed(run, error);
    }
  }

  /**
   * Takes back a move that is cut over: the reverse move (target to source) through its own
   * cut-over, its finish (the target's frozen tables checked against the source's new ones,
   * then dropped), then the first move's frozen source tables dropped; that move is aborted.
   */
  private async reverseShard(row: MoveRow, reverse: MoveRow | undefined): Promise<MoveRow> {
    let back = reverse;
    if (!back) {
      const map = this.host.currentMap();
      const location = map.locations[row.source];
      if (location === undefined) {
        throw new FailedPreconditionError(
          `shard ${row.shard}: partition ${row.source}, where it came from, is not in the map any more`,
        );
      }
      const moveId = await this.home.run(UNBOUNDED, (pool) =>
        insertMove(pool, this.movesTable, {
          shard: row.shard,
          source: row.target,
          target: row.source,
          targetLocation: location,
          reverseOf: row.moveId,
        }),
      );
      this.logger.info('shard move taken back', {
        shard: row.shard,
        moveId,
        reverseOf: row.moveId,
      });
      back = (await this.home.run(UNBOUNDED, (pool) => readMove(pool, this.movesTable, moveId)))!;
    }
    if (back.phase !== 'cut_over' && back.phase !== 'finished') back = await this.runShard(back);
    if (back.phase === 'cut_over') back = await this.finishShard(back);
    // The first move's frozen source: nothing reads it now (the reverse copied from the target).
    const run = await this.prepare(row);
    try {
      this.at(run, row.source, 'dropping the frozen source tables');
      // Its log-lock rows stay: the shard is served there again, by the tables the reverse made.
      await this.dropFrozen(run, row, false);
      await this.update(run, { phase: 'aborted', error: null });
      await this.tell(run, 'aborted');
      return run.row;
    } catch (error) {
      throw await this.failed(run, error);
    }
  }

  /**
   * Drops a move's source tables renamed away at its cut-over, their triggers, their captured
   * changes, and (`logLocks`) the log-lock rows of its content tables.
   */
  private async dropFrozen(run: ShardRun, row: MoveRow, logLocks: boolean): Promise<void> {
    const pairs = Object.entries(JSON.parse(row.movedNames ?? '{}') as Record<string, string>);
    for (const [original, moved] of pairs) {
      for (const sql of dropChangeTriggersSql(original)) await run.sourceSession.query(sql);
      await run.sourceSession.query(dropTableSql(moved));
    }
    if ((await existingTables(run.sourceSession, [this.changesTable])).size > 0) {
      await runTogether(run.sourceSession, [
        deleteChangesOf(
          this.changesTable,
          pairs.map(([original]) => original),
        ),
      ]);
    }
    const content = shardTables(this.host.layout, this.host.models(), row.shard).content;
    if (logLocks) {
      await runTogether(run.sourceSession, [
        statement(`DELETE FROM \`${this.host.layout.logLocksTable}\` WHERE \`table_name\` IN (?)`, [
          content,
        ]),
      ]);
    }
  }

  private async abortShard(row: MoveRow): Promise<MoveRow> {
    const run = await this.prepare(row);
    try {
      if (this.host.currentMap().partitionOf(row.shard) === row.target) {
        throw new FailedPreconditionError(
          `shard ${row.shard}: its cut-over was under way when the mover stopped (the map names the target already): ` +
            'run the move again to complete the cut-over, then move the shard back if you must',
        );
      }
      const names = shardTables(this.host.layout, this.host.models(), row.shard);
      const all = [...names.content, ...names.index];
      this.at(run, row.source, 'removing the change capture on the source');
      for (const name of names.index) {
        for (const sql of dropChangeTriggersSql(name)) await run.sourceSession.query(sql);
      }
      if ((await existingTables(run.sourceSession, [this.changesTable])).size > 0) {
        await runTogether(run.sourceSession, [deleteChangesOf(this.changesTable, all)]);
      }
      this.at(run, row.target, 'dropping the copy on the target');
      for (const name of all) await run.target.query(dropTableSql(name));
      if ((await existingTables(run.target, [this.host.layout.logLocksTable])).size > 0) {
        await runTogether(run.target, [
          statement(
            `DELETE FROM \`${this.host.layout.logLocksTable}\` WHERE \`table_name\` IN (?)`,
            [names.content],
          ),
        ]);
      }
      await this.update(run, { phase: 'aborted', error: null });
      await this.tell(run, 'aborted');
      return run.row;
    } catch (error) {
      throw await this.failed(run, error);
    }
  }
}

/** Where a shard's move stands, from its row. */
export function summary(row: MoveRow): MoveSummary {
  return {
    moveId: row.moveId,
    shard: row.shard,
    source: row.source,
    target: row.target,
    phase: row.phase,
    rowsCopied: row.rowsCopied,
    ...(row.holdMs === undefined ? {} : { holdMs: row.holdMs }),
  };
}

/** The fields of a row an update changes, as the row holds them. */
function stateOf(update: MoveUpdate): Partial<MoveRow> {
  const state: { -readonly [K in keyof MoveRow]?: MoveRow[K] } = {};
  if (update.phase !== undefined) state.phase = update.phase;
  if (update.contentCursor !== undefined) state.contentCursor = update.contentCursor;
  if (update.changesApplied !== undefined) state.changesApplied = update.changesApplied;
  if (update.rowsCopied !== undefined) state.rowsCopied = update.rowsCopied;
  if (update.holdMs !== undefined) state.holdMs = update.holdMs;
  if (update.movedNames !== undefined) state.movedNames = update.movedNames;
  if (update.error !== undefined) state.error = update.error ?? undefined;
  return state;
}

/** Runs `work` on every item, at most `limit` at once; the first failure is thrown once all end. */
async function inFlight<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length && errors.length === 0) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        errors.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}
