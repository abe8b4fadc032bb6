// Model definitions: defining (tables first, then the definition as the commit point), and a
// cache that refreshes from the schema table when another server has defined something new.
// Whenever it looks at a model's tables it records what writes must know of them (KnownTables).
import { applySchemaChanges } from './applySchemaChanges.js';
import { type CallScope, UNBOUNDED, sharedScope } from '../base/callScope.js';
import {
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '../base/errors.js';
import type { KnownTables } from './knownTables.js';
import type { Logger } from '../base/logger.js';
import type { StoreLayout } from '../model/layout.js';
import {
  BASE_CELL,
  CompiledModel,
  type ModelSpec,
  compareDefinitions,
  normaliseModelSpec,
  requireDefinitionSize,
} from '../model/model.js';
import type { SqlConnection, SqlSession } from '../mysql/mysqlPool.js';
import type { Partition, PartitionSet } from '../mysql/partitions.js';
import {
  contentTablesOn,
  createdAtMismatches,
  createdAtMismatchMessage,
  foreignTableMessage,
  foreignTables,
  modelChanges,
  modelTablesOn,
} from './schemaPlan.js';
import { isLockContention } from '../mysql/sqlErrors.js';
import { DEFINE_LOCK_WAIT_S, releaseDefineLock, takeDefineLock } from '../mysql/sql/defineLock.js';
import { inspectTables } from '../mysql/sql/schemaInspection.js';
import {
  insertLogLocks,
  lockModelDefinition,
  readModelDefinition,
  readModelDefinitions,
  writeModelDefinition,
} from '../mysql/sql/storeTables.js';

/** Definitions that lose a deadlock to another server's are made again this often at most. */
const DEFINE_ATTEMPTS = 4;
const DDL_CONCURRENCY_PER_PARTITION = 4;

export class ModelRegistry {
  private models = new Map<string, CompiledModel>();
  private refreshing: Promise<void> | undefined;
  private queuedRefresh: Promise<void> | undefined;
  /** The calls waiting for the queued refresh. */
  private queuedCallers: CallScope[] = [];
  private loaded = false;

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly logger: Logger,
    private readonly tables: KnownTables,
  ) {}

  all(): CompiledModel[] {
    return [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Re-reads every definition, with a read that starts after this call (so it sees every
   * definition committed before it). Callers that arrive while a read is under way share the
   * next one: a burst of requests for a model defined elsewhere costs at most two queries.
   * `scope` is the call that asks.
   */
  refresh(scope: CallScope): Promise<void> {
    if (!this.refreshing) {
      this.refreshing = this.load(scope).finally(() => (this.refreshing = undefined));
      return this.refreshing;
    }
    // The next read is shared by every caller that queues for it: it runs until the latest of
    // their deadlines, not the first one's (a call with a 1 ms timeout would fail the others).
    this.queuedCallers.push(scope);
    this.queuedRefresh ??= this.refreshing
      .catch(() => {})
      .then(() => {
        const callers = this.queuedCallers;
        this.queuedRefresh = undefined;
        this.queuedCallers = [];
        return this.refresh(sharedScope(callers));
      });
    return this.queuedRefresh;
  }

  private async load(scope: CallScope): Promise<void> {
    const rows = await this.partitions
      .at(0)
      .run(scope, (pool) => readModelDefinitions(pool, this.layout.modelsTable));
    const before = this.models;
    const models = new Map(
      rows.map(({ name, definition }) => [name, new CompiledModel(parseDefinition(definition))]),
    );
    // Models another server defined since start: their tables are looked at before they are
    // served (the first load's are, by createdAtProblem), so that their first creates are
    // checked against the gem's INT columns as on the server that defined them.
    if (this.loaded) {
      await Promise.all(
        [...models.values()]
          .filter((model) => !before.has(model.name))
          .map((model) => this.tables.read(scope, model)),
      );
    }
    this.models = models;
    this.loaded = true;
  }

  /**
   * The named model; NOT_FOUND when no server has defined it. Using a model whose tables on
   * some partition could not be read (it was down) reads them again, in the background.
   * `scope` is the call that asks (it reads the definitions again for a model not known yet).
   */
  async get(name: string, scope: CallScope): Promise<CompiledModel> {
    if (name === '') throw new InvalidArgumentError('model', "is required: a defined model's name");
    const cached = this.models.get(name);
    if (cached) {
      if (this.tables.incomplete) this.tables.readAgainIfDue(cached);
      return cached;
    }
    // Another server may have defined it since this one last looked.
    await this.refresh(scope);
    const model = this.models.get(name);
    if (!model) {
      throw new NotFoundError(
        `model ${JSON.stringify(name)} is not defined; define it with DefineModel`,
      );
    }
    return model;
  }

  /** Checks a cell name, refreshing once in case another server added the cell. */
  async requireCell(model: CompiledModel, cell: string, scope: CallScope): Promise<CompiledModel> {
    if (model.cellNames.has(cell)) return model;
    await this.refresh(scope);
    const fresh = this.models.get(model.name) ?? model;
    if (!fresh.cellNames.has(cell)) {
      throw new NotFoundError(
        `model ${model.name} has no cell ${JSON.stringify(cell)}; its cells are ${[...fresh.cellNames].join(', ')}`,
      );
    }
    return fresh;
  }

  /**
   * Defines a model (idempotent), holding the model's define lock on partition 0 throughout
   * (sql/defineLock.ts), so that servers defining it at once take turns: the second sees the
   * first's definition and creates nothing of its own. Different models can still deadlock on
   * the models table (two first definitions both lock the gap, then both insert): the loser's
   * whole definition is made again, a few times at most. Its statements serve the call of
   * `scope`.
   */
  async define(
    requested: ModelSpec,
    scope: CallScope,
  ): Promise<{ model: ModelSpec; changed: boolean }> {
    const spec = normaliseModelSpec(requested, this.layout.namespace);
    const table = this.layout.modelsTable;
    const result = await this.partitions.at(0).withConnection(scope, async (connection) => {
      if (!(await takeDefineLock(connection, table, spec.name))) {
        throw new UnavailableError(
          0,
          `another server has been defining model ${spec.name} for ${DEFINE_LOCK_WAIT_S} s; try again`,
        );
      }
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            return await this.defineOnce(spec, connection, scope);
          } catch (error) {
            if (attempt >= DEFINE_ATTEMPTS || !isLockContention(error)) throw error;
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
          }
        }
      } finally {
        // A connection that cannot release it is closed, which releases it.
        await releaseDefineLock(connection, table, spec.name).catch(() => connection.destroy());
      }
    });
    const model = new CompiledModel(result.model);
    // A model this server did not know and whose tables this define did not create (another
    // server or an earlier start did): its tables are read before it is served, as refresh
    // reads those of models defined elsewhere (after the lock: with a pool of one, partition 0
    // has no other connection).
    if (!result.tablesRead && !this.models.has(model.name)) {
      await this.tables.read(scope, model);
    }
    this.models.set(model.name, model);
    return { model: result.model, changed: result.changed };
  }

  /**
   * One attempt, under the define lock, on its connection (partition 0's, which with a pool of
   * one is the only one): what is stored decides, read on that connection.
   */
  private async defineOnce(
    spec: ModelSpec,
    connection: SqlConnection,
    scope: CallScope,
  ): Promise<{ model: ModelSpec; changed: boolean; tablesRead: boolean }> {
    const current = await readModelDefinition(connection, this.layout.modelsTable, spec.name);
    if (current !== undefined) {
      const stored = parseDefinition(current);
      const comparison = compareDefinitions(stored, spec);
      if (comparison.change === 'conflict') throw new FailedPreconditionError(comparison.reason);
      if (comparison.change === 'none') return { model: stored, changed: false, tablesRead: false };
      return { ...(await this.writeDefinition(spec, connection)), tablesRead: false };
    }
    await this.createTables(new CompiledModel(spec), connection, scope);
    return { ...(await this.writeDefinition(spec, connection)), tablesRead: true };
  }

  /** Writes the definition under a row lock, comparing again with what is stored by then. */
  private async writeDefinition(
    spec: ModelSpec,
    connection: SqlConnection,
  ): Promise<{ model: ModelSpec; changed: boolean }> {
    const table = this.layout.modelsTable;
    await connection.query('START TRANSACTION');
    try {
      const current = await lockModelDefinition(connection, table, spec.name);
      let next = spec;
      if (current !== undefined) {
        const stored = parseDefinition(current);
        const comparison = compareDefinitions(stored, spec);
        if (comparison.change === 'conflict') throw new FailedPreconditionError(comparison.reason);
        if (comparison.change === 'none') {
          await connection.query('ROLLBACK');
          return { model: stored, changed: false };
        }
        next = { ...stored, cells: comparison.cells };
      }
      const definition = JSON.stringify(next);
      requireDefinitionSize(definition);
      await writeModelDefinition(connection, table, spec.name, definition);
      await connection.query('COMMIT');
      return { model: next, changed: true };
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => connection.destroy());
      throw error;
    }
  }

  /**
   * Why the store's created_at setting does not fit the content tables of the models defined
   * so far (one look at information_schema per partition), or undefined when it does. Checked
   * at start, so that a misconfigured server refuses to start rather than fail its writes.
   */
  async createdAtProblem(): Promise<string | undefined> {
    const models = this.all();
    if (models.length === 0) return undefined;
    const mismatches = await Promise.all(
      this.partitions.partitions.map((partition) =>
        partition.run(UNBOUNDED, async (pool) => {
          const tables = models.flatMap((model) =>
            modelTablesOn(this.layout, model, partition.index),
          );
          const existing = await inspectTables(pool, tables);
          for (const model of models) this.tables.record(model, partition.index, existing);
          return models.flatMap((model) =>
            createdAtMismatches(this.layout, model, partition.index, existing),
          );
        }),
      ),
    );
    return mismatches.flat().length > 0
      ? createdAtMismatchMessage(this.layout, mismatches.flat())
      : undefined;
  }

  /**
   * Brings every partition up to the model's tables. First looks at what exists on every
   * partition, and refuses, having changed nothing, when an existing table of the model's name
   * lacks the columns the store reads, or an existing content table's created_at is not of the
   * store's kind (its writes would fail). Then creates the missing
   * tables, adds request_id to tables the gem created, and inserts the shards' log-lock rows,
   * each change logged. Safe to repeat after any failure.
   */
  private async createTables(
    model: CompiledModel,
    connection: SqlConnection,
    scope: CallScope,
  ): Promise<void> {
    const started = Date.now();
    const partitions = this.partitions.partitions;
    // Partition 0's statements go on the define's connection: its pool may have no other.
    const on = <T>(partition: Partition, work: (session: SqlSession) => Promise<T>) =>
      partition.index === 0 ? work(connection) : partition.run(scope, work);
    const existing = await Promise.all(
      partitions.map((partition) =>
        on(partition, (session) =>
          inspectTables(session, modelTablesOn(this.layout, model, partition.index)),
        ),
      ),
    );
    const foreign = partitions.flatMap((partition, i) =>
      foreignTables(this.layout, model, partition.index, existing[i]!),
    );
    if (foreign.length > 0) {
      throw new FailedPreconditionError(foreignTableMessage(model.name, foreign));
    }
    const mismatches = partitions.flatMap((partition, i) =>
      createdAtMismatches(this.layout, model, partition.index, existing[i]!),
    );
    if (mismatches.length > 0) {
      throw new FailedPreconditionError(createdAtMismatchMessage(this.layout, mismatches));
    }
    await Promise.all(
      partitions.map((partition, i) =>
        on(partition, async (session) => {
          const changes = modelChanges(this.layout, model, partition.index, existing[i]!);
          await applySchemaChanges(session, changes, this.logger, {
            concurrency: DDL_CONCURRENCY_PER_PARTITION,
            fields: { model: model.name, partition: partition.index },
          });
          const contentTables = contentTablesOn(this.layout, model, partition.index);
          await insertLogLocks(session, this.layout.logLocksTable, contentTables);
          this.tables.record(model, partition.index, existing[i]!);
        }),
      ),
    );
    this.logger.info('tables ready', { model: model.name, ms: Date.now() - started });
  }
}

/** A definition as stored in the models table. */
export function parseDefinition(json: string): ModelSpec {
  try {
    const spec = JSON.parse(json) as ModelSpec;
    return { ...spec, cells: spec.cells.filter((cell) => cell !== BASE_CELL) };
  } catch (error) {
    throw new InternalError('a stored model definition is unreadable', { cause: error });
  }
}
