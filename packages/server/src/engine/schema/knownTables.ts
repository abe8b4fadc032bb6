// What writes must know of a model's tables as they exist, read from information_schema: the
// fractional digits of the content tables' created_at (StoredTimes: without them a write reads
// its created_at back), and the index tables' integer columns narrower than ours (IndexColumns:
// without them a create's values are checked by MySQL alone, and a gem store's INT columns are
// not). The tables of a partition that cannot be read when a model is first served (the
// partition is down) are read again, so that once it is back the model is served as on the
// server that defined it: by the next create that writes there, which waits for them, and in
// the background whenever the model is used, at most once per READ_AGAIN_MS. Either way one
// read at a time per model, whatever the traffic.
import { type CallScope, deadlineScope } from '../base/callScope.js';
import type { IndexColumns } from '../model/indexColumns.js';
import type { StoreLayout } from '../model/layout.js';
import type { Logger } from '../base/logger.js';
import type { CompiledModel } from '../model/model.js';
import type { PartitionSet } from '../mysql/partitions.js';
import { contentTablesOn, indexTablesOn, modelTablesOn } from './schemaPlan.js';
import { CREATED_AT_DIGITS } from '../mysql/sql/contentDdl.js';
import { type ExistingTable, inspectTables } from '../mysql/sql/schemaInspection.js';
import type { StoredTimes } from '../model/storedTimes.js';

/** The shortest time between two reads in the background of one model's tables. */
export const READ_AGAIN_MS = 1000;
/** How long a read in the background may take (a hung partition answers nothing). */
const BACKGROUND_READ_MS = 10_000;

/** A model's partitions whose tables could not be read yet, and the read under way. */
interface Unread {
  /** Each such partition, with why its last read failed. */
  readonly failures: Map<number, unknown>;
  reading: Promise<void> | undefined;
  /** No read in the background before this time (ms since the epoch). */
  notBefore: number;
}

export class KnownTables {
  /** By model name; empty on a server whose partitions were all up when it read them. */
  private readonly unread = new Map<string, Unread>();

  constructor(
    private readonly layout: StoreLayout,
    private readonly partitions: PartitionSet,
    private readonly logger: Logger,
    private readonly times: StoredTimes,
    private readonly indexColumns: IndexColumns,
  ) {}

  /**
   * Records what writes must know of the model's tables on a partition, as inspected
   * (`existing`: those of them that exist; the others will be created as we create them).
   */
  record(
    model: CompiledModel,
    partition: number,
    existing: ReadonlyMap<string, ExistingTable>,
  ): void {
    for (const table of contentTablesOn(this.layout, model, partition)) {
      const found = existing.get(table);
      const digits = found ? found.createdAtDigits : CREATED_AT_DIGITS;
      if (digits !== undefined) this.times.learn(table, digits);
    }
    for (const table of indexTablesOn(this.layout, model, partition)) {
      const found = existing.get(table);
      if (found) this.indexColumns.learn(table, found.columnTypes);
    }
    const unread = this.unread.get(model.name);
    if (unread?.failures.delete(partition) && unread.failures.size === 0) {
      this.unread.delete(model.name);
      this.logger.info('read the columns of a model at last', { model: model.name, partition });
    }
  }

  /**
   * Reads and records the model's tables on every partition (on those given). Never fails: a
   * partition that cannot be read is remembered, logged the first time, and read again later.
   * The reads serve the call of `scope`.
   */
  async read(
    scope: CallScope,
    model: CompiledModel,
    partitions = this.partitions.partitions.map((p) => p.index),
  ) {
    await Promise.all(
      partitions.map(async (index) => {
        try {
          const partition = this.partitions.at(index);
          const tables = modelTablesOn(this.layout, model, index);
          const existing = await partition.run(scope, (pool) => inspectTables(pool, tables));
          this.record(model, index, existing);
        } catch (error) {
          this.failed(model, index, error);
        }
      }),
    );
  }

  private failed(model: CompiledModel, partition: number, error: unknown): void {
    let unread = this.unread.get(model.name);
    if (!unread) {
      unread = { failures: new Map(), reading: undefined, notBefore: 0 };
      this.unread.set(model.name, unread);
    }
    if (!unread.failures.has(partition)) {
      this.logger.warn(
        'could not read the columns of a model; until they are read again, its writes read ' +
          'created_at back, and its index values are checked by MySQL alone',
        { model: model.name, partition, error: (error as Error).message },
      );
    }
    unread.failures.set(partition, error);
  }

  /** True when some model's tables on some partition could not be read yet. */
  get incomplete(): boolean {
    return this.unread.size > 0;
  }

  /**
   * Reads the model's tables not read yet, in the background, unless a read is under way or
   * the last began less than READ_AGAIN_MS ago.
   */
  readAgainIfDue(model: CompiledModel): void {
    const unread = this.unread.get(model.name);
    if (!unread || unread.reading || Date.now() < unread.notBefore) return;
    void this.readAgain(model, unread);
  }

  /**
   * Undefined when the model's tables on the partitions of `rows` are known (a create's rows
   * may then be checked against them); otherwise a read of them (one under way, or a new one),
   * which fails as the read of one of those partitions did when it still cannot be read.
   */
  readingFor(
    model: CompiledModel,
    rows: readonly { readonly partition: number }[],
  ): Promise<void> | undefined {
    if (this.unread.size === 0) return undefined;
    const unread = this.unread.get(model.name);
    if (!unread || !rows.some((row) => unread.failures.has(row.partition))) return undefined;
    return this.readAgain(model, unread).then(() => {
      for (const row of rows) {
        if (unread.failures.has(row.partition)) throw unread.failures.get(row.partition);
      }
    });
  }

  /**
   * Reads them again, or joins the read under way. Shared by the calls that wait on it and by
   * the background: it serves none of them, and is bounded by a deadline of its own.
   */
  private readAgain(model: CompiledModel, unread: Unread): Promise<void> {
    unread.notBefore = Date.now() + READ_AGAIN_MS;
    const scope = deadlineScope(Date.now() + BACKGROUND_READ_MS);
    unread.reading ??= this.read(scope, model, [...unread.failures.keys()]).finally(
      () => (unread.reading = undefined),
    );
    return unread.reading;
  }
}
