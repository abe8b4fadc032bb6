// Read-your-writes over two partitions, each a primary with a replica of its own (issue 53),
// their GTIDs in distinct domains as the consistency guide asks: a create's content and primary
// index commit on one partition, and the rows of an index sharded on another field may land on
// the other, so its session token must name the commits on both, and a Where on that index
// through another server must find the record and its base cell at once.
import { expect } from 'chai';
import { FieldType, type ModelDefinition, Replica_State } from '@shameless/proto';
import {
  type ReplicatedMariaDb,
  type StatementCounts,
  startReplicatedMariaDb,
  watchStatements,
} from '@shameless/testkit';
import {
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
  unpack,
} from '../support/storeFixture.js';
import { forEachConcurrently, range } from '../consistency/support.js';
import {
  SESSION_TOKEN,
  callWith,
  probeBound,
  sessionRead,
  waitForReplicaState,
  whereEqual,
  whereWith,
  withDatabase,
} from './support.js';

/** Shards 0-1 on partition 0, 2-3 on partition 1. */
const SHARDS = 4;
/** The partition of a shardOn value. */
const partitionOf = (value: number) => Math.floor((value % SHARDS) / 2);

/** Trips, sharded on their id; an index by city sharded on the city, so often elsewhere. */
const TRIP: ModelDefinition = {
  name: 'trip',
  primaryIndex: {
    name: '',
    fields: [{ name: 'trip_id', type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: 'trip_id',
  },
  secondaryIndices: [
    {
      name: 'by_city',
      fields: [
        { name: 'city_id', type: FieldType.FIELD_TYPE_INTEGER },
        { name: 'trip_id', type: FieldType.FIELD_TYPE_INTEGER },
      ],
      shardOn: 'city_id',
    },
  ],
  cells: [],
};

describe('read replicas over two partitions: a create read back through another server (issue 53)', function () {
  this.timeout(120_000);
  let sets: ReplicatedMariaDb[] = [];
  let a: StoreFixture;
  let b: StoreFixture;

  before(async () => {
    // Each partition's primary writes GTIDs in a domain of its own.
    sets = await Promise.all(
      [1, 2].map((gtidDomainId) =>
        startReplicatedMariaDb({
          replicas: 1,
          gtidDomainId,
          extraArgs: ['--innodb-flush-log-at-trx-commit=2'],
        }),
      ),
    );
    const serverWith = () =>
      startStoreFixture({
        partitionUrls: sets.map((set) => withDatabase(set.primary.url, 'parts')),
        replicas: sets.map((set, partition) => ({
          partition,
          url: withDatabase(set.replicas[0]!.url, 'parts'),
        })),
        namespace: 'parts',
        shardsCount: SHARDS,
      });
    a = await serverWith();
    await a.api.defineModel({ model: TRIP });
    b = await serverWith();
    await Promise.all(sets.map((set) => set.waitForReplicaToCatchUp(set.replicas[0]!)));
    for (const partition of [0, 1]) {
      await waitForReplicaState(b.api, Replica_State.STATE_SERVING, 10_000, partition);
    }
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await Promise.all(sets.map((set) => set.destroy()));
    sets = [];
  });

  it('1,000 creates through A, each found at once through B by Where on an index on the other partition and by GetCell: 0 missing', async () => {
    const CREATES = 1000;
    const missing: string[] = [];
    let acrossPartitions = 0;
    const primaries = sets.map((set) => set.primary.url);
    const replicas = sets.map((set) => set.replicas[0]!.url);
    const watch = await watchStatements([...primaries, ...replicas]);
    await forEachConcurrently(range(CREATES), 16, async (i) => {
      // City i + (i % 4): on the trip's partition for half the trips, on the other for half.
      const values = { trip_id: i, city_id: i + (i % 4), i };
      const across = partitionOf(values.city_id) !== partitionOf(values.trip_id);
      if (across) acrossPartitions += 1;
      const put = await callWith(a.api.client, a.api.client.put, {
        model: 'trip',
        values: pack(values),
        requestId: requestId(),
      });
      const { uuid } = put.response;
      const token = put.trailers[SESSION_TOKEN];
      // Its commits on each partition it wrote, each in that partition's domain.
      const named = across ? /^1:0=1-\d+-\d+;1=2-\d+-\d+$/ : /^1:(0=1|1=2)-\d+-\d+$/;
      if (!named.test(token ?? '')) missing.push(`create ${i}: token ${token}`);
      const pages = await whereWith(
        b.api,
        whereEqual('trip', 'by_city', { city_id: values.city_id, trip_id: i }),
        sessionRead(token),
      );
      const found = pages.flatMap((page) => page.records);
      if (
        found.length !== 1 ||
        found[0]!.uuid !== uuid ||
        unpack(found[0]!.cells[0]!.body).i !== i
      ) {
        missing.push(
          `create ${i} (${across ? 'index by city on the other partition' : 'one partition'}): Where found ${found.length}`,
        );
      }
      const read = await callWith(
        b.api.client,
        b.api.client.getCell,
        { model: 'trip', uuid, cell: 'base' },
        sessionRead(token),
      ).catch((error: Error) => error);
      if (read instanceof Error) missing.push(`create ${i}: GetCell ${read.message}`);
    });
    console.log(
      `      ${CREATES} creates (${acrossPartitions} with their index by city on the other partition), read back through the other server: ${missing.length} missing`,
    );
    const deltas = await watch.delta();
    const sum = (counts: readonly StatementCounts[], of: (counts: StatementCounts) => number) =>
      counts.reduce((total, each) => total + of(each), 0);
    const primarySelects = sum(deltas.servers.slice(0, 2), (each) => each.selects);
    const onReplicas = deltas.servers.slice(2);
    // Two servers probe each replica every 250 ms (the default --replica-check-ms).
    const replicaReads =
      sum(onReplicas, (each) => each.selects - each.gtidWaits) -
      2 * probeBound(deltas.elapsedMs, 250, 2);
    const share = replicaReads / (replicaReads + primarySelects);
    console.log(
      `      replicas: Com_select ${sum(onReplicas, (each) => each.selects)} (${sum(onReplicas, (each) => each.gtidWaits)} MASTER_GTID_WAIT); ` +
        `primaries: ${primarySelects} (the creates' own SELECTs too): ≥ ${(share * 100).toFixed(0)}% of read statements on the replicas`,
    );
    expect(missing).to.deep.equal([]);
    // The reads ran on the replicas, most of them: else the test would prove nothing of them.
    expect(share).to.be.greaterThan(0.3);
    expect(acrossPartitions).to.equal(CREATES / 2);
  });
});
