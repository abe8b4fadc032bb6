// The deadline of the call a statement serves. The service hands it to the engine once, at the
// call's entry (withDeadline); every statement run on the call's behalf, however deep, is then
// bounded by it (mysqlPool.ts) without each engine function passing it on. Work shared by
// several calls (a coalesced read, a group commit) runs until the last of them gives up.
import { AsyncLocalStorage } from 'node:async_hooks';

const deadlines = new AsyncLocalStorage<number>();

/** Runs work whose statements must end by `deadline` (ms since the epoch; Infinity: none). */
export function withDeadline<T>(deadline: number, work: () => T): T {
  return deadlines.run(deadline, work);
}

/** The deadline of the call being served; Infinity outside any call. */
export function currentDeadline(): number {
  return deadlines.getStore() ?? Infinity;
}

/** The deadline of work shared by callers with these deadlines: the latest of them. */
export function latestDeadline(callers: Iterable<number>): number {
  let latest = -Infinity;
  for (const deadline of callers) latest = Math.max(latest, deadline);
  return latest === -Infinity ? Infinity : latest;
}
