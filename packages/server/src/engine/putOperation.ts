// Put: the gem's upsert, made safe under concurrency.
//
// Update path (the primary index already maps the values to a record): one merge-append to
// the record's base cell. Create path: under a named lock on the primary values (held on the
// index partition, so concurrent creators of the same values across every server queue up),
// look again, then write base version 0, then the primary-index row (the commit point that
// makes the record reachable), then the secondary-index rows. A record is therefore never
// reachable through any index before its base cell exists; a crash before the primary row
// leaves only an unreachable content row.
import { createHash, randomUUID } from 'node:crypto';
import { type Body, parseBody } from './body.js';
import type { CellWriter } from './cellWriter.js';
import { UnavailableError } from './errors.js';
import { indexValuesFrom, shardOnValue, withoutIndexFields } from './indexValues.js';
import type { StoreLayout } from './layout.js';
import { BASE_CELL, type CompiledModel, type IndexSpec } from './model.js';
import type { PartitionSet } from './partitions.js';
import type { StoredCell } from './sql/contentRows.js';
import { deleteCell } from './sql/contentWrites.js';
import {
  type IndexScalar,
  insertPrimaryRow,
  insertSecondaryRow,
  lookupPrimary,
} from './sql/indexTable.js';
import { duplicateKeyName } from './sqlErrors.js';
import { getNamedLock, releaseNamedLock } from './sql/namedLock.js';
import { PRIMARY_INDEX } from './tableNames.js';
import type { SqlSession } from './mysqlPool.js';

export interface PutResult {
  uuid: string;
  base: StoredCell;
  created: boolean;
}

const CREATE_LOCK_WAIT_SECONDS = 10;

export class PutOperation {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly cells: CellWriter,
  ) {}

  /** Checks a put's values as put() does, without writing anything. */
  check(model: CompiledModel, valuesBytes: Buffer, field: string): void {
    const values = parseBody(valuesBytes, field);
    indexValuesFrom(model.primaryIndex, values, field);
  }

  /** `field` names the values in errors: `values`, or `puts[3].values` in a batch. */
  async put(
    model: CompiledModel,
    valuesBytes: Buffer,
    requestId: string,
    field = 'values',
  ): Promise<PutResult> {
    const values = parseBody(valuesBytes, field);
    const primary = model.primaryIndex;
    const primaryValues = indexValuesFrom(primary, values, field);
    const shard = this.layout.findShard(shardOnValue(primary, primaryValues));
    const partition = this.partitions.forShard(shard);
    const table = this.layout.indexTable(model, PRIMARY_INDEX, shard);

    const existing = await partition.run((pool) =>
      lookupPrimary(pool, table, primary, primaryValues),
    );
    if (existing) return this.update(model, existing, values, requestId);

    // Every index value is checked before anything is written.
    const secondaryRows = secondaryRowsFrom(model, values, field);
    const lockName = createLockName(table, primaryValues);
    return partition.withLockSession(async (connection) => {
      await acquireNamedLock(connection, lockName, partition.index);
      try {
        const winner = await lookupPrimary(connection, table, primary, primaryValues);
        if (winner) return this.update(model, winner, values, requestId);

        const uuid = randomUUID();
        const { cell: base } = await this.cells.append({
          model,
          uuid,
          cell: BASE_CELL,
          content: { mode: 'replace', bytes: valuesBytes },
          expectedRefKey: -1,
          requestId,
          requireRecord: false,
        });
        try {
          await insertPrimaryRow(connection, table, primary, primaryValues, uuid);
        } catch (error) {
          if (duplicateKeyName(error) === undefined) throw error;
          // A writer that does not take the lock (the gem) created the record meanwhile.
          await this.partitions
            .forShard(base.shard)
            .run((pool) => deleteCell(pool, this.layout.contentTable(model, base.shard), base.id));
          const other = await lookupPrimary(connection, table, primary, primaryValues);
          if (!other) throw error;
          return this.update(model, other, values, requestId);
        }
        await this.writeSecondaryRows(model, secondaryRows, uuid);
        return { uuid, base, created: true };
      } finally {
        await releaseNamedLock(connection, lockName);
      }
    });
  }

  private async update(
    model: CompiledModel,
    uuid: string,
    values: Body,
    requestId: string,
  ): Promise<PutResult> {
    const { cell, replayed } = await this.cells.append({
      model,
      uuid,
      cell: BASE_CELL,
      content: { mode: 'merge', patch: withoutIndexFields(model, values) },
      requestId,
      requireRecord: true,
    });
    const created = replayed && cell.refKey === 0;
    if (created) {
      // A retried create: finish what a crash may have interrupted.
      await this.writeSecondaryRows(model, secondaryRowsFrom(model, values), uuid);
    }
    return { uuid, base: cell, created };
  }

  private async writeSecondaryRows(
    model: CompiledModel,
    rows: SecondaryRow[],
    uuid: string,
  ): Promise<void> {
    await Promise.all(
      rows.map(({ index, values }) => {
        const shard = this.layout.findShard(shardOnValue(index, values));
        return this.partitions
          .forShard(shard)
          .run((pool) =>
            insertSecondaryRow(
              pool,
              this.layout.indexTable(model, index.name, shard),
              index,
              values,
              uuid,
            ),
          );
      }),
    );
  }
}

interface SecondaryRow {
  index: IndexSpec;
  values: IndexScalar[];
}

/** The row of each secondary index for a record with these values; every field is required. */
function secondaryRowsFrom(model: CompiledModel, values: Body, field = 'values'): SecondaryRow[] {
  return model.spec.secondaryIndices.map((index) => ({
    index,
    values: indexValuesFrom(index, values, field),
  }));
}

/** MySQL lock names are at most 64 characters: a digest of the table and the values. */
function createLockName(table: string, values: readonly IndexScalar[]): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([table, values.map(String)]))
    .digest('base64url')
    .slice(0, 40);
  return `shameless:${digest}`;
}

async function acquireNamedLock(session: SqlSession, name: string, partition: number) {
  if (!(await getNamedLock(session, name, CREATE_LOCK_WAIT_SECONDS))) {
    throw new UnavailableError(
      partition,
      'timed out waiting for a concurrent create of the same primary values; retry',
    );
  }
}
