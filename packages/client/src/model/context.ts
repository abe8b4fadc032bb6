// What a model shares with its records, cells, queries and log streams. Internal: not exported
// from the package.

import type { Cell as WireCell } from '@shameless/proto';
import type { Transport } from '../transport/index.js';
import type { CompiledSchema } from './definition.js';
import type { Model } from './model.js';
import type { RecordOf } from './record.js';
import type { ModelSchema } from './schema.js';

/**
 * A cell's state when a record handle is built: a version read from the store, `null` for a
 * cell known to have no version, or absent from the map for a cell not read yet.
 */
export type KnownVersions = ReadonlyMap<string, WireCell | null>;

/** The model's parts that its records, cells, queries and streams use. */
export interface ModelContext<S extends ModelSchema> {
  readonly model: Model<S>;
  readonly transport: Transport;
  readonly schema: CompiledSchema;
  /** A record handle with its named cell accessors; cells in `known` start as read. */
  newRecord(uuid: string, known?: KnownVersions): RecordOf<S>;
}
