// The model layer's public surface: the DSL, stores, models, records and cells.

export { type CallOptions, type WriteOptions } from './callOptions.js';
export { Cell, type CellJSON, type UpdateOptions } from './cell.js';
export { CellStream, type EachOptions, type Heartbeat } from './cellStream.js';
export {
  Consumer,
  type ConsumeHandler,
  type ConsumeOptions,
  type ConsumerEvent,
} from './consumer.js';
export type { Delivery } from '../groups/index.js';
export {
  ParkedCells,
  type ConsumerGroupDescription,
  type ConsumerGroupMember,
  type ConsumerGroupShard,
  type ModelRef,
  type ParkedCell,
  type ParkedCellContent,
  type ParkedCellsOptions,
  type ResetTarget,
} from './consumerGroups.js';
export {
  type BodySource,
  CellNotLoadedError,
  ReadonlyFieldError,
  UnreadableBodyError,
} from './errors.js';
export { type ExactInteger } from './integers.js';
// Bodies' extension values; the class is @shameless/proto's, where the reader and writer live.
export { MessagePackExtension } from '@shameless/proto';
export {
  Model,
  type CellKey,
  type CellWrite,
  type FindOptions,
  type InferRecord,
  type LogPage,
  type LogPageRequest,
  type WriteCellsResult,
} from './model.js';
export { ModelIndex, type IndexConditions } from './modelIndex.js';
export { Query, type WhereOptions } from './query.js';
export { ModelRecord, type BaseBody, type NamedCells, type RecordOf } from './record.js';
export {
  BASE_CELL,
  PRIMARY_INDEX,
  body,
  type Body,
  type BodyKey,
  type BodyType,
  type BodyValue,
  type CellBody,
  type CellName,
  type CellValues,
  type Condition,
  type DeclaredCellName,
  type FieldType,
  type FieldValue,
  type FieldValueIn,
  type FieldsOf,
  type IndexFieldName,
  type IndexFieldValue,
  type IndexFields,
  type IndexName,
  type IndexSchema,
  type IndexSchemaOf,
  type IntegerFieldOf,
  type IsWideSchema,
  type ModelSchema,
  type Operators,
  type PutValues,
  type SecondaryIndicesOf,
  type ValidSchema,
  type WhereConditions,
  type WritableKey,
} from './schema.js';
export {
  Store,
  connect,
  type ConnectOptions,
  type ExistingTransport,
  type ShardLocation,
  type StoreDescription,
} from './store.js';
