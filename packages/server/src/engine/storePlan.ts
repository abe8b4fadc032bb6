// The dry run of serving a store (`shameless plan`): every schema change that starting a
// server with this configuration, and then defining the given models, would make, and what
// was checked on the way (the recorded shard layout, the created_at kind of existing tables,
// the stored definitions), without changing anything: the database is not created, no table
// is created or altered, no row is written. The changes come from schemaPlan.ts, as serve's
// and DefineModel's do, over the same inspection of what exists.
import { maxPartitionMapVersion, versionOf } from './mysql/sql/partitionMap.js';
import { InvalidArgumentError } from './base/errors.js';
import type { StoreLayout } from './model/layout.js';
import {
  CompiledModel,
  type ModelSpec,
  compareDefinitions,
  normaliseModelSpec,
} from './model/model.js';
import { parseDefinition } from './schema/modelRegistry.js';
import {
  type MysqlLocation,
  type MysqlPool,
  type Row,
  createMysqlPool,
  databaseExists,
} from './mysql/mysqlPool.js';
import {
  type StoreShape,
  checkStoreShape,
  describeLocation,
  storeRecordProblem,
} from './openStore.js';
import {
  type CreatedAtMismatch,
  type ExistingTables,
  type SchemaChange,
  bookkeepingChanges,
  bookkeepingTables,
  contentTablesOn,
  createdAtMismatches,
  createdAtMismatchMessage,
  foreignTableMessage,
  foreignTables,
  databaseChange,
  describeCreatedAt,
  modelChanges,
  modelTablesOn,
} from './schema/schemaPlan.js';
import { inspectTables } from './mysql/sql/schemaInspection.js';
import { readModelDefinitions, readStoreRecord } from './mysql/sql/storeTables.js';

/** One thing the dry run looked at, and what it found. */
export interface PlanCheck {
  /**
   * False when serve would refuse to start, DefineModel would refuse the model, or a partition
   * cannot be reached.
   */
  ok: boolean;
  text: string;
}

/** What serving the store would do to its databases. */
export interface StorePlan {
  layout: StoreLayout;
  /** Each partition's location (host:port/database), by index. */
  partitions: string[];
  checks: PlanCheck[];
  /** The schema changes, partition by partition, in the order serving makes them. */
  changes: SchemaChange[];
  /** Rows serving would write into the bookkeeping tables (data, not schema). */
  rows: string[];
}

/** A model definition to plan, with where it came from (a file name) for the messages. */
export interface PlannedModel {
  source: string;
  spec: ModelSpec;
}

/** What a partition holds, as far as the dry run could see. */
type PartitionState = { location: MysqlLocation } & (
  | { reachable: false }
  // No pool when the database does not exist yet.
  | { reachable: true; pool: MysqlPool | undefined }
);

export async function planStore(
  config: StoreShape & { connectTimeoutMs: number },
  models: readonly PlannedModel[],
): Promise<StorePlan> {
  const { layout, locations } = checkStoreShape(config);
  const plan: StorePlan = {
    layout,
    partitions: locations.map(describeLocation),
    checks: [],
    changes: [],
    rows: [],
  };
  // One partition after the other, so that the checks print in partition order.
  const states: PartitionState[] = [];
  for (const [i, location] of locations.entries()) {
    states.push(await openPartition(location, i, config.connectTimeoutMs, plan));
  }
  try {
    if (await refuseMovedStore(layout, states, plan)) return plan;
    const registered = await planStoreTables(layout, states, plan);
    await checkRegisteredModels(layout, states, registered, plan);
    for (const model of models) await planModel(layout, states, registered, model, plan);
  } finally {
    await Promise.all(states.map((state) => (state.reachable ? state.pool?.end() : undefined)));
  }
  return plan;
}

/**
 * A store that moved shards is routed by its partition map, which the dry run does not follow
 * yet: it says so and plans nothing, rather than plan by the gem's ranges over the list. True
 * when it did.
 */
