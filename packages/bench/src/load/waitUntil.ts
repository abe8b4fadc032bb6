// Waiting for a state another process reaches (a member owning its shards, a takeover): poll a
// check until it holds, and give up after a bound, failing the step or going on, as asked.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` every 20 ms until it holds; resolves with how long that took. After
 * `timeoutMs` it rejects naming `what`, or, with `what` undefined, resolves all the same (the
 * caller goes on and counts what is missing).
 */
export async function waitUntil(
  check: () => boolean,
  timeoutMs: number,
  what: string | undefined,
): Promise<number> {
  const startedAt = Date.now();
  for (;;) {
    if (check()) return Date.now() - startedAt;
    if (Date.now() - startedAt > timeoutMs) {
      if (what === undefined) return Date.now() - startedAt;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await sleep(20);
  }
}
