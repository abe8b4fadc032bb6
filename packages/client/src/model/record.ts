// A record: a UUID and its cells. Field access, writes, versions and JSON delegate to the base
// cell, as in the gem; `reload` covers every cell read so far.

import { Cell, type CellJSON, type UpdateOptions } from './cell.js';
import type { CallOptions, WriteOptions } from './callOptions.js';
import type { KnownVersions, ModelHandle, ModelPort } from './modelPort.js';
import {
  BASE_CELL,
  type BodyKey,
  type BodyValue,
  type CellBody,
  type CellName,
  type CellValues,
  type DeclaredCellName,
  type ModelSchema,
  type WritableKey,
} from './schema.js';

/**
 * A record of a model: its UUID and a {@link Cell} per cell of the model (`base` and the
 * declared ones, also reachable as named properties: `rate.meta`). The field, write and
 * version methods act on the base cell, as in the gem.
 *
 * The type to use in signatures is {@link RecordOf} (this class plus the named cell
 * accessors), or `InferRecord<typeof Rate>`.
 */
export class ModelRecord<S extends ModelSchema = ModelSchema> {
  readonly #context: ModelPort<S>;
  readonly #uuid: string;
  readonly #cells = new Map<string, Cell<S>>();

  /** @internal Records are made by their model (put, where, find, record, the log). */
  constructor(context: ModelPort<S>, uuid: string, known: KnownVersions = new Map()) {
    this.#context = context;
    this.#uuid = uuid;
    // The declared cells, then any other cell the store knows (e.g. one declared by another
    // client) that arrived with the record, such as a cell read from the log. Two loops rather
    // than a set of both: a batch read makes a record for each of its cells.
    for (const name of context.schema.cells) this.#addCell(name, known);
    for (const name of known.keys()) if (!this.#cells.has(name)) this.#addCell(name, known);
  }

  #addCell(name: string, known: KnownVersions): void {
    const version = known.has(name) ? (known.get(name) ?? null) : undefined;
    this.#cells.set(
      name,
      new Cell<S>(this.#context, this as unknown as RecordOf<S>, name as CellName<S>, version),
    );
  }

  /** The record's UUID (36 lowercase characters with hyphens). */
  get uuid(): string {
    return this.#uuid;
  }

  /** The model the record belongs to. */
  get model(): ModelHandle<S> {
    return this.#context.model;
  }

  /** The base cell, which every record has: `put`, `where` and the field methods use it. */
  get base(): Cell<S, BaseBody<S>> {
    return this.cell(BASE_CELL);
  }

