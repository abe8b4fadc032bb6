// The model-definition DSL: plain object literals whose literal types flow into put, where and
// the cell accessors. Everything here is types only (`body()` returns an empty marker);
// definition.ts turns a schema into the wire definition sent with DefineModel.

/** The type of an index field: `'integer'` (signed 64-bit) or `'string'` (up to 255 chars). */
export type FieldType = 'integer' | 'string';

/**
 * The TypeScript type of a value of an index field of type `T`. An integer field holds any
 * signed 64-bit integer: a number while it is a safe integer, a bigint for any value (a
 * number past 2^53 is refused, since it may have lost digits already).
 */
export type FieldValue<T extends FieldType> = T extends 'integer' ? number | bigint : string;

/** An index's fields, in order (the order in which `where` sorts): name -> type. */
export type IndexFields = { readonly [field: string]: FieldType };

/**
 * An index: its fields and the field that picks the index shard.
 *
 * @example
 * { fields: { hotel_id: 'integer', room_type: 'string' }, shardOn: 'hotel_id' }
 */
export interface IndexSchema<F extends IndexFields = IndexFields> {
  /**
   * Field names (lowercase identifiers, which become column names) and their types. The order
   * of the keys is the index order.
   */
  readonly fields: F;
  /** One of `fields`, of type `'integer'`: `shard = value mod shardsCount`. */
  readonly shardOn: keyof F & string;
}

/**
 * A model: a kind of record, declared as an object literal and registered with
 * {@link Store.defineModel}.
 *
 * @example
 * const Rate = await store.defineModel({
 *   name: 'rate',
 *   primary: {
 *     fields: { hotel_id: 'integer', room_type: 'string', check_in_date: 'string' },
 *     shardOn: 'hotel_id',
 *   },
 *   indices: {
 *     secondary: {
 *       fields: { hotel_id: 'integer', gateway: 'string', discount_type: 'string' },
 *       shardOn: 'hotel_id',
 *     },
 *   },
 *   cells: ['meta'],
 * });
 */
export interface ModelSchema {
  /** The model's name, a lowercase identifier: tables are `<ns>_<name>_<NNNNNN>`. */
  readonly name: string;
  /** The primary index: a natural key, one record per tuple of its values. */
  readonly primary: IndexSchema;
  /** Named secondary indices (not `primary`). Several records may share their values. */
  readonly indices?: { readonly [name: string]: IndexSchema };
  /** Cells besides `base`, which every model has (e.g. `['meta']`). */
  readonly cells?: readonly string[];
  /**
   * Optional TypeScript types of cell bodies, by cell name (`base` included), each made with
   * {@link body}: `bodies: { meta: body<{ note: string }>() }`. A typed cell's `get`, `set`,
   * `body` and `update` take and return that type; untyped cells stay `unknown`. Types only:
   * nothing is checked at run time and nothing is sent to the store.
   */
  readonly bodies?: { readonly [cell: string]: BodyType<object> };
}

declare const BODY_TYPE: unique symbol;

/** A cell's body type in a model definition (see {@link body}). Carries no value. */
export interface BodyType<T extends object> {
  readonly [BODY_TYPE]?: T;
}

/**
 * Declares a cell's body type in a model definition: `bodies: { base: body<RateBody>() }`.
 * Returns an empty object; only its type matters.
 */
export function body<T extends object>(): BodyType<T> {
  return {};
}

/** The body type of cell `C` of schema `S`: its declared type, or {@link Body} when none. */
export type CellBody<S extends ModelSchema, C extends string> = S extends {
  readonly bodies: infer X;
}
  ? C extends keyof X
    ? X[C] extends BodyType<infer T>
      ? T
      : Body
    : Body
  : Body;

/** The keys of a body type (any string for an untyped body). */
export type BodyKey<B extends object> = keyof B & string;

/** The value type of `key` in a body type (`unknown` for an untyped body). */
export type BodyValue<B extends object, K extends string> = K extends keyof B ? B[K] : unknown;

/** The names of the integer fields of an index: the ones it may shard on. */
export type IntegerFieldOf<F extends IndexFields> = {
  [K in keyof F]: F[K] extends 'integer' ? K : never;
}[keyof F] &
  string;

/**
 * The checks a schema's literal type must pass beyond {@link ModelSchema}: every `shardOn`
 * names an integer field of its index. (Used as `schema: S & ValidSchema<S>`; a bad `shardOn`
 * fails to compile at the property.)
 */
export type ValidSchema<S extends ModelSchema> = {
  readonly primary: { readonly shardOn: IntegerFieldOf<S['primary']['fields']> };
  readonly indices?: {
    readonly [N in keyof SecondaryIndicesOf<S>]: {
      readonly shardOn: IntegerFieldOf<FieldsOf<SecondaryIndicesOf<S>[N]>>;
    };
  };
};

/** The name of the primary index. */
export const PRIMARY_INDEX = 'primary';
/** The name of the cell every model has. */
export const BASE_CELL = 'base';

