// The server's memory release: Buffers that are garbage are freed once they pass the threshold,
// without waiting for an allocation to start a collection.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { expect } from 'chai';
import { MemoryRelease } from '../../src/serving/memoryRelease.js';

describe('memory release', function () {
  it('collects Buffers that are garbage once they pass the threshold', async () => {
    const release = new MemoryRelease({ intervalMs: 60_000, externalBytes: 32 * 1024 * 1024 });
    let buffers: Buffer[] | undefined = Array.from({ length: 8 }, () =>
      Buffer.alloc(8 * 1024 * 1024, 1),
    );
    const dropped = new WeakRef(buffers[0]!);
    buffers = undefined;
    // A WeakRef holds its target until the job that made it has ended.
    await nextTurn();
    expect(buffers).to.equal(undefined);
    expect(release.check()).to.equal(true);
    expect(dropped.deref()).to.equal(undefined);
  });

  it('leaves memory alone below the threshold', () => {
    const release = new MemoryRelease({
      intervalMs: 60_000,
      externalBytes: process.memoryUsage().external + 256 * 1024 * 1024,
    });
    expect(release.check()).to.equal(false);
  });
});
