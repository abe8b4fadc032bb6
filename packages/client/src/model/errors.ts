// Errors the model layer raises by itself, before any call is sent. Errors of calls are the
// transport's typed errors (NotFoundError, ConflictError, ...).

import { InternalError, InvalidArgumentError } from '../transport/index.js';

/**
 * An index field was about to be written into a cell. Index values never change (they are
 * the record's keys in the index tables), so `set`, `update` and friends refuse them before
 * any call, as the gem does; the server would refuse them with INVALID_ARGUMENT too, which
 * is why this is an {@link InvalidArgumentError}.
 */
export class ReadonlyFieldError extends InvalidArgumentError {
  override name = 'ReadonlyFieldError';
  /** The field that was written. */
  readonly field: string;
  /** The index it belongs to (the first that holds it, primary first). */
  readonly index: string;
  /** The model. */
  readonly model: string;

  constructor(model: string, field: string, index: string) {
    super(`${field} cannot be modified: it is part of the ${index} index of model ${model}`);
    this.model = model;
    this.field = field;
    this.index = index;
  }
}

/**
 * A cell's content was read (or set) before the cell was read from the store. Cells other
 * than `base` are read on demand: `await record.meta.load()` (or `record.load()`), or ask
 * `where` for them with its `cells` option. (`update` needs no load.)
 */
export class CellNotLoadedError extends Error {
  override name = 'CellNotLoadedError';
  /** The cell's name. */
  readonly cell: string;
  /** The record's uuid. */
  readonly uuid: string;

  constructor(model: string, uuid: string, cell: string) {
    super(
      `cell ${cell} of ${model} ${uuid} has not been read yet: ` +
        `await record.cell('${cell}').load() first (update() needs no read)`,
    );
    this.cell = cell;
    this.uuid = uuid;
  }
}

/** The cell a body was stored in, as {@link UnreadableBodyError} names it. */
export interface BodySource {
  readonly model: string;
  readonly uuid: string;
  readonly cell: string;
  /** Its version, when known. */
  readonly refKey?: number;
}

/**
 * A cell's stored body cannot be read: it is not a MessagePack map, or it is nested deeper
 * than the SDK reads (1000 levels; a server refuses anything past its `--max-body-depth`, so
 * only a body written around the server, by the gem or by SQL, can be). Thrown when that
 * cell's body is first used (`cell.body`, a field, `asJSON`, ...), never by the read that
 * fetched it: the other cells of the same page, stream or shard are read as usual. A consumer
 * group member parks such a cell at once if its handler lets this error out (see
 * `Model.consume`), since no later delivery could read it either.
 *
 * An {@link InternalError}, as the SDK raised for such a body before it had a type of its own.
 */
export class UnreadableBodyError extends InternalError {
  override name = 'UnreadableBodyError';
  /** The model of the cell. */
  readonly model: string;
  /** The record's uuid. */
  readonly uuid: string;
  /** The cell's name. */
  readonly cell: string;
  /** The version whose body it is, when known. */
  readonly refKey: number | undefined;
  /** Why it cannot be read. */
  readonly reason: string;

  constructor(source: BodySource, reason: string, cause?: unknown) {
    const version = source.refKey === undefined ? '' : `@${source.refKey}`;
    super(
      `cell ${source.cell}${version} of ${source.model} ${source.uuid}: the body cannot be read: ${reason}`,
      { cause },
    );
    this.model = source.model;
    this.uuid = source.uuid;
    this.cell = source.cell;
    this.refKey = source.refKey;
    this.reason = reason;
  }
}
