// A two-partition store whose second partition is reached through the testkit's
// fault-injecting TCP proxy, set up before a suite's tests and torn down after them.
import {
  type TcpProxy,
  type TestDatabases,
  createTestDatabases,
  startTcpProxy,
} from '@shameless/testkit';
import { type FixtureOptions, type StoreFixture, startStoreFixture } from './storeFixture.js';

export interface ProxiedStore {
  store: StoreFixture;
  proxy: TcpProxy;
  /** The partitions' own URLs, the second one's not through the proxy. */
  directUrls: readonly string[];
}

/**
 * Registers the suite's before and after hooks; the object returned is filled in once the
 * before hook has run.
 */
export function useProxiedStore(
  options: Pick<
    FixtureOptions,
    'shardsCount' | 'statementTimeoutMs' | 'healthCheckIntervalMs' | 'idleHealthCheckMs'
  >,
): ProxiedStore {
  let databases: TestDatabases | undefined;
  const setup = {} as ProxiedStore;
  before(async () => {
    databases = await createTestDatabases(2);
    setup.directUrls = databases.urls;
    const second = new URL(databases.urls[1]!);
    setup.proxy = await startTcpProxy({
      target: { host: second.hostname, port: Number(second.port) },
    });
    second.host = setup.proxy.address;
    setup.store = await startStoreFixture({
      ...options,
      partitionUrls: [databases.urls[0]!, second.toString()],
    });
  });
  after(async () => {
    await setup.store?.close();
    await setup.proxy?.close();
    await databases?.drop();
  });
  return setup;
}
