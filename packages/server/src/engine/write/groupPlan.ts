// Deciding a group's writes in memory, from what its transaction read under the log locks: the
// version each append writes or why it is refused, and which creates keep their index rows.
// Pure: the shard transaction reads, this decides, the transaction writes what was decided.
import { mergeIntoStored } from '../base/body.js';
import { ConflictError, InvalidArgumentError, NotFoundError } from '../base/errors.js';
import { BASE_CELL } from '../model/model.js';
import type { NewCell, StoredCell } from '../mysql/sql/contentRows.js';
import type { AlreadyExistsError } from '../base/errors.js';
import type { AppendRequest, RefusalError, WriteItem } from './writeItems.js';

/** A cell's latest version, as far as appending after it is concerned. */
export interface LatestVersion {
  readonly refKey: number;
  /** Read only for cells that a merge writes. */
  readonly body: Buffer | undefined;
}

/** What the transaction read from one content table under its log lock. */
export interface TableReads {
  /** The latest version of each cell read, by {@link cellKey}. */
  readonly latest: ReadonlyMap<string, LatestVersion>;
  /** Versions written earlier with the items' request ids, by {@link requestKey}. */
  readonly applied: ReadonlyMap<string, StoredCell>;
  /** Records found to exist (their base cell has a version), of those whose existence was read. */
  readonly existing: ReadonlySet<string>;
}

/** What a create's index rows came to in the transaction. */
export type CreateFate =
  | { readonly kind: 'won' }
  /** Another record holds the primary values. */
  | { readonly kind: 'taken'; readonly owner: string }
  /** Another record holds the values of a unique secondary index (a gem-made table). */
  | { readonly kind: 'collided'; readonly error: AlreadyExistsError };

export type Decision =
  /** Insert `table`'s version at `position`; `replayed`: an earlier item of the group with the same request id wrote it. */
  | {
      readonly kind: 'insert';
      readonly table: string;
      readonly position: number;
      readonly replayed: boolean;
    }
  /** The request id was applied by an earlier transaction: that version. */
  | { readonly kind: 'stored'; readonly cell: StoredCell }
  | { readonly kind: 'refused'; readonly error: RefusalError }
  | { readonly kind: 'taken'; readonly owner: string }
  /** The append's `reachedThrough` row no longer leads to its record. */
  | { readonly kind: 'unreachable' };

export interface GroupPlan {
  /** One per item, in order. */
  readonly decisions: Decision[];
  /** The versions to insert, per content table, in item order. */
  readonly inserts: Map<string, NewCell[]>;
}

// Unambiguous: uuids, cell names and request ids never contain '/'.
export const cellKey = (uuid: string, cell: string) => `${uuid}/${cell}`;
export const requestKey = (uuid: string, cell: string, requestId: string) =>
  `${uuid}/${cell}/${requestId}`;
/** A cell or request key within one content table (table names never contain '/' either). */
const inTable = (table: string, key: string) => `${table}/${key}`;

/**
 * Decides an append given the cell's latest version (undefined when it has none) and whether
 * the record exists (its base cell has a version).
 */
export function planAppend(
  request: AppendRequest,
  latest: LatestVersion | undefined,
  recordExists: boolean,
):
  | { refKey: number; body: Buffer }
  | { refused: NotFoundError | ConflictError | InvalidArgumentError } {
  if (!recordExists) {
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
  if (request.content.mode === 'replace') {
    return { refKey: latestRefKey + 1, body: request.content.bytes };
  }
  const body = mergeIntoStored(latest?.body, request.content.patch);
  const { limit } = request.content;
  if (body.length > limit.bytes) {
    return {
      refused: new InvalidArgumentError(
        limit.field,
        `merged into version ${latestRefKey} it makes a body of ${body.length} bytes; a cell holds at most ${limit.bytes} bytes`,
      ),
    };
  }
  return { refKey: latestRefKey + 1, body };
}

/**
 * Decides every item of a group in order, as if each were sent after the one before: an item
 * whose request id was applied earlier replays that version; one whose request id appeared
 * earlier in the group (for the same cell, and was written) replays that write; any other
 * append is decided by planAppend against the cell's latest version, which the group's own
 * earlier items advance (so their ref_keys chain, and a merge applies onto the body written
 * just before it); one with a firstBody writes it as version 0 of a cell that has none. A
 * create writes base version 0 when its index rows went in. An append in
 * `unreachable` (its primary values lead elsewhere now) writes nothing, unless it replays. A
 * refused item changes nothing for the items after it.
 */
export function planGroup(
  items: readonly WriteItem[],
  tableOf: (item: WriteItem) => string,
  reads: ReadonlyMap<string, TableReads>,
  fates: ReadonlyMap<number, CreateFate>,
  unreachable: ReadonlySet<number>,
  createdAt: Date,
): GroupPlan {
  // What the group itself writes, by table and then cell or request: a group may write the
  // same uuid and cell in two models' tables of its shard, which are two cells.
  const latest = new Map<string, LatestVersion>();
  const inserts = new Map<string, NewCell[]>();
  const insertedBy = new Map<string, { table: string; position: number }>();

  const insert = (table: string, cell: NewCell) => {
    let cells = inserts.get(table);
    if (!cells) inserts.set(table, (cells = []));
    cells.push(cell);
    const at = { table, position: cells.length - 1 };
    insertedBy.set(inTable(table, requestKey(cell.uuid, cell.name, cell.requestId)), at);
    latest.set(inTable(table, cellKey(cell.uuid, cell.name)), {
      refKey: cell.refKey,
      body: cell.body,
    });
    return at;
  };

  const decisions = items.map((item, i): Decision => {
    const table = tableOf(item);
    if (item.kind === 'create') {
      const fate = fates.get(i);
      if (fate?.kind === 'taken') return { kind: 'taken', owner: fate.owner };
      if (fate?.kind === 'collided') return { kind: 'refused', error: fate.error };
      const at = insert(table, {
        uuid: item.uuid,
        name: BASE_CELL,
        refKey: 0,
        body: item.body,
        createdAt,
        requestId: item.requestId,
      });
      return { kind: 'insert', ...at, replayed: false };
    }

    const read = reads.get(table);
    const request = requestKey(item.uuid, item.cell, item.requestId);
    const earlier = read?.applied.get(request);
    if (earlier) return { kind: 'stored', cell: earlier };
    const inGroup = insertedBy.get(inTable(table, request));
    if (inGroup) return { kind: 'insert', ...inGroup, replayed: true };
    if (unreachable.has(i)) return { kind: 'unreachable' };

    const current = (uuid: string, cell: string) =>
      latest.get(inTable(table, cellKey(uuid, cell))) ?? read?.latest.get(cellKey(uuid, cell));
    const version = current(item.uuid, item.cell);
    if (version === undefined && item.firstBody !== undefined) {
      const at = insert(table, {
        uuid: item.uuid,
        name: item.cell,
        refKey: 0,
        body: item.firstBody,
        createdAt,
        requestId: item.requestId,
      });
      return { kind: 'insert', ...at, replayed: false };
    }
    const recordExists =
      version !== undefined ||
      current(item.uuid, BASE_CELL) !== undefined ||
      read?.existing.has(item.uuid) === true;
    const plan = planAppend(item, version, recordExists);
    if ('refused' in plan) return { kind: 'refused', error: plan.refused };
    const at = insert(table, {
      uuid: item.uuid,
      name: item.cell,
      refKey: plan.refKey,
      body: plan.body,
      createdAt,
      requestId: item.requestId,
    });
    return { kind: 'insert', ...at, replayed: false };
  });
  return { decisions, inserts };
}
