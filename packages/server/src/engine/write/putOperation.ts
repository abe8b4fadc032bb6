// Put: the gem's upsert, made safe under concurrency.
//
// Which record the values lead to comes from the primary-key cache when this server has seen
// them (primaryKeyCache.ts); otherwise the put either looks them up or tries the create at once,
// whichever the model's recent puts say is cheaper (putRoute.ts).
//
// Update path (the primary index maps the values to a record): one merge-append to the
// record's base cell, written only if the primary-index row, read again under the log lock,
// still leads to that record (when it lives on the record's partition, as every record this
// server creates does). Create path: a new uuid is drawn until its content shard lives on the
// partition of the primary-index row, so that base version 0, the primary-index row and the
// secondary-index rows on that partition commit in one transaction (shared with other writes
// by group commit). A record is therefore never reachable through those indices without its
// base cell, and a crash leaves nothing half-written. When another creator wins the primary
// values first, the transaction keeps nothing of this one and the put updates the winner.
//
// Secondary-index rows on other partitions (an index sharded on another field than the
// primary one) are written after the commit, whether or not the caller is still waiting: a
// commit is finished, not abandoned at the call's deadline. A crash before them, or their
// partition failing, leaves the record missing from those indices until the put is retried
// with its request id, which writes them.
import { type Body, parseBody } from '../base/body.js';
import type { BodyLimits } from '../base/bodyRules.js';
import type { CallScope } from '../base/callScope.js';
import type { CellWriter } from './cellWriter.js';
import { InvalidArgumentError, NotFoundError, UnavailableError } from '../base/errors.js';
import { requireCellSize } from '../base/limits.js';
import type { CreateShards } from '../schema/createShards.js';
import type { IndexColumns } from '../model/indexColumns.js';
import type { KnownTables } from '../schema/knownTables.js';
import { IndexValues, shardOnValue, withoutIndexFields } from '../model/indexValues.js';
import type { StoreLayout } from '../model/layout.js';
import { BASE_CELL, type CompiledModel } from '../model/model.js';
import type { PartitionSet } from '../mysql/partitions.js';
import type { PrimaryKeyCache } from '../read/primaryKeyCache.js';
import type { PrimaryLookups } from '../read/primaryLookups.js';
import { PutRoutes } from './putRoute.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';
import {
  type PrimaryLookup,
  deleteIndexRows,
  indexRowHolders,
  insertIndexRows,
  primaryKeyOf,
} from '../mysql/sql/indexTable.js';
import { COMMIT, START_TRANSACTION, runTogether } from '../mysql/sql/statement.js';
import { PRIMARY_INDEX } from '../model/tableNames.js';
import { type IndexRowWrite, uniqueIndexCollision } from './writeItems.js';

export interface PutResult {
  uuid: string;
  base: StoredCell;
  created: boolean;
}

/**
 * A put finds its record again when the one it was to update is no longer reached through its
 * values (a stale cache entry, or a create that a gem-made unique index refused after the
 * lookup saw it): a few times at most.
 */
const ATTEMPTS = 4;

/** The primary-index row a put looks up: its values, shard and table, and its cache key. */
interface PrimaryRow extends PrimaryLookup {
  readonly shard: number;
  readonly key: string;
}

/**
 * What a put's errors name its values once it is prepared: a put of a batch refused then is
 * refused in its own result, where `puts[3].values` would name another request's field.
 */
const VALUES = 'values';

/** A put whose values were checked and read (see {@link PutOperation.prepare}). */
export interface PreparedPut {
  readonly model: CompiledModel;
  /** The values as sent: base version 0 of a create. */
  readonly bytes: Buffer;
  readonly values: Body;
  /** The values of its index fields, checked. */
  readonly indexValues: IndexValues;
  readonly primary: PrimaryRow;
  /** The largest base body an update may merge the values into. */
  readonly maxCellBytes: number;
}

/** A record's row in an index, and the partition that index row lives on. */
type PlacedRow = IndexRowWrite & { readonly partition: number };

/** How a put found the record its values lead to, when it did not create one. */
type Found =
  | { readonly kind: 'created'; readonly result: PutResult }
  | { readonly kind: 'existing'; readonly owner: string };

