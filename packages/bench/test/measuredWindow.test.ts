// CPU readings are only meaningful over the span whose operations are counted: each load must
// open its window once the warm-up is over and close it once, after it opened, whatever the
// order in which its last operation and its timers come back.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { runClosedLoop } from '../src/load/closedLoop.js';
import type { MeasuredWindow } from '../src/load/measuredWindow.js';
import { scheduleWindow } from '../src/load/measuredWindow.js';
import { runOpenLoop } from '../src/load/openLoop.js';

function recordingWindow() {
  const events: { edge: 'open' | 'close'; at: number }[] = [];
  const window: MeasuredWindow = {
    open: () => void events.push({ edge: 'open', at: performance.now() }),
    close: () => void events.push({ edge: 'close', at: performance.now() }),
  };
  return { window, events };
}

describe('measured window', () => {
  it('a closed loop opens it once and closes it once, after opening', async () => {
    const { window, events } = recordingWindow();
    const result = await runClosedLoop(() => sleep(1), {
      concurrency: 4,
      warmupMs: 50,
      durationMs: 100,
      window,
    });
    assert.deepEqual(
      events.map((event) => event.edge),
      ['open', 'close'],
    );
    assert.ok(result.operations > 0);
    assert.ok(result.windowMs >= 100, `window of ${result.windowMs} ms`);
    assert.equal(result.opsPerSecond, result.operations / (result.windowMs / 1000));
  });

  it('an open loop closes it once every counted call has settled', async () => {
    const { window, events } = recordingWindow();
    let settled = 0;
    let lastSettledAt = 0;
    await runOpenLoop(
      async () => {
        await sleep(5);
        settled += 1;
        lastSettledAt = performance.now();
      },
      { ratePerSecond: 200, warmupMs: 20, durationMs: 50, window },
    );
    assert.deepEqual(
      events.map((event) => event.edge),
      ['open', 'close'],
    );
    assert.ok(settled > 0);
    assert.ok(events[1]!.at >= lastSettledAt);
  });

  it('finishing fires the edges still pending, in order, and only once', () => {
    const { window, events } = recordingWindow();
    const edges = scheduleWindow(window, 60_000);
    edges.finish();
    edges.finish();
    assert.deepEqual(
      events.map((event) => event.edge),
      ['open', 'close'],
    );
  });
});
