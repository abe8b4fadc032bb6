// When the coalescing layer sends what was queued: at the end of the current tick, once the
// code running now and every promise job it set off have run, and before the event loop polls
// for I/O. Never on a timer: a call nobody joins is sent as soon as the tick ends.

/**
 * Runs `callback` once the current tick is over: after the synchronous code running now, after
 * every promise job already queued and every job those queue in turn, and after the
 * `process.nextTick` callbacks queued so far; before any timer, I/O callback or `setImmediate`.
 *
 * Why this point:
 * - `process.nextTick` alone runs before promise jobs, so calls made in `await` continuations
 *   (a `Promise.all` of async functions that await something already resolved; the callers of
 *   one batch going on to their next call when its answer resolves them together) would miss
 *   the batch. Queued from a promise job, the nextTick callback runs only once the promise job
 *   queue is empty: every such continuation has run by then.
 * - `setImmediate` would also take in calls made by other I/O callbacks of the same event loop
 *   turn, but makes every call wait for those callbacks: a lone call would pay for the work of
 *   unrelated answers. This point costs a lone call no event loop turn at all.
 */
export function atTickEnd(callback: () => void): void {
  void Promise.resolve().then(() => process.nextTick(callback));
}
