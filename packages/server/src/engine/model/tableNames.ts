// Table naming, compatible with the Ruby gem: `<ns>_<model>_<NNNNNN>` for content and
// `<ns>_<model>_<index>_index_<NNNNNN>` for indices, `<ns>_` left out for an empty namespace.
import { MYSQL_IDENTIFIER_MAX, isIdentifier } from './identifiers.js';

export const PRIMARY_INDEX = 'primary';

function prefixed(namespace: string, name: string): string {
  return namespace === '' ? name : `${namespace}_${name}`;
}

export function padShard(shard: number): string {
  return String(shard).padStart(6, '0');
}

export function contentTableName(namespace: string, model: string, shard: number): string {
  return `${prefixed(namespace, model)}_${padShard(shard)}`;
}

export function indexTableName(
  namespace: string,
  model: string,
  index: string,
  shard: number,
): string {
  return `${prefixed(namespace, model)}_${index}_index_${padShard(shard)}`;
}

/** Tables of the store's own bookkeeping; they cannot collide with model tables, which all end in six digits. */
export type StoreTableKind =
  | 'store'
  | 'models'
  | 'log_locks'
  | 'group_members'
  | 'group_shards'
  | 'group_cells'
  | 'partition_map'
  | 'shard_moves'
  | 'move_changes';

export function storeTableName(namespace: string, kind: StoreTableKind): string {
  return prefixed(namespace, `shameless_${kind}`);
}

/** Why a table name cannot be used, or undefined. */
export function tableNameProblem(name: string): string | undefined {
  if (name.length > MYSQL_IDENTIFIER_MAX) {
    return `table name ${name} is ${name.length} characters long; MySQL allows ${MYSQL_IDENTIFIER_MAX}`;
  }
  if (!isIdentifier(name)) return `table name ${name} is not a valid identifier`;
  return undefined;
}
