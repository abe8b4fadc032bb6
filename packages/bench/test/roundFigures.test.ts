// A read's rounds compare the figures of reads: a side's window in which a call failed stops
// the run rather than give a p50 and a CPU that the failures made.
import assert from 'node:assert/strict';
import { roundFigures } from '../src/suite.js';

describe("a round's figures", () => {
  const window = { opsPerSecond: 1500, p50: 0.62, p99: 1.9, p999: 3.1 };

  it("keeps a window's p50, CPU and operations a second when every call in it answered", () => {
    const cpu = { server: 400, client: 150, mariadb: 210 };
    assert.deepEqual(roundFigures('GetCell, without the SDK', { ...window, errors: 0, cpu }), {
      p50: 0.62,
      cpu,
      opsPerSecond: 1500,
    });
    assert.deepEqual(roundFigures('the service', { ...window, errors: 0 }), {
      p50: 0.62,
      cpu: {},
      opsPerSecond: 1500,
    });
  });

  it('stops at a window with a failed call, naming the side and the first failure', () => {
    assert.throws(
      () =>
        roundFigures('[1/2] GetCell, 1 KB, 1 in flight, without the SDK', {
          ...window,
          errors: 3,
          firstError: 'NOT_FOUND: no version of 3f2b8c1e-7a4d-4e1b-9c2a-5d6e7f8a9b0c/base',
        }),
      {
        message:
          '[1/2] GetCell, 1 KB, 1 in flight, without the SDK: 3 call(s) failed in a round, the first: NOT_FOUND: no version of 3f2b8c1e-7a4d-4e1b-9c2a-5d6e7f8a9b0c/base',
      },
    );
  });
});
