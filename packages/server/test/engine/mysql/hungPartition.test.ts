// A partition whose network hangs, through the testkit's TCP proxy: a statement waits no longer
// than the statement timeout, the call answers UNAVAILABLE instead of waiting for the caller's
// deadline, the other partition keeps serving, and once the network is back the destroyed
// connections have been replaced. Nor does a statement outlive the deadline of its call. A server
// whose health probe rests while it is idle probes at once on the first call after the rest.
import { expect } from 'chai';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { GetCellResponse } from '@shameless/proto';
import { connectHealth, rejection } from '../../support/grpcCalls.js';
import { type ProxiedStore, useProxiedStore } from '../../support/proxiedStore.js';
import { RATE_MODEL, putRate } from '../../support/storeFixture.js';

/** A proxied store with the rate model; `put` creates a record on partition 0 (hotel ids 0, 1
 * mod 4) or 1 (2, 3) and answers its uuid. */
function withProxiedStore(
  statementTimeoutMs: number,
  tests: (setup: ProxiedStore & { put(hotelId: number): Promise<string> }) => void,
) {
  const setup = Object.assign(useProxiedStore({ shardsCount: 4, statementTimeoutMs }), {
    put: (hotelId: number) => putRate(setup.store.api, hotelId),
  });
  before(() => setup.store.api.defineModel({ model: RATE_MODEL }));
  tests(setup);
}

describe('a hung partition', function () {
  this.timeout(60_000);

  describe('with a statement timeout of 1 s', () => {
    withProxiedStore(1000, (setup) => {
      it('answers UNAVAILABLE within the statement timeout, not the deadline, and recovers', async () => {
        const { store, proxy } = setup;
        const onFirst = await setup.put(1);
        const onSecond = await setup.put(2);
        const getBase = (uuid: string) => store.api.getCell({ model: 'rate', uuid, cell: '' });

        proxy.setFaults({ blackhole: true });
        const error = await rejection(getBase(onSecond));
        // The call's deadline is 15 s away: UNAVAILABLE came from the statement timeout.
        expect(error.code, error.details).to.equal(status.UNAVAILABLE);
        expect(error.details).to.contain('partition 1');
        expect((await getBase(onFirst)).cell?.uuid).to.equal(onFirst);

        proxy.setFaults({});
        proxy.resetAll();
        expect((await getBase(onSecond)).cell?.uuid).to.equal(onSecond);
      });

      it('reports each partition in health and DescribeStore, down while it hangs', async () => {
        const { store, proxy } = setup;
        const health = connectHealth(store.address);
        const check = (partition: number) =>
          health.check(`shameless.v1.Store/partition/${partition}`);
        const until = async (partition: number, wanted: string) => {
          while ((await check(partition)) !== wanted) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        };
        // The test before hung partition 1 too: it is back once a probe says so.
        await until(1, 'SERVING');
        expect(await check(0)).to.equal('SERVING');
        expect((await store.api.describeStore({})).partitions.map((p) => p.down)).to.deep.equal([
          false,
          false,
        ]);

        proxy.setFaults({ blackhole: true });
        await until(1, 'NOT_SERVING');
        expect(await check(0)).to.equal('SERVING');
        expect((await store.api.describeStore({})).partitions.map((p) => p.down)).to.deep.equal([
          false,
          true,
        ]);

        proxy.setFaults({});
        proxy.resetAll();
        await until(1, 'SERVING');
        expect((await store.api.describeStore({})).partitions[1]?.down).to.equal(false);
        health.close();
      });
    });
  });

  describe('on a server whose probe rests while it is idle', () => {
    const REST_MS = 5000;
    const setup = useProxiedStore({
      shardsCount: 4,
      healthCheckIntervalMs: 200,
      idleHealthCheckMs: REST_MS,
    });

    it('the first call after the rest probes at once: a hang is reported within a probe', async () => {
      const { store, proxy } = setup;
      const health = connectHealth(store.address);
      const check = () => health.check('shameless.v1.Store/partition/1');
      try {
        expect(await check()).to.equal('SERVING');
        // Unused past the rest period: the next probe is up to a rest period away.
        await new Promise((resolve) => setTimeout(resolve, REST_MS + 500));
        proxy.setFaults({ blackhole: true });
        const hungAt = Date.now();
        // Answered from the last probe, which found the partition up; the call wakes the probe.
        expect(await check()).to.equal('SERVING');
        while ((await check()) !== 'NOT_SERVING') {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(Date.now() - hungAt, 'ms to NOT_SERVING').to.be.below(REST_MS / 2);
      } finally {
        proxy.setFaults({});
        proxy.resetAll();
        health.close();
      }
    });
  });

  describe('with a statement timeout longer than the test', () => {
    withProxiedStore(10 * 60_000, (setup) => {
      it("stops a statement at its call's deadline: the hung connection is destroyed", async () => {
        const { store, proxy } = setup;
        const onSecond = await setup.put(3);
        const closed = () => proxy.stats.connectionsAccepted - proxy.connectionCount;
        const closedBefore = closed();
        expect(proxy.connectionCount).to.be.greaterThan(0);
        proxy.setFaults({ blackhole: true });
        const error = await new Promise<ServiceError>((resolve, reject) =>
          store.api.client.getCell(
            { model: 'rate', uuid: onSecond, cell: '' },
            new Metadata(),
            { deadline: Date.now() + 300 },
            (callError: ServiceError | null, response: GetCellResponse) =>
              callError ? resolve(callError) : reject(new Error(`answered ${response.cell?.uuid}`)),
          ),
        );
        expect(error.code).to.equal(status.DEADLINE_EXCEEDED);
        // Only the call's deadline can close the hung connection before the test times out.
        while (closed() === closedBefore) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        proxy.setFaults({});
        expect(
          (await store.api.getCell({ model: 'rate', uuid: onSecond, cell: '' })).cell?.uuid,
        ).to.equal(onSecond);
      });
    });
  });
});
