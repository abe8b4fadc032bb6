// The model port: what a model's cells, records, queries and log streams need from their model
// (its compiled schema, the transport to read and write through, a way to make record
// handles), as one narrow interface. The files below the model depend on it, never on the
// model itself, so the folder's imports go one way:
//
//   schema, definition → codec (body, conditions) → model port → cell → record → query,
//   cell stream, consumer, consumer groups → model index → model → store
//
// Some public types still point upward (a cell's `record`, a record's `model`, a model's
// `store`). The files that define them fill in {@link UpperLayers} (module augmentation), so a
// lower file names them through this port without importing the file above it.

import type { Cell as WireCell } from '@shameless/proto';
import type { Transport } from '../transport/index.js';
import type { CompiledSchema } from './definition.js';
import type { ModelSchema } from './schema.js';

/**
 * The types of the layers above the port, added by their own files: `record` by record.ts
 * (`RecordOf<S>`), `model` by model.ts (`Model<S>`), `store` by store.ts (`Store`).
 */
export interface UpperLayers<S extends ModelSchema> {
  /** The schema the other members are of (a type only: never read). */
  readonly schema: S;
}

/** The record handle type of a model of schema `S` (`RecordOf<S>`). */
export type RecordHandle<S extends ModelSchema> = UpperLayers<S>['record'];

/** The model type of schema `S` (`Model<S>`). */
export type ModelHandle<S extends ModelSchema> = UpperLayers<S>['model'];

/** The store type (`Store`). */
export type StoreHandle = UpperLayers<ModelSchema>['store'];

/**
 * A cell's state when a record handle is built: a version read from the store, `null` for a
 * cell known to have no version, or absent from the map for a cell not read yet.
 */
export type KnownVersions = ReadonlyMap<string, WireCell | null>;

/** Where a shard lives. */
export interface ShardLocation {
  /** The shard number. */
  readonly shard: number;
  /** The partition (index into {@link Store.partitions}) that holds the shard. */
  readonly partition: number;
}

/** What a model's records, cells, queries and streams use of it. Internal. */
export interface ModelPort<S extends ModelSchema> {
  readonly model: ModelHandle<S>;
  readonly transport: Transport;
  readonly schema: CompiledSchema;
  /** A record handle with its named cell accessors; cells in `known` start as read. */
  newRecord(uuid: string, known?: KnownVersions): RecordHandle<S>;
}