  /** Every cell of the record: `base`, then the declared cells. */
  get cells(): Cell<S>[] {
    return [...this.#cells.values()];
  }

  /** The cell called `name` (`record.cell('meta')` is `record.meta`). */
  cell<C extends CellName<S>>(name: C): Cell<S, CellBody<S, C>> {
    const cell = this.#cells.get(name) as Cell<S, CellBody<S, C>> | undefined;
    if (cell === undefined) {
      throw new RangeError(
        `model ${this.#context.schema.name} has no cell ${String(name)}; its cells are ` +
          this.#context.schema.cells.join(', '),
      );
    }
    return cell;
  }

  /** The base cell's value of `key` (see {@link Cell.get}). */
  get<K extends BodyKey<BaseBody<S>>>(key: K): BodyValue<BaseBody<S>, K> {
    return this.base.get(key);
  }

  /** Whether the base body has `key` (see {@link Cell.has}). */
  has(key: string): boolean {
    return this.base.has(key);
  }

  /** The base cell's value of `key` when present (even `false`/`null`), else `fallback`. */
  fetch(key: string, fallback: unknown): unknown {
    return this.base.fetch(key, fallback);
  }

  /**
   * Sets `key` in the base body (see {@link Cell.set}); throws a ReadonlyFieldError for an
   * index field, before any call.
   */
  set<K extends BodyKey<BaseBody<S>>>(
    key: K & WritableKey<S, K>,
    value: BodyValue<BaseBody<S>, K>,
  ): this {
    this.base.set<K>(key, value);
    return this;
  }

  /** The base body, unsaved edits included. */
  get body(): Readonly<BaseBody<S>> {
    return this.base.body;
  }

  /** Whether the base cell has a stored version: whether the record exists. */
  get present(): boolean {
    return this.base.present;
  }

  /** The base cell's version. */
  get refKey(): number | undefined {
    return this.base.refKey;
  }

  /** When the base cell's version was written. */
  get createdAt(): Date | undefined {
    return this.base.createdAt;
  }

  /** Writes the base cell (see {@link Cell.save}). */
  async save(options?: WriteOptions): Promise<this> {
    await this.base.save(options);
    return this;
  }

  /** Shallow-merges `values` into the base cell and writes it (see {@link Cell.update}). */
  async update(
    values: CellValues<S> & Partial<BaseBody<S>>,
    options?: UpdateOptions,
  ): Promise<this> {
    await this.base.update(values, options);
    return this;
  }

  /** The base cell's previous version (see {@link Cell.previous}). */
  previous(options?: CallOptions): Promise<Cell<S> | undefined> {
    return this.base.previous(options);
  }

  /**
   * Re-reads the latest version of the base cell and of every other cell read so far (one
   * GetCell each, in parallel), dropping unsaved edits. Cells never read stay unread.
   */
  async reload(options?: CallOptions): Promise<this> {
    const cells = this.cells.filter((cell) => cell.name === BASE_CELL || cell.loaded);
    await Promise.all(cells.map((cell) => cell.reload(options)));
    return this;
  }

  /**
   * Reads the named cells (every cell when none is named) that have not been read yet, in
   * parallel. `await rate.load('meta')` then `rate.meta.get(...)`.
   */
  async load(...names: CellName<S>[]): Promise<this> {
    const cells = names.length === 0 ? this.cells : names.map((name) => this.cell(name));
    await Promise.all(cells.map((cell) => cell.load()));
    return this;
  }

  /** The base cell's {@link Cell.asJSON}. */
  asJSON(): CellJSON {
    return this.base.asJSON();
  }

  /** `JSON.stringify(record)` gives the base cell's JSON, as the gem's `as_json`. */
  toJSON(): CellJSON {
    return this.asJSON();
  }
}

/**
 * Named accessors for the declared cells (`rate.meta`). A cell whose name is also a member of
 * {@link ModelRecord} (`uuid`, `body`, ...) is reached with `record.cell(name)` only.
 */
export type NamedCells<S extends ModelSchema> = {
  readonly [C in Exclude<DeclaredCellName<S>, keyof ModelRecord<S>>]: Cell<S, CellBody<S, C>>;
};

/** The body type of a model's base cell (see `bodies` in {@link ModelSchema}). */
export type BaseBody<S extends ModelSchema> = CellBody<S, typeof BASE_CELL>;

/** A record of a model with schema `S`: {@link ModelRecord} plus its named cell accessors. */
export type RecordOf<S extends ModelSchema> = ModelRecord<S> & NamedCells<S>;

/** The names no cell accessor may take: every member of ModelRecord. */
const RECORD_MEMBERS: ReadonlySet<string> = new Set(
  Object.getOwnPropertyNames(ModelRecord.prototype),
);

/**
 * The record class of one model: ModelRecord with a getter per declared cell whose name is
 * free (`rate.meta` is `rate.cell('meta')`).
 */
export function recordClassFor<S extends ModelSchema>(
  cellNames: readonly string[],
): new (context: ModelPort<S>, uuid: string, known?: KnownVersions) => RecordOf<S> {
  const RecordClass = class extends ModelRecord<S> {};
  for (const name of cellNames) {
    if (name === BASE_CELL || RECORD_MEMBERS.has(name)) continue;
    Object.defineProperty(RecordClass.prototype, name, {
      get(this: ModelRecord<S>) {
        return this.cell(name as CellName<S>);
      },
      enumerable: false,
      configurable: true,
    });
  }
  return RecordClass as unknown as new (
    context: ModelPort<S>,
    uuid: string,
    known?: KnownVersions,
  ) => RecordOf<S>;
}

declare module './modelPort.js' {
  interface UpperLayers<S extends ModelSchema> {
    record: RecordOf<S>;
  }
}
