// SPEC §4.1, race-free upsert: 32 clients spread over two `shameless serve` processes Put the
// same 50 primary-index tuples at the same time, each with its own body. Every tuple must end
// up as one record whose base cell has exactly one version per acknowledged Put, and nothing
// may be written that no index reaches.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import type { PutResponse } from '@shameless/proto';
import { pack, unpack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  RATE,
  codeName,
  contentShardOf,
  grpcCode,
  latencySummary,
  newRequestId,
  range,
  versionsByCell,
  whereHotel,
} from './support.js';

const CLIENTS = 32;
const TUPLES = 50;
const SHARDS = 4;

interface Ack {
  client: number;
  requestId: string;
  response: PutResponse;
}

describe('consistency: race-free upsert (§4.1)', function () {
  this.timeout(120_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.create(SHARDS);
    // Default pools: 16 clients per server racing on one create is what the servers must take.
    await Promise.all([cluster.start(0), cluster.start(1)]);
    await cluster.api(0).defineModel({ model: RATE });
    // DescribeStore reloads the definitions: server 1 knows the model before the race starts.
    await cluster.api(1).describeStore({});
  });
  after(() => cluster?.close());

  const tuple = (t: number) => ({
    hotel_id: 1000 + t,
    room_type: `room-${t % 3}`,
    check_in_date: `2024-01-${String((t % 28) + 1).padStart(2, '0')}`,
  });

  it('32 concurrent clients on 2 servers converge each of 50 tuples on one record', async () => {
    const acks = new Map<number, Ack[]>(range(TUPLES).map((t) => [t, []]));
    const failed: { t: number; client: number; requestId: string; values: Buffer }[] = [];
    const failures: string[] = [];
    const latencies: number[] = [];
    let wedged = false;
    const started = Date.now();
    // Every client walks the tuples in the same order, so all 32 race on each tuple's create.
    await Promise.all(
      range(CLIENTS).map(async (client) => {
        const api = cluster.api(client % 2);
        for (const t of range(TUPLES)) {
          if (wedged) return;
          const requestId = newRequestId(`u${client}`);
          const values = pack({ ...tuple(t), gateway: `gw-${t}`, client, price: client * 100 + t });
          const sent = performance.now();
          try {
            const response = await api.put({ model: 'rate', values, requestId });
            acks.get(t)!.push({ client, requestId, response });
            latencies.push(performance.now() - sent);
          } catch (error) {
            failed.push({ t, client, requestId, values });
            // A server that lets a call run into its deadline is stuck: stop rather than wait on
            // it for every remaining Put.
            if (grpcCode(error) === status.DEADLINE_EXCEEDED) wedged = true;
            failures.push(
              `tuple ${t} client ${client}: ${codeName(grpcCode(error))} ${(error as { details?: string }).details}`,
            );
          }
        }
      }),
    );
    const elapsed = Date.now() - started;
    const acknowledged = [...acks.values()].reduce((sum, list) => sum + list.length, 0);
    console.log(
      `      upsert: ${acknowledged} acknowledged Puts, ${failed.length} failed, in ${elapsed} ms (${Math.round((acknowledged * 1000) / elapsed)} Puts/s; acknowledged Put ${latencySummary(latencies)})`,
    );
    expect(wedged, `a server stopped answering: ${failures.slice(0, 3).join('; ')}`).to.equal(
      false,
    );
    // A failed Put is retried as the contract allows (same requestId, same values), through
    // the other server; the invariants below then hold for every acknowledged Put.
    for (const { t, client, requestId, values } of failed) {
      const response = await cluster
        .api((client + 1) % 2)
        .put({ model: 'rate', values, requestId });
      acks.get(t)!.push({ client, requestId, response });
    }

    const primaryRows = await cluster.indexRows('primary');
    const secondaryRows = await cluster.indexRows('secondary');
    const content = await cluster.contentRows();
    const versions = versionsByCell(content);

    // Each tuple is one record, in the primary index and in every acknowledgement.
    expect(primaryRows).to.have.length(TUPLES);
    for (const t of range(TUPLES)) {
      const values = tuple(t);
      const rows = primaryRows.filter(
        (row) =>
          Number(row.hotel_id) === values.hotel_id &&
          row.room_type === values.room_type &&
          row.check_in_date === values.check_in_date,
      );
      expect(rows, `primary rows of tuple ${t}`).to.have.length(1);
      const uuid = String(rows[0]!.uuid);
      const tupleAcks = acks.get(t)!;
      expect(
        new Set(tupleAcks.map((ack) => ack.response.uuid)),
        `uuids acknowledged for tuple ${t}`,
      ).to.deep.equal(new Set(tupleAcks.length ? [uuid] : []));
      expect(
        tupleAcks.filter((ack) => ack.response.created),
        `creates acknowledged for tuple ${t}`,
      ).to.have.length(tupleAcks.length ? 1 : 0);

      // One base version per acknowledged Put: contiguous from 0, each written by one of them.
      const base = versions.get(`${uuid}/base`) ?? [];
      expect(
        base.map((row) => row.refKey),
        `base ref_keys of tuple ${t}`,
      ).to.deep.equal(range(tupleAcks.length));
      expect(new Set(base.map((row) => row.requestId))).to.deep.equal(
        new Set(tupleAcks.map((ack) => ack.requestId)),
      );
      for (const ack of tupleAcks) {
        const row = base.find((version) => version.requestId === ack.requestId)!;
        expect(ack.response.base!.id).to.equal(row.id);
        expect(ack.response.base!.refKey).to.equal(row.refKey);
        expect(ack.response.base!.shard).to.equal(contentShardOf(uuid, SHARDS));
        expect(unpack(row.body).client, 'the body each Put wrote').to.equal(ack.client);
      }
      expect(
        secondaryRows.filter((row) => row.uuid === uuid),
        `secondary rows of tuple ${t}`,
      ).to.have.length(1);
    }

    // No content row that no index reaches (no loser of a create race left anything behind).
    const reachable = new Set(primaryRows.map((row) => String(row.uuid)));
    const orphans = content.filter((row) => !reachable.has(row.uuid));
    expect(orphans.map((row) => `${row.shard}:${row.id}:${row.uuid}`)).to.deep.equal([]);
    expect(content).to.have.length(CLIENTS * TUPLES);

    // Through Where, each tuple's hotel shows exactly its record, with its latest base.
    for (const t of range(TUPLES)) {
      const records = await whereHotel(cluster.api(t % 2), tuple(t).hotel_id);
      expect(records, `Where hotel ${tuple(t).hotel_id}`).to.have.length(1);
      const cells = records[0]!.cells;
      expect(cells.map((cell) => cell.name)).to.deep.equal(['base']);
      expect(cells[0]!.refKey).to.equal(CLIENTS - 1);
    }

    // With pools that large, every Put succeeds the first time.
    expect(failures, 'Puts that failed before their retry').to.deep.equal([]);
  });
});
