// Errors the model layer raises by itself, before any call is sent. Errors of calls are the
// transport's typed errors (NotFoundError, ConflictError, ...).

import { InvalidArgumentError } from '../transport/index.js';

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