async function refuseMovedStore(
  layout: StoreLayout,
  states: readonly PartitionState[],
  plan: StorePlan,
): Promise<boolean> {
  for (const [index, state] of states.entries()) {
    if (!state.reachable || !state.pool) continue;
    const existing = await inspectTables(state.pool, [layout.partitionMapTable]);
    if (!existing.has(layout.partitionMapTable)) continue;
    const version = versionOf(
      await state.pool.query<Row[]>(maxPartitionMapVersion(layout.partitionMapTable).sql),
    );
    if (version === 0) continue;
    plan.checks.push({
      ok: false,
      text:
        `partition ${index}: ${layout.partitionMapTable} holds partition map version ${version}: this store has ` +
        'moved shards, and the dry run plans only stores routed by the gem’s ranges over the partition list; ' +
        'serve reads the map and creates what a model lacks where the map puts each shard',
    });
    return true;
  }
  return false;
}

/** Connects to a partition's server and looks for its database, creating nothing. */
async function openPartition(
  location: MysqlLocation,
  index: number,
  connectTimeoutMs: number,
  plan: StorePlan,
): Promise<PartitionState> {
  const where = `partition ${index} (${describeLocation(location)})`;
  let exists: boolean;
  try {
    exists = await databaseExists(location, connectTimeoutMs);
  } catch (error) {
    const reason = (error as { code?: string }).code ?? (error as Error).message;
    plan.checks.push({
      ok: false,
      text: `${where}: cannot connect as ${location.user} (${reason})`,
    });
    return { location, reachable: false };
  }
  if (!exists) {
    plan.checks.push({ ok: true, text: `${where}: database missing; serve creates it` });
    plan.changes.push(databaseChange(index, location.database));
    return { location, reachable: true, pool: undefined };
  }
  plan.checks.push({ ok: true, text: `${where}: reachable, database exists` });
  return {
    location,
    reachable: true,
    pool: createMysqlPool(location, { connectionLimit: 1, connectTimeoutMs }),
  };
}

/**
 * What exists of the given tables on a partition: nothing without a database, and undefined
 * (unknown) on a partition that could not be reached.
 */
async function inspect(
  state: PartitionState,
  tables: readonly string[],
): Promise<ExistingTables | undefined> {
  if (!state.reachable) return undefined;
  return state.pool ? inspectTables(state.pool, tables) : new Map();
}

/**
 * The bookkeeping tables each partition lacks, and the layout recorded where there is one.
 * Answers the models defined so far (read from partition 0).
 */
async function planStoreTables(
  layout: StoreLayout,
  states: readonly PartitionState[],
  plan: StorePlan,
): Promise<Map<string, CompiledModel>> {
  const registered = new Map<string, CompiledModel>();
  for (const [index, state] of states.entries()) {
    if (!state.reachable) continue;
    const existing = (await inspect(state, bookkeepingTables(layout)))!;
    plan.changes.push(...bookkeepingChanges(layout, index, existing));
    const stored =
      state.pool && existing.has(layout.storeTable)
        ? await readStoreRecord(state.pool, layout.storeTable)
        : undefined;
    if (!stored) {
      plan.rows.push(
        `partition ${index}: the store record (shardsCount=${layout.shardsCount}, ` +
          `${layout.partitionCount} partition(s), this one as partition ${index}) in ${layout.storeTable}`,
      );
    } else {
      const problem = storeRecordProblem(stored, layout, index, state.location);
      plan.checks.push(
        problem
          ? { ok: false, text: `serve would refuse to start: ${problem}` }
          : {
              ok: true,
              text: `partition ${index}: ${layout.storeTable} records shardsCount=${stored.shardsCount} and ${stored.partitionCount} partition(s), this one as partition ${index}, as configured`,
            },
      );
    }
    if (index === 0 && state.pool && existing.has(layout.modelsTable)) {
      for (const { name, definition } of await readModelDefinitions(
        state.pool,
        layout.modelsTable,
      )) {
        registered.set(name, new CompiledModel(parseDefinition(definition)));
      }
    }
  }
  return registered;
}