/**
 * Whether `S` is a schema type whose names are not known statically (the plain
 * {@link ModelSchema}, as in `Cell` or `Model` without a type argument, which generic helpers
 * take). Such a schema allows any index and cell name, and no index field is known to refuse
 * at compile time (they are still refused at run time).
 */
export type IsWideSchema<S extends ModelSchema> = string extends S['name'] ? true : false;

/** The secondary indices of a schema (`{}` when it declares none). */
export type SecondaryIndicesOf<S extends ModelSchema> = S extends {
  readonly indices: infer X extends { readonly [name: string]: IndexSchema };
}
  ? X
  : Record<never, never>;

/** The names of a schema's indices: `'primary'` and every secondary index. */
export type IndexName<S extends ModelSchema> =
  IsWideSchema<S> extends true
    ? string
    : typeof PRIMARY_INDEX | (keyof SecondaryIndicesOf<S> & string);

/** The schema of the index `N` of `S`. */
export type IndexSchemaOf<S extends ModelSchema, N extends IndexName<S>> =
  IsWideSchema<S> extends true
    ? IndexSchema
    : N extends 'primary'
      ? S['primary']
      : SecondaryIndicesOf<S>[N & keyof SecondaryIndicesOf<S>];

/** The fields of an index schema type. */
export type FieldsOf<I> = I extends { readonly fields: infer F extends IndexFields } ? F : never;

/** The value type of field `K` of fields `F` (never when `F` has no such field). */
export type FieldValueIn<F extends IndexFields, K> = K extends keyof F ? FieldValue<F[K]> : never;

/** The names of the cells a schema declares besides `base`. */
export type DeclaredCellName<S extends ModelSchema> =
  IsWideSchema<S> extends true
    ? string
    : S extends { readonly cells: readonly (infer C extends string)[] }
      ? C
      : never;

/** The names of a model's cells: `'base'` and every declared cell. */
export type CellName<S extends ModelSchema> = typeof BASE_CELL | DeclaredCellName<S>;

/** The names of every field of every index of a schema. Index fields are never written. */
export type IndexFieldName<S extends ModelSchema> =
  IsWideSchema<S> extends true
    ? never
    : { [N in IndexName<S>]: keyof FieldsOf<IndexSchemaOf<S, N>> & string }[IndexName<S>];

/** The value type of the index field `K` (as declared by the indices that hold it). */
export type IndexFieldValue<S extends ModelSchema, K extends string> = {
  [N in IndexName<S>]: FieldValueIn<FieldsOf<IndexSchemaOf<S, N>>, K>;
}[IndexName<S>];

/**
 * A cell body: a MessagePack map with string keys; any MessagePack value inside (a map inside
 * whose keys are not all strings is a `Map`).
 */
export type Body = { [key: string]: unknown };

/**
 * What {@link Model.put} takes: every field of every index, typed as declared, plus any other
 * content for the base cell.
 */
export type PutValues<S extends ModelSchema> = {
  readonly [K in IndexFieldName<S>]: IndexFieldValue<S, K>;
} & { readonly [key: string]: unknown };

/**
 * Values for a cell write (`update`): any key but an index field, which can never be written
 * (a compile error here, a {@link ReadonlyFieldError} at run time).
 */
export type CellValues<S extends ModelSchema> = { readonly [key: string]: unknown } & {
  readonly [K in IndexFieldName<S>]?: never;
};

/**
 * A cell key that may be set: any string but an index field's name (those fail to compile
 * when written literally, and throw a {@link ReadonlyFieldError} at run time).
 */
export type WritableKey<S extends ModelSchema, K extends string> =
  K extends IndexFieldName<S> ? never : K;

/**
 * Comparison operators of one condition on a field, ANDed when several are given:
 * `{ gte: '2026-12-01', lt: '2027-01-01' }`.
 */
export interface Operators<T> {
  /** `=` (the same as giving the plain value). */
  readonly eq?: T;
  /** `!=`. */
  readonly ne?: T;
  /** `<`. */
  readonly lt?: T;
  /** `<=`. */
  readonly lte?: T;
  /** `>`. */
  readonly gt?: T;
  /** `>=`. */
  readonly gte?: T;
  /** `IN (...)`: one to 1000 values. */
  readonly in?: readonly T[];
  /** `BETWEEN low AND high`, both inclusive. */
  readonly between?: readonly [low: T, high: T];
}

/** A condition on one field: a plain value (`=`) or {@link Operators}. */
export type Condition<T> = T | Operators<T>;

/**
 * The conditions of a `where` on an index: the shard field's value is required (it picks the
 * one index shard that is read); any other field of the index may have a condition.
 */
export type WhereConditions<I extends IndexSchema> = {
  readonly [K in I['shardOn']]: FieldValue<I['fields'][K]>;
} & {
  readonly [K in Exclude<keyof I['fields'] & string, I['shardOn']>]?: Condition<
    FieldValue<I['fields'][K]>
  >;
};
