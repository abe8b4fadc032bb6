// The partition health probe rests while the server is idle (issue 55): with no call for the
// rest period and nothing busy, it probes at that period; the first call probes at once and
// brings back the probe's own period. Probes are counted on a partition that answers at once.
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../../src/engine/base/logger.js';
import { PartitionHealth } from '../../../src/engine/mysql/partitionHealth.js';
import type { PartitionSet } from '../../../src/engine/mysql/partitions.js';

const PROBE_MS = 50;
const REST_MS = 1000;

function countingPartitions(): { set: PartitionSet; probes: () => number } {
  let probes = 0;
  const pool = {
    query: () => {
      probes += 1;
      return Promise.resolve([]);
    },
  };
  const partition = {
    index: 0,
    run: (_scope: unknown, work: (p: typeof pool) => Promise<unknown>) => work(pool),
  };
  const set = { partitions: [partition], count: 1 } as unknown as PartitionSet;
  return { set, probes: () => probes };
}

describe('partition health probe at rest', function () {
  this.timeout(20_000);

  it('slows to the rest period once nothing has called for that long, and a call wakes it', async () => {
    const { set, probes } = countingPartitions();
    const health = new PartitionHealth(set, PROBE_MS, silentLogger);
    health.restWhileIdle({ intervalMs: REST_MS, busy: () => false });
    health.start();
    try {
      // Resting from about REST_MS on; its next probe a rest period after that (about 2 REST_MS):
      // the window below ends 300 ms before it, room for a slow machine's timers.
      await sleep(REST_MS + 300);
      const resting = probes();
      expect(resting, 'probes before the rest').to.be.at.least(5);
      await sleep(400);
      expect(probes(), 'probes while resting').to.equal(resting);

      health.noteCall();
      await sleep(10);
      expect(probes(), 'the probe a call runs at once').to.equal(resting + 1);
      await sleep(PROBE_MS * 8);
      expect(probes() - resting, 'probes after the call').to.be.at.least(4);
    } finally {
      health.stop();
    }
  });

  it('does not rest while something is busy (a stream open)', async () => {
    const { set, probes } = countingPartitions();
    const health = new PartitionHealth(set, PROBE_MS, silentLogger);
    health.restWhileIdle({ intervalMs: REST_MS, busy: () => true });
    health.start();
    try {
      await sleep(REST_MS + 500);
      const before = probes();
      await sleep(400);
      expect(probes() - before, 'probes in 400 ms').to.be.at.least(3);
    } finally {
      health.stop();
    }
  });

  it('never rests unless told to', async () => {
    const { set, probes } = countingPartitions();
    const health = new PartitionHealth(set, PROBE_MS, silentLogger);
    health.start();
    try {
      await sleep(REST_MS + 500);
      const before = probes();
      await sleep(400);
      expect(probes() - before, 'probes in 400 ms').to.be.at.least(3);
      health.noteCall();
    } finally {
      health.stop();
    }
  });
});
