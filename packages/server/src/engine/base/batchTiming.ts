// When a batch of callers' work goes. Batching pays under load, where calls that arrive in the
// same turn of the event loop share one statement; for a lone call, waiting for the end of the
// turn costs a turn of the loop (a poll of every socket and timer) for nothing, and a lone
// GetCell waited for two (docs/performance.md, "Lone reads go at once").
//
// So a batcher with nothing of its own out lets its batch go as soon as the current task's
// JavaScript has run, promise callbacks included (DataLoader's timing): the callers that one
// socket read woke, asking in one go, still share it. With a batch out, the next one waits for
// the end of the turn (setImmediate), gathering what every connection asked meanwhile: under
// load, batches are as large as they were.

const settled = Promise.resolve();

/**
 * Runs `flush` once the current task's JavaScript has run when `idle` (the batcher has no
 * batch out), else at the end of the event loop's turn.
 */
export function scheduleFlush(flush: () => void, idle: boolean): void {
  if (idle) void settled.then(() => process.nextTick(flush));
  else setImmediate(flush);
}