export class PutOperation {
  private readonly routes = new PutRoutes();

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly cells: CellWriter,
    private readonly lookups: PrimaryLookups,
    private readonly known: PrimaryKeyCache,
    private readonly indexColumns: IndexColumns,
    private readonly tables: KnownTables,
    private readonly createShards: CreateShards,
  ) {}

  /**
   * A put's values checked and read, before anything is written. Every index field they hold
   * is checked against its type here, whether the put then creates or updates: an update
   * stores no index value, but bad input is refused all the same. `field` names the values in
   * the errors found here: `values`, or `puts[3].values` in a batch; later ones say `values`.
   */
  prepare(
    model: CompiledModel,
    valuesBytes: Buffer,
    field: string,
    maxCellBytes: number,
    bodyLimits: BodyLimits,
  ): PreparedPut {
    requireCellSize(valuesBytes, field, maxCellBytes);
    const values = parseBody(valuesBytes, field, bodyLimits);
    const indexValues = new IndexValues(values);
    const primary = this.primaryRow(model, indexValues, field);
    indexValues.requireTypes(model.secondaryFields, field);
    return { model, bytes: valuesBytes, values, indexValues, primary, maxCellBytes };
  }

  /** Writes the put, for the call of `scope`. */
  async put(scope: CallScope, put: PreparedPut, requestId: string): Promise<PutResult> {
    const { key } = put.primary;
    for (let attempt = 1; ; attempt++) {
      let owner = this.known.get(key);
      if (owner === undefined) {
        const found = await this.findOrCreate(scope, put, requestId);
        if (found.kind === 'created') return found.result;
        owner = found.owner;
      }
      const updated = await this.update(scope, put, owner, requestId);
      if (updated) return updated;
      this.known.delete(key);
      if (attempt >= ATTEMPTS) {
        throw new UnavailableError(
          this.layout.partitionOf(put.primary.shard),
          'the record these primary values lead to keeps changing; retry',
        );
      }
    }
  }

  /**
   * For values the cache does not hold: the record created for them, or the one that holds
   * them. Remembers which record they lead to.
   */
  private async findOrCreate(
    scope: CallScope,
    put: PreparedPut,
    requestId: string,
  ): Promise<Found> {
    const { model, indexValues, primary } = put;
    // Every index value is checked before anything is written (its type already by prepare).
    // Values that lack a field of a secondary index, or that an index table the store did not
    // create cannot hold, cannot create a record but may update one: they are looked up first,
    // and refused only if no record holds them.
    let rows: PlacedRow[] | undefined;
    let invalid: InvalidArgumentError | undefined;
    try {
      const placed = this.indexRowsOf(model, indexValues, VALUES);
      // The columns of index tables on a partition that was down when the model was first
      // served are read first: UNAVAILABLE when they still cannot be.
      const reading = this.tables.readingFor(model, placed);
      if (reading) await reading;
      this.requireFit(placed, VALUES);
      rows = placed;
    } catch (error) {
      if (!(error instanceof InvalidArgumentError)) throw error;
      invalid = error;
    }
    const lookedUp = rows === undefined || this.routes.firstStep(model.name) === 'lookup';
    if (lookedUp) {
      const owner = await this.lookups.find(scope, this.layout.partitionOf(primary.shard), primary);
      this.routes.observe(model.name, owner === undefined);
      if (owner !== undefined) {
        this.remember(primary, owner);
        return { kind: 'existing', owner };
      }
    }
    if (rows === undefined) throw invalid;
    const created = await this.create(scope, model, put.bytes, requestId, rows);
    if (!lookedUp) this.routes.observe(model.name, created.kind === 'created');
    this.remember(primary, created.kind === 'created' ? created.result.uuid : created.owner);
    return created.kind === 'created' ? created : { kind: 'existing', owner: created.owner };
  }

  /**
   * Caches where the values lead, when the record's content lives on the partition of its
   * primary-index row: only there can an update check the row under its lock.
   */
  private remember(primary: PrimaryRow, uuid: string): void {
    if (this.layout.contentBeside(uuid, primary.shard)) this.known.set(primary.key, uuid);
  }

  private primaryRow(model: CompiledModel, values: IndexValues, field: string): PrimaryRow {
    const index = model.primaryIndex;
    const rowValues = values.of(index, field);
    const shard = this.layout.findShard(shardOnValue(index, rowValues));
    const table = this.layout.indexTable(model, PRIMARY_INDEX, shard);
    return {
      index,
      values: rowValues,
      shard,
      table,
      key: primaryKeyOf({ table, values: rowValues }),
    };
  }

  /** Refuses rows whose values their index tables cannot hold (IndexColumns). */
  private requireFit(rows: readonly PlacedRow[], field: string): void {
    for (const row of rows) this.indexColumns.requireFit(row.table, row.index, row.values, field);
  }

  /** The record's row in every index, the primary one first, with the partition of each. */
  private indexRowsOf(model: CompiledModel, values: IndexValues, field: string): PlacedRow[] {
    return [model.primaryIndex, ...model.spec.secondaryIndices].map((index) => {
      const rowValues = values.of(index, field);
      const shard = this.layout.findShard(shardOnValue(index, rowValues));
      const table = this.layout.indexTable(model, index.name, shard);
      return {
        index,
        table,
        values: rowValues,
        primary: index === model.primaryIndex,
        partition: this.layout.partitionOf(shard),
      };
    });
  }

  private async create(
    scope: CallScope,
    model: CompiledModel,
    body: Buffer,
    requestId: string,
    rows: readonly PlacedRow[],
  ): Promise<{ kind: 'created'; result: PutResult } | { kind: 'taken'; owner: string }> {
    const home = rows[0]!.partition;
    const uuid = this.createShards.uuidOn(home);
    const outcome = await this.cells.create(scope, {
      model,
      uuid,
      body,
      requestId,
      indexRows: rows.filter((row) => row.partition === home),
    });
    if (outcome.status === 'taken') return { kind: 'taken', owner: outcome.owner };
    if (outcome.status === 'refused') throw outcome.error;
    await this.writeRemoteRows(scope, model.name, uuid, rows, home);
    return { kind: 'created', result: { uuid, base: outcome.cell, created: true } };
  }

  /** Undefined when the record does not exist, or the values no longer lead to it. */
  private async update(
    scope: CallScope,
    put: PreparedPut,
    uuid: string,
    requestId: string,
  ): Promise<PutResult | undefined> {
    const { model, values, maxCellBytes, primary } = put;
    let appended;
    try {
      appended = await this.cells.appendIfReached(scope, {
        model,
        uuid,
        cell: BASE_CELL,
        content: {
          mode: 'merge',
          patch: withoutIndexFields(model, values),
          limit: { bytes: maxCellBytes, field: VALUES },
        },
        requestId,
        firstBody: put.bytes,
        ...(this.layout.contentBeside(uuid, primary.shard) ? { reachedThrough: primary } : {}),
      });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
    if (!appended) return undefined;
    // Version 0 through the update path: a retried create, or the first body of a record whose
    // primary-index row had no base cell. Either way the record's content is new.
    const created = appended.cell.refKey === 0;
    if (created) {
      // Finish what a crash may have interrupted: the rows on other partitions.
      const rows = this.indexRowsOf(model, put.indexValues, VALUES);
      this.requireFit(rows, VALUES);
      await this.writeRemoteRows(
        scope,
        model.name,
        uuid,
        rows,
        this.layout.partitionOf(appended.cell.shard),
      );
    }
    return { uuid, base: appended.cell, created };
  }

  /**
   * Writes a new record's rows in the indices that live on other partitions than `home`, where
   * its create committed the others. When a gem-made unique index holds one of them for another
   * record, the record is taken out of every index again (its base cell stays, unreachable, in
   * the shard log) and the put is refused.
   */
  private writeRemoteRows(
    callScope: CallScope,
    model: string,
    uuid: string,
    rows: readonly PlacedRow[],
    home: number,
  ): Promise<void> {
    const remote = rows.filter((row) => row.partition !== home);
    if (remote.length === 0) return Promise.resolve();
    // The record is committed, so these are the server's statements, not the caller's: bounded
    // by the statement timeout, not by a deadline that may pass between the commit and them and
    // leave the record out of these indices for a caller that does not retry. Their commits are
    // still the caller's, for its session token: a read of these indices must wait for them.
    const scope = { deadline: Infinity, commits: callScope.commits };
    return this.completeRemoteRows(scope, model, uuid, rows, remote);
  }

  private async completeRemoteRows(
    scope: CallScope,
    model: string,
    uuid: string,
    rows: readonly PlacedRow[],
    remote: readonly PlacedRow[],
  ): Promise<void> {
    const collisions = await Promise.all(
      remote.map(async (row) => {
        const found = await this.partitions.at(row.partition).run(scope, async (pool) => {
          const [, present] = (await runTogether(pool, [
            insertIndexRows(row.table, row.index, [{ values: row.values, uuid }]),
            indexRowHolders([{ ...row, uuid, primary: false }]),
          ])) as unknown[][];
          return (present ?? []).length > 0;
        });
        return found ? undefined : row;
      }),
    );
    const collided = collisions.find((row) => row !== undefined);
    if (!collided) return;
    this.known.delete(primaryKeyOf(rows[0]!));
    const byPartition = new Map<number, PlacedRow[]>();
    for (const row of rows) {
      const list = byPartition.get(row.partition);
      if (list) list.push(row);
      else byPartition.set(row.partition, [row]);
    }
    await Promise.all(
      [...byPartition].map(([partition, rows]) =>
        this.partitions
          .at(partition)
          .withConnection(scope, (connection) =>
            runTogether(connection, [
              START_TRANSACTION,
              ...rows.map((row) =>
                deleteIndexRows(row.table, row.index, [{ values: row.values, uuid }]),
              ),
              COMMIT,
            ]),
          ),
      ),
    );
    throw uniqueIndexCollision(model, collided);
  }
}
