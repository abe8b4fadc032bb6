// A run's warm-up is counted in operations as well as in time, so that the code a one-at-a-time
// run measures has been optimised by V8 before the window opens; the priming is capped in time
// so that a slow operation cannot stretch a run without bound.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { runClosedLoop } from '../src/load/closedLoop.js';

describe('closed-loop warm-up', () => {
  it('completes the warm-up operations before the measured ones', async () => {
    let calls = 0;
    let measuredFrom: number | undefined;
    const window = {
      open: () => void (measuredFrom = calls),
      close: () => undefined,
    };
    const result = await runClosedLoop(
      async () => {
        calls += 1;
        await sleep(0);
      },
      { concurrency: 2, warmupMs: 1, durationMs: 30, warmupOperations: 300, window },
    );
    assert.ok(
      measuredFrom !== undefined && measuredFrom >= 300,
      `window opened after ${measuredFrom} calls`,
    );
    assert.ok(calls >= 300 + result.operations, `${calls} calls, ${result.operations} measured`);
  });

  it('stops priming at primeMaxMs even when fewer operations completed', async () => {
    let calls = 0;
    await runClosedLoop(
      async () => {
        calls += 1;
        await sleep(20);
      },
      { concurrency: 1, warmupMs: 1, durationMs: 20, warmupOperations: 10_000, primeMaxMs: 100 },
    );
    // 100 ms of 20 ms calls, then the timed run: nowhere near the 10,000 asked for.
    assert.ok(calls < 50, `${calls} calls`);
  });

  it('counts an operation that fails while priming as neither an error nor an operation', async () => {
    let calls = 0;
    const result = await runClosedLoop(
      async () => {
        calls += 1;
        if (calls <= 5) throw new Error('cold');
        await sleep(0);
      },
      { concurrency: 1, warmupMs: 1, durationMs: 20, warmupOperations: 5 },
    );
    assert.equal(result.errors, 0);
    assert.ok(result.operations > 0);
  });
});
