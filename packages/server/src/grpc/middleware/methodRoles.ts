// The role each Store RPC needs, in one table. Roles nest: a writer may do what a reader may,
// an admin what a writer may. The table is keyed by the generated service definition, so an RPC
// added to the proto without a role here does not compile.
import type { StoreService } from '@shameless/proto';

export const ROLES = ['reader', 'writer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

// A Pipeline is not checked as a whole: each call on it needs its own method's role.
type StoreMethod = Exclude<
  (typeof StoreService)[keyof typeof StoreService]['path'] extends `/shameless.v1.Store/${infer Name}`
    ? Name
    : never,
  'Pipeline'
>;

export const METHOD_ROLES: Readonly<Record<StoreMethod, Role>> = {
  DescribeStore: 'reader',
  FindShard: 'reader',
  GetCell: 'reader',
  GetCells: 'reader',
  Previous: 'reader',
  Where: 'reader',
  WhereMany: 'reader',
  FetchLatestCells: 'reader',
  Each: 'reader',
  Consume: 'reader',
  DescribeConsumerGroup: 'reader',
  ListParkedCells: 'reader',
  ReplayParkedCell: 'writer',
  ResetConsumerGroup: 'admin',
  Put: 'writer',
  PutMany: 'writer',
  WriteCell: 'writer',
  WriteCells: 'writer',
  DefineModel: 'admin',
  MoveShards: 'admin',
};

/**
 * The role a call of this RPC needs. An RPC missing from the table (a server older than its
 * proto cannot have one, but a stray name can) needs admin: the rule fails closed.
 */
export function roleNeeded(method: string): Role {
  return Object.hasOwn(METHOD_ROLES, method) ? METHOD_ROLES[method as StoreMethod] : 'admin';
}

export function roleIncludes(held: Role, needed: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(needed);
}
