// Appending a version to a cell: the one write path of every content row.
//
// Each append is a transaction on the cell's content shard that first locks the shard's
// log-lock row. That one lock gives three guarantees at once:
// - versions are contiguous: the latest ref_key read under the lock is still the latest at
//   insert, so concurrent writers get 0..n-1 with no gap and no duplicate;
// - writes are idempotent: a request id already applied is seen under the lock and answered
//   with the version it created;
// - the shard log is gap-free: ids are allocated and committed in the same order, so a reader
//   of `id > cursor` never skips a row that commits later.
// The cost is that writes to one shard commit one at a time (two round trips each).
import { type Body, decodeStoredBody, encodeBody, mergeBodies } from './body.js';
import { ConflictError, NotFoundError, UnavailableError } from './errors.js';
import type { StoreLayout } from './layout.js';
import type { LogNotifier } from './logNotifier.js';
import { BASE_CELL, type CompiledModel } from './model.js';
import type { PartitionSet } from './partitions.js';
import { type StoredCell, toStoredCell } from './sql/contentRows.js';
import { beginCellWrite, insertCellAndCommit, rollback } from './sql/contentWrites.js';
import { duplicateKeyName } from './sqlErrors.js';

export type CellContent = { mode: 'replace'; bytes: Buffer } | { mode: 'merge'; patch: Body };

export interface AppendRequest {
  model: CompiledModel;
  uuid: string;
  cell: string;
  content: CellContent;
  /** The version the caller last saw (-1: none); the append fails with ConflictError otherwise. */
  expectedRefKey?: number;
  requestId: string;
  /** False only for the first base version of a record being created. */
  requireRecord: boolean;
}

export interface AppendResult {
  cell: StoredCell;
  /** True when the request id had been applied before: `cell` is that earlier version. */
  replayed: boolean;
}

/** A cell's latest version, as far as appending after it is concerned. */
export interface LatestVersion {
  refKey: number;
  /** Needed only to merge into. */
  body: Buffer | undefined;
}

/** The version an append writes, or why it is refused. */
export type AppendPlan =
  { refKey: number; body: Buffer } | { refused: NotFoundError | ConflictError };

/**
 * Decides an append given what was read under the shard's log lock: the cell's latest version
 * (undefined when it has none) and whether the record's base cell has a version. The single
 * and the batch write paths both decide here, so that they behave alike.
 */
export function planAppend(
  request: AppendRequest,
  latest: LatestVersion | undefined,
  baseExists: boolean,
): AppendPlan {
  const recordExists = request.cell === BASE_CELL ? latest !== undefined : baseExists;
  if (request.requireRecord && !recordExists) {
    return {
      refused: new NotFoundError(
        `record ${request.uuid} does not exist in model ${request.model.name}`,
      ),
    };
  }
  const latestRefKey = latest?.refKey ?? -1;
  if (request.expectedRefKey !== undefined && request.expectedRefKey !== latestRefKey) {
    return {
      refused: new ConflictError(
        `cell ${request.cell} of ${request.uuid} is at version ${latestRefKey}, not ${request.expectedRefKey}: re-read it and write again`,
      ),
    };
  }
  const body =
    request.content.mode === 'replace'
      ? request.content.bytes
      : encodeBody(mergeBodies(decodeStoredBody(latest?.body), request.content.patch));
  return { refKey: latestRefKey + 1, body };
}

export class CellWriter {
  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly notifier: LogNotifier,
  ) {}

  async append(request: AppendRequest): Promise<AppendResult> {
    const shard = this.layout.contentShard(request.uuid);
    const partition = this.partitions.forShard(shard);
    const table = this.layout.contentTable(request.model, shard);
    const result = await partition.withConnection(async (connection) => {
      let open = true;
      try {
        const state = await beginCellWrite(
          connection,
          table,
          this.layout.logLocksTable,
          request.uuid,
          request.cell,
          request.requestId,
        );
        if (state.replayed) {
          await rollback(connection);
          open = false;
          return { cell: toStoredCell(state.replayed, shard), replayed: true };
        }
        const plan = planAppend(
          request,
          state.latest && {
            refKey: Number(state.latest.ref_key),
            body: state.latest.body as Buffer | undefined,
          },
          state.recordExists,
        );
        if ('refused' in plan) throw plan.refused;
        const { refKey, body } = plan;
        const { id, createdAt } = await insertCellAndCommit(
          connection,
          table,
          {
            uuid: request.uuid,
            name: request.cell,
            refKey,
            body,
            createdAt: new Date(),
            requestId: request.requestId,
          },
          this.layout.createdAt,
        );
        open = false;
        return {
          cell: { id, shard, uuid: request.uuid, name: request.cell, refKey, createdAt, body },
          replayed: false,
        };
      } catch (error) {
        if (open) await rollback(connection).catch(() => connection.destroy());
        if (duplicateKeyName(error) !== undefined) {
          // Only a writer that bypasses the log lock (the gem, a manual INSERT) can race us.
          throw new UnavailableError(
            partition.index,
            `a concurrent write outside Shameless touched cell ${request.cell} of ${request.uuid}; retry`,
            { cause: error },
          );
        }
        throw error;
      }
    });
    if (!result.replayed) this.notifier.notify(table);
    return result;
  }
}
