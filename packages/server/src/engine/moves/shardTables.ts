// Which tables a shard has, and the name each takes once its cut-over renames it away. A shard
// is one content table per model and one index table per index of it; all move together.
import { createHash } from 'node:crypto';
import type { StoreLayout } from '../model/layout.js';
import type { CompiledModel } from '../model/model.js';
import { MYSQL_IDENTIFIER_MAX } from '../model/identifiers.js';

export interface ShardTableNames {
  /** The models' content tables of the shard, by model name order. */
  readonly content: readonly string[];
  /** Their index tables: each model's primary, then its secondary indices. */
  readonly index: readonly string[];
}

export function shardTables(
  layout: StoreLayout,
  models: readonly CompiledModel[],
  shard: number,
): ShardTableNames {
  const content: string[] = [];
  const index: string[] = [];
  for (const model of [...models].sort((a, b) => a.name.localeCompare(b.name))) {
    content.push(layout.contentTable(model, shard));
    for (const spec of [model.primaryIndex, ...model.spec.secondaryIndices]) {
      index.push(layout.indexTable(model, spec.name, shard));
    }
  }
  return { content, index };
}

/**
 * A source table's name after its move's cut-over: `<table>_m<moveId>`, or, when that passes
 * 64 characters, the table's name cut short with a hash of it in the place of its tail (the
 * move's row keeps the mapping; the name only has to be valid and unique).
 */
export function movedName(table: string, moveId: number): string {
  const suffix = `_m${moveId}`;
  const plain = `${table}${suffix}`;
  if (plain.length <= MYSQL_IDENTIFIER_MAX) return plain;
  const hash = createHash('sha1').update(table).digest('hex').slice(0, 10);
  return `${table.slice(0, MYSQL_IDENTIFIER_MAX - suffix.length - hash.length - 1)}_${hash}${suffix}`;
}
