// SPEC §4.2, no lost or duplicate versions: concurrent appends to one cell through two
// `shameless serve` processes produce ref_keys 0..n-1, one per acknowledged write; concurrent
// writes with the same expectedRefKey let exactly one through and answer ABORTED to the rest.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { WriteMode, type WriteCellResponse } from '@shameless/proto';
import { pack, unpack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  RATE,
  codeName,
  contentShardOf,
  contentTable,
  grpcCode,
  latencySummary,
  newRequestId,
  range,
} from './support.js';

const SHARDS = 4;
const WRITERS = 32;
const WRITES_PER_WRITER = 25;

describe('consistency: no lost or duplicate versions (§4.2)', function () {
  this.timeout(120_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.create(SHARDS);
    await Promise.all([cluster.start(0), cluster.start(1)]);
    await cluster.api(0).defineModel({ model: RATE });
    await cluster.api(1).describeStore({});
  });
  after(() => cluster?.close());

  const createRecord = async (hotelId: number) => {
    const put = await cluster.api(0).put({
      model: 'rate',
      values: pack({ hotel_id: hotelId, room_type: 'r', check_in_date: 'd', gateway: 'g' }),
      requestId: newRequestId('create'),
    });
    return put.uuid;
  };

  const versionRows = async (uuid: string, cell: string) => {
    const table = contentTable(contentShardOf(uuid, SHARDS));
    return cluster.query<{ id: number; ref_key: number; request_id: string; body: Buffer }[]>(
      `SELECT id, ref_key, request_id, body FROM \`${table}\` WHERE uuid = ? AND column_name = ? ORDER BY ref_key`,
      [uuid, cell],
    );
  };

  it('concurrent appends to one cell get ref_keys 0..n-1, one per acknowledged write', async () => {
    const uuid = await createRecord(1);
    // For comparison: one writer alone, no contention.
    const alone: number[] = [];
    for (const n of range(100)) {
      const sent = performance.now();
      await cluster.api(0).writeCell({
        model: 'rate',
        uuid,
        cell: 'base',
        body: pack({ alone: n }),
        mode: WriteMode.WRITE_MODE_MERGE,
        requestId: newRequestId('alone'),
      });
      alone.push(performance.now() - sent);
    }
    console.log(`      one writer alone: WriteCell ${latencySummary(alone)}`);
    const acks: { requestId: string; writer: number; n: number; response: WriteCellResponse }[] =
      [];
    const failures: string[] = [];
    const latencies: number[] = [];
    const started = Date.now();
    await Promise.all(
      range(WRITERS).map(async (writer) => {
        const api = cluster.api(writer % 2);
        for (const n of range(WRITES_PER_WRITER)) {
          const requestId = newRequestId(`a${writer}`);
          const sent = performance.now();
          try {
            const response = await api.writeCell({
              model: 'rate',
              uuid,
              cell: 'meta',
              body: pack({ [`w${writer}`]: n, last: writer }),
              // Half merge into the latest version, half replace it: both append.
              mode: n % 2 ? WriteMode.WRITE_MODE_MERGE : WriteMode.WRITE_MODE_REPLACE,
              requestId,
            });
            acks.push({ requestId, writer, n, response });
            latencies.push(performance.now() - sent);
          } catch (error) {
            failures.push(`writer ${writer} #${n}: ${codeName(grpcCode(error))}`);
          }
        }
      }),
    );
    const elapsed = Date.now() - started;
    console.log(
      `      appends to one cell: ${acks.length} in ${elapsed} ms (${Math.round((acks.length * 1000) / elapsed)} writes/s, ${WRITERS} writers, 2 servers, WriteCell ${latencySummary(latencies)})`,
    );
    expect(failures).to.deep.equal([]);

    const rows = await versionRows(uuid, 'meta');
    expect(rows.map((row) => Number(row.ref_key))).to.deep.equal(range(acks.length));
    expect(rows.map((row) => row.request_id).sort()).to.deep.equal(
      acks.map((ack) => ack.requestId).sort(),
    );
    const byRequest = new Map(rows.map((row) => [row.request_id, row]));
    for (const ack of acks) {
      const row = byRequest.get(ack.requestId)!;
      expect(ack.response.replayed).to.equal(false);
      expect(ack.response.cell!.refKey).to.equal(Number(row.ref_key));
      expect(ack.response.cell!.id).to.equal(BigInt(row.id));
      expect(unpack(row.body).last).to.equal(ack.writer);
    }
    // Each version was computed from the one right before it: a merge is exactly the previous
    // body plus its keys (no writer read a stale latest version), a replace is its own body.
    for (const [i, row] of rows.entries()) {
      const ack = acks.find((a) => a.requestId === row.request_id)!;
      const own = { [`w${ack.writer}`]: ack.n, last: ack.writer };
      const merged = ack.n % 2 === 1;
      const previous = i > 0 ? unpack(rows[i - 1]!.body) : {};
      expect(unpack(row.body), `body of version ${i}`).to.deep.equal(
        merged ? { ...previous, ...own } : own,
      );
    }
  });

  it('concurrent writes with the same expectedRefKey: exactly one wins, the rest get ABORTED', async () => {
    const uuid = await createRecord(2);
    const rounds = 8;
    const contenders = 16;
    const winners: string[] = [];
    for (const round of range(rounds)) {
      const expectedRefKey = round - 1; // -1: the meta cell has no version yet
      const results = await Promise.allSettled(
        range(contenders).map((c) => {
          const requestId = newRequestId(`c${round}-${c}`);
          return cluster
            .api(c % 2)
            .writeCell({
              model: 'rate',
              uuid,
              cell: 'meta',
              body: pack({ round, contender: c }),
              mode: WriteMode.WRITE_MODE_REPLACE,
              expectedRefKey,
              requestId,
            })
            .then((response) => ({ requestId, response }));
        }),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won, `winners of round ${round}`).to.have.length(1);
      expect(lost.map((r) => codeName(grpcCode(r.reason)))).to.deep.equal(
        Array(contenders - 1).fill(codeName(status.ABORTED)),
      );
      const winner = (
        won[0] as PromiseFulfilledResult<{ requestId: string; response: WriteCellResponse }>
      ).value;
      expect(winner.response.cell!.refKey).to.equal(round);
      winners.push(winner.requestId);
    }
    const rows = await versionRows(uuid, 'meta');
    expect(rows.map((row) => Number(row.ref_key))).to.deep.equal(range(rounds));
    expect(rows.map((row) => row.request_id)).to.deep.equal(winners);

    // A stale expectedRefKey is refused, a current one accepted.
    const stale = await cluster
      .api(1)
      .writeCell({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ stale: true }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        expectedRefKey: rounds - 2,
        requestId: newRequestId('stale'),
      })
      .then(
        () => 'accepted',
        (error: unknown) => codeName(grpcCode(error)),
      );
    expect(stale).to.equal(codeName(status.ABORTED));
    expect(await versionRows(uuid, 'meta')).to.have.length(rounds);
  });
});
