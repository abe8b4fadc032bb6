// One index of a model, queried with `where`: its conditions are typed by the index's fields.

import { toWireConditions } from './conditions.js';
import type { ModelPort } from './modelPort.js';
import { Query, type WhereOptions } from './query.js';
import type {
  IndexName,
  IndexSchema,
  IndexSchemaOf,
  IsWideSchema,
  ModelSchema,
  WhereConditions,
} from './schema.js';

/** The conditions a `where` on index `N` of `S` takes (any fields for a wide schema). */
export type IndexConditions<S extends ModelSchema, N extends IndexName<S>> =
  IsWideSchema<S> extends true
    ? { readonly [field: string]: unknown }
    : IndexSchemaOf<S, N> extends IndexSchema
      ? WhereConditions<IndexSchemaOf<S, N>>
      : never;

/**
 * An index of a model: `Rate.index('secondary')` or `Rate.indices.secondary`
 * (`Rate.where` queries the primary index).
 */
export class ModelIndex<S extends ModelSchema, N extends IndexName<S> = IndexName<S>> {
  readonly #context: ModelPort<S>;
  readonly #name: N;
  readonly #schema: IndexSchema;

  /** @internal Made by the model. */
  constructor(context: ModelPort<S>, name: N, schema: IndexSchema) {
    this.#context = context;
    this.#name = name;
    this.#schema = schema;
  }

  /** The index's name: `'primary'` or a secondary index's. */
  get name(): N {
    return this.#name;
  }

  /** The index's fields (in index order) and its shard field. */
  get schema(): IndexSchemaOf<S, N> {
    return this.#schema as IndexSchemaOf<S, N>;
  }

  /**
   * The records whose values in this index match `conditions`, in index order (sends Where,
   * one call per page). The shard field's value is required; other fields take a value (`=`)
   * or operators: `{ ne }`, `{ lt }`, `{ lte }`, `{ gt }`, `{ gte }`, `{ in: [...] }`,
   * `{ between: [low, high] }`.
   *
   * @example
   * for await (const rate of Rate.where(
   *   { hotel_id: 1, check_in_date: { gte: '2026-12-01' } },
   *   { order: 'desc', limit: 10 },
   * )) console.log(rate.get('net_price'));
   *
   * @throws InvalidArgumentError (synchronously) for a field that is not in the index, a
   *   value of the wrong type or an unknown operator.
   */
  where(conditions: IndexConditions<S, N>, options: WhereOptions<S> = {}): Query<S> {
    const { schema } = this.#context;
    const wire = toWireConditions(
      schema.name,
      this.#name,
      this.#schema,
      conditions as { readonly [field: string]: unknown },
    );
    return new Query(this.#context, this.#name, wire, options);
  }
}
