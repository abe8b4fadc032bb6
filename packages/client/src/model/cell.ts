// One cell of a record as this process sees it: the version it last read or wrote, and a
// working copy of the body that `set` edits and `save` writes as the next version (the keys
// set, merged into the version read: the stored bytes of every other key stay as they are).

import { WriteMode, type Cell as WireCell, type WriteCellRequest } from '@shameless/proto';
import {
  ConflictError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from '../transport/index.js';
import { decodeBody, encodeBody } from './body.js';
import { withBodyAsSent } from './bodyAsSent.js';
import {
  newRequestId,
  readCall,
  writeCall,
  type CallOptions,
  type WriteOptions,
} from './callOptions.js';
import type { ModelPort, RecordHandle } from './modelPort.js';
import { refuseIndexFields } from './definition.js';
import { CellNotLoadedError } from './errors.js';
import { type ExactInteger, fromWire, jsonSafe } from './integers.js';
import type {
  Body,
  BodyKey,
  BodyValue,
  CellName,
  CellValues,
  ModelSchema,
  WritableKey,
} from './schema.js';

/** Options of {@link Cell.update}. */
export interface UpdateOptions extends WriteOptions {
  /**
   * How many times to re-read the cell and merge again when the write is rejected because
   * another writer got there first (a ConflictError). Default 0: the conflict is thrown.
   * `requestId`, when given, is used for the first write only; each retry is a new write.
   */
  readonly retryOnConflict?: number;
}

/**
 * A cell as {@link Cell.asJSON} shows it: the gem's `as_json`, ready for `JSON.stringify`. A
 * 64-bit integer past 2^53 (an id, a body value) is a bigint in the SDK, which JSON cannot
 * hold: here it is its decimal string, as proto3's JSON mapping writes 64-bit integers.
 */
export interface CellJSON {
  /**
   * The row id in its content shard (the log cursor): a number, or its decimal string past
   * 2^53; null when the cell has no version.
   */
  readonly id: number | string | null;
  /** The record's UUID. */
  readonly uuid: string;
  /** The cell's name. */
  readonly column_name: string;
  /** The version; null when the cell has no version. */
  readonly ref_key: number | null;
  /** The body as this object sees it (including unsaved edits), bigints as strings. */
  readonly body: Body;
  /** When the version was written, ISO 8601; null when the cell has no version. */
  readonly created_at: string | null;
}

interface StoredVersion {
  readonly id: ExactInteger;
  readonly shard: number;
  readonly refKey: number;
  readonly createdAt: Date;
}

// Write failures after which the write is known not to have been applied. After any other
// failure (deadline, unavailable, cancelled, ...) it may have been, so the same request (same
// requestId) is kept for the next save(): the server then applies it at most once.
const DEFINITE_FAILURES = [
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  FailedPreconditionError,
  PermissionDeniedError,
  UnauthenticatedError,
];

/**
 * A cell of a record: an immutable, versioned body (`uuid, name, refKey -> body`), seen
 * through this object.
 *
 * A cell is either read (`loaded`: it holds the version it last read or wrote, or knows there
 * is none) or not read yet. The base cell of a record returned by `put`, `where` or `find` is
 * read; other cells are read with {@link Cell.load} or the `cells` option of `where`.
 * Reading the content of a cell that has not been read throws a {@link CellNotLoadedError}.
 *
 * Writes are optimistic: {@link Cell.save} sends the version this object last saw as
 * `expectedRefKey`, so a save over someone else's newer version rejects with a
 * `ConflictError` instead of silently overwriting it.
 *
 * The type arguments are the model's schema (`Cell<typeof Rate.schema>`, or `typeof rate.base`)
 * and the cell's body type (declared with `bodies` in the model definition; an untyped body by
 * default); code that takes cells of any model takes `Cell<any>`.
 */
export class Cell<S extends ModelSchema = ModelSchema, B extends object = Body> {
  readonly #context: ModelPort<S>;
  readonly #record: RecordHandle<S>;
  readonly #name: CellName<S>;
  #loaded = false;
  #version: StoredVersion | undefined;
  /**
   * The body, decoded on first use: a log read or a batch read makes thousands of cells whose
   * bodies may never be looked at. `#encoded` holds the stored bytes until then.
   */
  #decoded: Body | undefined = {};
  #encoded: Uint8Array | undefined;
  /**
   * The keys set since the version held was adopted (what the next save writes), each with
   * the count of edits at its last set: a key set while a write is out is not in that write.
   */
  readonly #changed = new Map<string, number>();
  /** Edits made by this object so far. */
  #edits = 0;
  /** A write whose outcome is unknown; resent as is by the next save() if nothing changed. */
  #unsettledWrite: WriteCellRequest | undefined;

  /**
   * @internal Cells are made by their record. `version`: a version read from the store,
   * `null` for a cell known to have none, `undefined` for a cell not read yet.
   */
  constructor(
    context: ModelPort<S>,
    record: RecordHandle<S>,
    name: CellName<S>,
    version?: WireCell | null,
  ) {
    this.#context = context;
    this.#record = record;
    this.#name = name;
    if (version !== undefined) this.#adopt(version);
  }

  /** The cell's name: `'base'` or a declared cell. */
  get name(): CellName<S> {
    return this.#name;
  }

  /** The record this cell belongs to. */
  get record(): RecordHandle<S> {
    return this.#record;
  }

  /** The record's UUID. */
  get uuid(): string {
    return this.#record.uuid;
  }

  /** Whether the cell has been read (or written) by this object. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Whether the cell has a stored version (the gem's `present?`). Needs the cell read. */
  get present(): boolean {
    this.#requireLoaded();
    return this.#version !== undefined;
  }

  /** The version this object holds (0 for the first); undefined when there is none. */
  get refKey(): number | undefined {
    this.#requireLoaded();
    return this.#version?.refKey;
  }

  /**
   * The version's row id in its content shard: its cursor in the shard log. A number, or a
   * bigint past 2^53.
   */
  get id(): ExactInteger | undefined {
    this.#requireLoaded();
    return this.#version?.id;
  }

  /** The content shard the cell lives in. */
  get shard(): number | undefined {
    this.#requireLoaded();
    return this.#version?.shard;
  }

  /** When the version this object holds was written. */
  get createdAt(): Date | undefined {
    this.#requireLoaded();
    return this.#version?.createdAt;
  }

  /** The body, unsaved edits included. Read-only: change it with `set` or `update`. */
  get body(): Readonly<B> {
    this.#requireLoaded();
    return this.#body as B;
  }

  /** The value of `key` in the body, or undefined when the body has no such key. */
  get<K extends BodyKey<B>>(key: K): BodyValue<B, K> {
    this.#requireLoaded();
    return (Object.hasOwn(this.#body, key) ? this.#body[key] : undefined) as BodyValue<B, K>;
  }

  /** Whether the body has `key` (even with a `null` or `false` value). */
  has(key: string): boolean {
    this.#requireLoaded();
    return Object.hasOwn(this.#body, key);
  }

  /**
   * The value of `key` when the body has it, as stored (`false`, `null` and `0` included),
   * otherwise `fallback`.
   */
  fetch(key: string, fallback: unknown): unknown {
    this.#requireLoaded();
    return Object.hasOwn(this.#body, key) ? this.#body[key] : fallback;
  }

  /**
   * Sets `key` in the body; written by the next {@link Cell.save}. Sends nothing. Only keys
   * set this way (or by `update`) are written: a value returned by `get` and changed in place
   * is not, unless it is set again.
   *
   * @throws ReadonlyFieldError (synchronously) when `key` is a field of any index, naming the
   *   field and the index: index values never change.
   * @throws CellNotLoadedError when the cell has not been read.
   */
  set<K extends BodyKey<B>>(key: K & WritableKey<S, K>, value: BodyValue<B, K>): this {
    refuseIndexFields(this.#context.schema, [key]);
    this.#requireLoaded();
    this.#setKey(key, value);
    return this;
  }

  /**
   * Writes the body as this object sees it as the cell's next version (sends WriteCell with
   * the version last read as `expectedRefKey`, -1 when there was none). Reads the cell first
   * if it has not been read.
   *
   * Only the keys set since the version was read are sent, as a shallow merge into that
   * version (WRITE_MODE_MERGE): since the version is checked, the result is exactly this body,
   * and every key not set keeps its stored bytes. So a value this SDK cannot represent as it
   * was written (a float with an integral value, `120.0`, reads as the number 120) stays as
   * it was unless it is set. A save with nothing set still writes a new version (as the gem's
   * `save` does), with the same body.
   *
   * A key set while a save is out is not in that save: it stays set over the version written,
   * for the next save. A save that failed without a definite answer (deadline, unavailable,
   * cancelled) and is called again with no edit since it was sent resends the same requestId,
   * so it is applied at most once.
   *
   * @throws ConflictError when another version was written since this object read the cell:
   *   `reload()` and decide again, or use `update` with `retryOnConflict`.
   * @throws InvalidArgumentError (before any call) for a value set that MessagePack cannot
   *   hold, naming its key path; set it again to something that it can.
   */
  async save(options: WriteOptions = {}): Promise<this> {
    if (!this.#loaded) await this.reload(options);
    const request =
      options.requestId === undefined && this.#unsettledWrite !== undefined
        ? this.#unsettledWrite
        : this.#saveRequest(options.requestId);
    await this.#write(request, options);
    return this;
  }

  /**
   * Shallow-merges `values` into the body and writes the result as the next version: the gem's
   * `update` (`values.each { |k, v| self[k] = v }; save`). Unsaved edits made with `set` are
   * written too.
   *
   * - On a cell this object has read: sends WriteCell as {@link Cell.save} does, checked
   *   against the version read. With `retryOnConflict: n`, a conflict re-reads the cell
   *   (GetCell; other unsaved edits are dropped), merges `values` again and writes again (a new
   *   requestId), up to n times.
   * - On a cell not read yet there is nothing stale to check: sends one WriteCell with
   *   WRITE_MODE_MERGE and no expected version (the server merges into the latest version),
   *   and the cell then holds the result.
   *
   * @throws ReadonlyFieldError (the promise rejects, before any call) when `values` has a
   *   field of any index.
   * @throws InvalidArgumentError (the promise rejects, before any call, and nothing is set)
   *   for a value MessagePack cannot hold (a bigint past 64 bits, a symbol, a function, an
   *   object inside itself), naming its key path: `cell base of <uuid>: prices.20261201: ...`.
   * @throws ConflictError when the cell changed since it was read and no retries are left.
   */
  async update(values: CellValues<S> & Partial<B>, options: UpdateOptions = {}): Promise<this> {
    refuseIndexFields(this.#context.schema, Object.keys(values));
    if (!this.#loaded) {
      await this.#write(
        this.#request(values, WriteMode.WRITE_MODE_MERGE, undefined, options.requestId),
        options,
      );
      return this;
    }
    const retries = options.retryOnConflict ?? 0;
    for (let attempt = 0; ; attempt++) {
      // Encoded before the values are set: a value refused must not stay set, to be sent
      // (and refused) with every later save and update.
      const request = this.#saveRequest(attempt === 0 ? options.requestId : undefined, values);
      for (const [key, value] of Object.entries(values)) this.#setKey(key, value);
      try {
        await this.#write(request, options);
        return this;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= retries) throw error;
        await this.reload(options);
      }
    }
  }

  /**
   * Reads the latest version of the cell (GetCell), replacing what this object held and
   * dropping unsaved edits. A cell with no version reads as an empty body (`present` false).
   */
  async reload(options: CallOptions = {}): Promise<this> {
    const { transport, schema } = this.#context;
    try {
      const response = await transport.unary(
        'getCell',
        { model: schema.name, uuid: this.uuid, cell: this.#name, refKey: undefined },
        readCall(options),
      );
      this.#adopt(response.cell ?? null);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      this.#adopt(null);
    }
    return this;
  }

  /** Reads the cell if it has not been read yet (see {@link Cell.reload}); else does nothing. */
  async load(options: CallOptions = {}): Promise<this> {
    if (!this.#loaded) await this.reload(options);
    return this;
  }

  /**
   * The version before the one this object holds, as a new Cell of the same record (sends
   * Previous), or undefined at version 0 (without a call) and for a cell with no version.
   * Chainable: `(await (await cell.previous())?.previous())`... down to version 0.
   */
  async previous(options: CallOptions = {}): Promise<Cell<S, B> | undefined> {
    if (!this.#loaded) await this.reload(options);
    const version = this.#version;
    if (version === undefined || version.refKey === 0) return undefined;
    const { transport, schema } = this.#context;
    const response = await transport.unary(
      'previous',
      { model: schema.name, uuid: this.uuid, cell: this.#name, refKey: version.refKey },
      readCall(options),
    );
    if (response.none || response.cell === undefined) return undefined;
    return new Cell(this.#context, this.#record, this.#name, response.cell);
  }

  /**
   * The cell's full state, as the gem's `as_json`:
   * `{ id, uuid, column_name, ref_key, body, created_at }`, with every bigint (an id or body
   * integer past 2^53) as its decimal string so that `JSON.stringify` never throws. Sends
   * nothing.
   */
  asJSON(): CellJSON {
    this.#requireLoaded();
    const id = this.#version?.id;
    return {
      id: id === undefined ? null : typeof id === 'bigint' ? id.toString() : id,
      uuid: this.uuid,
      column_name: this.#name,
      ref_key: this.#version?.refKey ?? null,
      body: jsonSafe({ ...this.#body }) as Body,
      created_at: this.#version?.createdAt.toISOString() ?? null,
    };
  }

  /** `JSON.stringify(cell)` gives {@link Cell.asJSON}. */
  toJSON(): CellJSON {
    return this.asJSON();
  }

  #requireLoaded(): void {
    if (!this.#loaded)
      throw new CellNotLoadedError(this.#context.schema.name, this.uuid, this.#name);
  }

  /**
   * The request that writes the working body, with `values` set over it, as the next version
   * of the version held: the keys set since, merged into it (index fields are never among
   * them: `set` and `update` refuse them). Changes nothing here.
   */
  #saveRequest(requestId: string | undefined, values: Readonly<Body> = {}): WriteCellRequest {
    const expected = this.#version?.refKey ?? -1;
    const patch: Body = {};
    for (const key of this.#changed.keys()) setKey(patch, key, this.#body[key]);
    for (const [key, value] of Object.entries(values)) setKey(patch, key, value);
    return this.#request(patch, WriteMode.WRITE_MODE_MERGE, expected, requestId);
  }

  /** A local edit: the working body changes and the key joins the next save's patch. */
  #setKey(key: string, value: unknown): void {
    setKey(this.#body, key, value);
    this.#changed.set(key, ++this.#edits);
    this.#unsettledWrite = undefined;
  }

  #request(
    body: Readonly<Body>,
    mode: WriteMode,
    expectedRefKey: number | undefined,
    requestId: string | undefined,
  ): WriteCellRequest {
    return {
      model: this.#context.schema.name,
      uuid: this.uuid,
      cell: this.#name,
      body: encodeBody(body, `cell ${this.#name} of ${this.uuid}`),
      mode,
      expectedRefKey,
      requestId: requestId ?? newRequestId(),
      omitBodyAsSent: true,
    };
  }

  /**
   * Sends one logical write (the transport resends the same request on retries). Keys set
   * while it is out are not in it: they stay set over the version it writes, for the next save.
   */
  async #write(request: WriteCellRequest, options: CallOptions): Promise<void> {
    const sentAt = this.#edits;
    try {
      const response = await this.#context.transport.unary(
        'writeCell',
        request,
        writeCall(options),
      );
      const later = [...this.#changed]
        .filter(([, edit]) => edit > sentAt)
        .map(([key]) => [key, this.#body[key]] as const);
      this.#adopt(withBodyAsSent(response.cell, response.bodyOmitted, request.body) ?? null);
      for (const [key, value] of later) this.#setKey(key, value);
    } catch (error) {
      const definite = DEFINITE_FAILURES.some((type) => error instanceof type);
      // A request that misses a later edit must not be resent as the next save: if it landed,
      // the replay would pass for that save and the edit would be dropped unwritten.
      this.#unsettledWrite = definite || this.#edits !== sentAt ? undefined : request;
      throw error;
    }
  }

  /** Holds `version` (null: the cell has none), dropping unsaved edits. */
  #adopt(version: WireCell | null): void {
    this.#loaded = true;
    this.#unsettledWrite = undefined;
    this.#changed.clear();
    if (version === null) {
      this.#version = undefined;
      this.#decoded = {};
      this.#encoded = undefined;
      return;
    }
    this.#version = {
      id: fromWire(version.id),
      shard: version.shard,
      refKey: version.refKey,
      createdAt: version.createdAt ?? new Date(0),
    };
    this.#decoded = undefined;
    this.#encoded = version.body;
  }

  /** The working body: the version held, with unsaved edits. */
  get #body(): Body {
    if (this.#decoded === undefined) {
      this.#decoded = decodeBody(this.#encoded!, {
        model: this.#context.schema.name,
        uuid: this.uuid,
        cell: this.#name,
        refKey: this.#version?.refKey,
      });
      this.#encoded = undefined;
    }
    return this.#decoded;
  }
}

/** Sets an own key, `__proto__` included (a plain assignment would change the prototype). */
function setKey(body: Body, key: string, value: unknown): void {
  Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
}