/** The start check: the content tables of every defined model have the configured created_at. */
async function checkRegisteredModels(
  layout: StoreLayout,
  states: readonly PartitionState[],
  registered: ReadonlyMap<string, CompiledModel>,
  plan: StorePlan,
): Promise<void> {
  const models = [...registered.values()];
  if (models.length === 0) return;
  const mismatches: CreatedAtMismatch[] = [];
  for (const [index, state] of states.entries()) {
    const existing = await inspect(
      state,
      models.flatMap((model) => contentTablesOn(layout, model, index)),
    );
    if (!existing) continue;
    mismatches.push(
      ...models.flatMap((model) => createdAtMismatches(layout, model, index, existing)),
    );
  }
  const names = models.map((model) => model.name).join(', ');
  plan.checks.push(
    mismatches.length > 0
      ? {
          ok: false,
          text: `serve would refuse to start: ${createdAtMismatchMessage(layout, mismatches)}`,
        }
      : {
          ok: true,
          text: `defined models (${names}): created_at of their content tables is ${describeCreatedAt(layout.createdAt)}, as configured`,
        },
  );
}

/** What DefineModel with this definition would do, as ModelRegistry.define decides it. */
async function planModel(
  layout: StoreLayout,
  states: readonly PartitionState[],
  registered: ReadonlyMap<string, CompiledModel>,
  { source, spec: requested }: PlannedModel,
  plan: StorePlan,
): Promise<void> {
  let spec: ModelSpec;
  try {
    spec = normaliseModelSpec(requested, layout.namespace);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    plan.checks.push({
      ok: false,
      text: `${source}: DefineModel would refuse it: ${error.message}`,
    });
    return;
  }
  const title = `model ${spec.name} (${source})`;
  const stored = registered.get(spec.name);
  if (stored) {
    const comparison = compareDefinitions(stored.spec, spec);
    if (comparison.change === 'conflict') {
      plan.checks.push({
        ok: false,
        text: `${title}: DefineModel would refuse it: ${comparison.reason}`,
      });
    } else if (comparison.change === 'none') {
      plan.checks.push({
        ok: true,
        text: `${title}: defined as given; DefineModel changes nothing`,
      });
    } else {
      const added = comparison.cells.filter((cell) => !stored.spec.cells.includes(cell));
      plan.checks.push({
        ok: true,
        text: `${title}: defined; DefineModel adds cells ${added.join(', ')} to its definition (no table changes)`,
      });
      plan.rows.push(`partition 0: the new definition of ${spec.name} in ${layout.modelsTable}`);
    }
    return;
  }
  const model = new CompiledModel(spec);
  const existing = await Promise.all(
    states.map((state, index) => inspect(state, modelTablesOn(layout, model, index))),
  );
  const foreign = existing.flatMap((tables, index) =>
    tables ? foreignTables(layout, model, index, tables) : [],
  );
  if (foreign.length > 0) {
    plan.checks.push({
      ok: false,
      text: `${title}: DefineModel would refuse it: ${foreignTableMessage(spec.name, foreign)}`,
    });
    return;
  }
  const mismatches = existing.flatMap((tables, index) =>
    tables ? createdAtMismatches(layout, model, index, tables) : [],
  );
  if (mismatches.length > 0) {
    plan.checks.push({
      ok: false,
      text: `${title}: DefineModel would refuse it: ${createdAtMismatchMessage(layout, mismatches)}`,
    });
    return;
  }
  const all = states.reduce((sum, _, index) => sum + modelTablesOn(layout, model, index).length, 0);
  const found = existing.reduce((sum, tables) => sum + (tables?.size ?? 0), 0);
  const contentFound = existing.reduce(
    (sum, tables, index) =>
      sum + contentTablesOn(layout, model, index).filter((table) => tables?.has(table)).length,
    0,
  );
  plan.checks.push({
    ok: true,
    text:
      `${title}: not defined yet; ${found} of its ${all} tables exist` +
      (contentFound > 0
        ? `; created_at of its ${contentFound} existing content tables is ${describeCreatedAt(layout.createdAt)}, as configured`
        : ''),
  });
  existing.forEach((tables, index) => {
    if (tables) plan.changes.push(...modelChanges(layout, model, index, tables));
  });
  plan.rows.push(
    `every partition: a row per content table of ${spec.name} in ${layout.logLocksTable}`,
    `partition 0: the definition of ${spec.name} in ${layout.modelsTable}`,
  );
}
