// A closed loop's measured window lasts its duration, or longer when operations are slow: its
// workers start together, so operations longer than the window complete in waves, and a window
// between two waves would count none.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { runClosedLoop } from '../src/load/closedLoop.js';

describe('closed-loop window', () => {
  it('stays open until twice the concurrency has completed when operations outlast it', async () => {
    let closes = 0;
    const result = await runClosedLoop(() => sleep(150), {
      concurrency: 4,
      warmupMs: 1,
      durationMs: 100,
      window: { open: () => undefined, close: () => void (closes += 1) },
    });
    // A 100 ms window would have closed before the first wave (150 ms) came back.
    assert.ok(result.operations >= 8, `${result.operations} operations`);
    assert.ok(result.windowMs > 100, `window of ${result.windowMs} ms`);
    assert.equal(result.opsPerSecond, result.operations / (result.windowMs / 1000));
    assert.equal(closes, 1);
  });

  it('closes after its duration when operations are quick', async () => {
    const result = await runClosedLoop(() => sleep(1), {
      concurrency: 2,
      warmupMs: 1,
      durationMs: 50,
      maxDurationMs: 20_000,
    });
    assert.ok(result.operations >= 4, `${result.operations} operations`);
    assert.ok(result.windowMs >= 50, `window of ${result.windowMs} ms`);
    assert.ok(result.windowMs < 20_000, `window of ${result.windowMs} ms`);
  });

  it('counts failures towards the operations it waits for', async () => {
    const result = await runClosedLoop(
      async () => {
        await sleep(1);
        throw new Error('refused');
      },
      { concurrency: 2, warmupMs: 1, durationMs: 50, maxDurationMs: 20_000 },
    );
    assert.equal(result.operations, 0);
    assert.ok(result.errors >= 4, `${result.errors} errors`);
    assert.ok(result.windowMs < 20_000, `window of ${result.windowMs} ms`);
  });

  it('gives up waiting at maxDurationMs', async () => {
    const result = await runClosedLoop(() => sleep(400), {
      concurrency: 2,
      warmupMs: 1,
      durationMs: 50,
      maxDurationMs: 100,
    });
    // The first wave comes back at 400 ms, after the window closed at 101 ms.
    assert.equal(result.operations, 0);
    assert.ok(result.windowMs >= 100 && result.windowMs < 400, `window of ${result.windowMs} ms`);
  });
});
