// The SDK over read replicas (issue 53): one store connected to two servers, both with the
// partition's replica (a real MariaDB replica, GTID replication). With connect()'s default
// consistency, 'session', a read right after a put sees it, whichever of the two servers each call
// goes to, while the reads still leave the primary; `consistency: 'strong'` on a call reads the
// primary.

import { expect } from 'chai';
import {
  type Engine,
  type RunningServer,
  UNBOUNDED,
  openStore,
  silentLogger,
  startServer,
} from '@shameless/server';
import {
  type ReplicatedMariaDb,
  type StatementDeltas,
  startReplicatedMariaDb,
  watchStatements,
} from '@shameless/testkit';
import { connect, type Model, type Store } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';

/** The servers' lag probes, one SELECT on the primary and one on the replica each, per interval. */
const CHECK_MS = 1000;

interface InProcessServer {
  readonly engine: Engine;
  readonly server: RunningServer;
  readonly address: string;
}

/** A server over `primaryUrl` with `replicaUrl` as its replica. */
async function startReplicatedServer(
  primaryUrl: string,
  replicaUrl: string,
): Promise<InProcessServer> {
  const engine = await openStore(
    {
      namespace: 'sdk',
      shardsCount: 4,
      partitionUrls: [primaryUrl],
      replicas: [{ partition: 0, url: replicaUrl }],
      // Probes 4 times less often than the default, and a lag bound to match: they weigh little
      // beside the reads the test counts.
      replicaCheckIntervalMs: CHECK_MS,
      replicaMaxLagMs: 10_000,
      poolSize: 8,
      connectTimeoutMs: 1000,
      startupTimeoutMs: 0,
      followPollIntervalMs: 20,
    },
    silentLogger,
  );
  const server = await startServer(
    engine,
    { listen: '127.0.0.1:0', maxMessageBytes: 16 * 1024 * 1024 },
    silentLogger,
  );
  return { engine, server, address: `127.0.0.1:${server.port}` };
}

/** Resolves once the engine measures its replica serving. */
async function replicaServing(engine: Engine): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const replica = (await engine.describe(UNBOUNDED)).partitions[0]!.replicas[0]!;
    if (replica.state === 'serving') return;
    if (Date.now() > deadline) throw new Error(`the replica is ${replica.state}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('read replicas through the SDK: session by default, strong per call (issue 53)', function () {
  this.timeout(60_000);
  let set: ReplicatedMariaDb;
  let servers: InProcessServer[] = [];
  let store: Store;
  let Rate: Model<typeof RATE_SCHEMA>;
  const statements = () => watchStatements([set.primary.url, set.replicas[0]!.url]);
  /** Both servers probe the replica: at most this many SELECTs there that are no read. */
  const probes = (deltas: StatementDeltas) =>
    servers.length * (Math.ceil(deltas.elapsedMs / CHECK_MS) + 2);

  before(async () => {
    set = await startReplicatedMariaDb({
      replicas: 1,
      // Commits without a flush each: the test is of routing, not of the disk.
      extraArgs: ['--innodb-flush-log-at-trx-commit=2'],
    });
    const primaryUrl = `${set.primary.url}/sdk_replicas`;
    const replicaUrl = `${set.replicas[0]!.url}/sdk_replicas`;
    // One after the other: the first lays out the fresh database.
    servers.push(await startReplicatedServer(primaryUrl, replicaUrl));
    servers.push(await startReplicatedServer(primaryUrl, replicaUrl));
    store = await connect({ endpoints: servers.map((server) => server.address) });
    Rate = await store.defineModel(RATE_SCHEMA);
    await set.waitForReplicaToCatchUp(set.replicas[0]!);
    await Promise.all(servers.map((server) => replicaServing(server.engine)));
  });
  after(async () => {
    await store?.close();
    for (const { server, engine } of servers) {
      await server.shutdown(500);
      await engine.close();
    }
    servers = [];
    await set?.destroy();
  });

  it('put, then find or where of what was just put, over two servers: never stale, and the reads leave the primary', async () => {
    const WORKERS = 16;
    const ROUNDS = 125;
    const stale: string[] = [];
    const watch = await statements();
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, worker) => {
        for (let round = 0; round < ROUNDS; round += 1) {
          const put = await Rate.put(rateValues(100 + worker, 'double', '2026-06-01', { round }));
          const read =
            round % 2 === 0
              ? await Rate.find(put.uuid)
              : (
                  await Rate.where({
                    hotel_id: 100 + worker,
                    room_type: 'double',
                    check_in_date: '2026-06-01',
                  }).toArray()
                )[0];
          if (read === undefined || read.refKey !== put.refKey || read.get('round') !== round) {
            stale.push(
              `worker ${worker} round ${round}: read version ${read?.refKey} (round ${read?.get('round')}), put ${put.refKey}`,
            );
          }
        }
      }),
    );
    const deltas = await watch.delta();
    const [primary, replica] = deltas.servers as [
      StatementDeltas['servers'][0],
      StatementDeltas['servers'][0],
    ];
    // The SDK coalesces: one statement may read for several calls, so statements are compared,
    // not calls. The primary's SELECTs count as reads, the puts' own lookups among them.
    const replicaReads = replica.selects - replica.gtidWaits - probes(deltas);
    const share = replicaReads / (replicaReads + primary.selects);
    console.log(
      `      ${WORKERS * ROUNDS} puts each read back (find, where) through 2 servers: ${stale.length} stale; ` +
        `replica Com_select ${replica.selects} (${replica.gtidWaits} MASTER_GTID_WAIT, ≥ ${replicaReads} reads), ` +
        `primary Com_select ${primary.selects} (the puts' SELECTs too): ≥ ${(share * 100).toFixed(0)}% of read statements on the replica, ` +
        `${(deltas.elapsedMs / 1000).toFixed(1)} s`,
    );
    expect(stale).to.deep.equal([]);
    // Without this the loop would prove nothing of replicas: reads that all ran on the primary
    // would leave the replica its probes only (a share near 0).
    expect(share, 'share of read statements on the replica').to.be.greaterThan(0.3);
    expect(store.transport.session.current, 'the session token kept').to.match(/^1:0=/);
  });

  it("consistency: 'strong' on a call reads the primary; the same reads with the default run on the replica", async () => {
    const records = await Promise.all(
      Array.from({ length: 8 }, (_, i) => Rate.put(rateValues(200 + i, 'suite', '2026-07-01'))),
    );
    await set.waitForReplicaToCatchUp(set.replicas[0]!);
    const READS = 200;
    const readAll = async (options: { consistency?: 'strong' }) => {
      const watch = await statements();
      for (let i = 0; i < READS; i += 1) {
        const found = await Rate.find(records[i % records.length]!.uuid, options);
        expect(found?.uuid).to.equal(records[i % records.length]!.uuid);
      }
      return watch.delta();
    };
    const strong = await readAll({ consistency: 'strong' });
    const session = await readAll({});
    const [strongPrimary, strongReplica] = strong.servers;
    const [, sessionReplica] = session.servers;
    console.log(
      `      ${READS} finds, strong: replica Com_select ${strongReplica!.selects} (the lag probes alone may make ${probes(strong)}), primary ${strongPrimary!.selects}; ` +
        `default (session): replica Com_select ${sessionReplica!.selects}`,
    );
    expect(strongReplica!.selects, 'strong reads on the replica').to.be.at.most(probes(strong));
    expect(strongPrimary!.selects).to.be.at.least(READS);
    expect(sessionReplica!.selects - sessionReplica!.gtidWaits - probes(session)).to.be.at.least(
      READS * 0.9,
    );
  });
});
