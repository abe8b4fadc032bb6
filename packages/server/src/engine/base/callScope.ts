// The call a statement serves: its deadline, and whether its caller is still there. The service
// hands it to the engine with each call, and the engine passes it down, by hand, to every
// statement run on the call's behalf (mysqlPool.ts bounds each by it). Not AsyncLocalStorage:
// on Node 20 an active storage runs a hook for every promise the process makes, mysql2's and
// grpc-js's included, some 8% of the server's CPU on every call (docs/performance.md). Work
// shared by several calls (a coalesced read, a group commit) runs until the last of them gives
// up: until the latest of their deadlines, and, for reads, until every one of them has gone.
import { type CommitSink, type ReadConsistency, sharedConsistency } from './consistency.js';

export interface CallScope {
  /** Milliseconds since the epoch by which the statements must end; Infinity: none. */
  readonly deadline: number;
  /**
   * Aborted when the caller has gone: it cancelled, or the stream carrying the call ended (an
   * AbortSignal, or the service's cheaper flag of a call that nothing waits on).
   */
  readonly cancellation?: { readonly aborted: boolean };
  /** Of work shared by several calls: their scopes (see sharedScope). */
  readonly sharedBy?: readonly CallScope[];
  /** How fresh the call's reads must be; strong (the primary) when left out. */
  readonly consistency?: ReadConsistency;
  /** Where the call's commits are gathered, for its answer's session token. */
  readonly commits?: CommitSink;
}

/** The scope of work for no call: its statements run until the statement timeout alone. */
export const UNBOUNDED: CallScope = Object.freeze({ deadline: Infinity });

/** The scope of background work whose statements must end by `deadline` (ms since the epoch). */
export function deadlineScope(deadline: number): CallScope {
  return { deadline };
}

/** The deadline of work shared by callers with these deadlines: the latest of them. */
export function latestDeadline(callers: Iterable<number>): number {
  let latest = -Infinity;
  for (const deadline of callers) latest = Math.max(latest, deadline);
  return latest === -Infinity ? Infinity : latest;
}

/**
 * The scope of work shared by these callers (a lone caller's own): it runs until the latest of
 * their deadlines, and is abandoned once every one of them is.
 */
export function sharedScope(callers: readonly CallScope[]): CallScope {
  if (callers.length === 1) return callers[0]!;
  return {
    deadline: latestDeadline(callers.map((caller) => caller.deadline)),
    sharedBy: callers,
    consistency: sharedConsistency(callers.map((caller) => caller.consistency)),
  };
}

/** Whether everyone the work is for has gone, so that no answer of it would be read. */
export function isAbandoned(scope: CallScope): boolean {
  const callers = scope.sharedBy;
  if (callers === undefined) return scope.cancellation?.aborted === true;
  for (const caller of callers) if (!isAbandoned(caller)) return false;
  return callers.length > 0;
}
