// SPEC §4.5, partial failure is invisible: a client streams Puts of fresh tuples into a
// `shameless serve` process that is SIGKILLed at random points and restarted. Whatever a kill
// interrupted, no record is visible through Where without its base cell, no index row points
// to a uuid without one, and no base cell is left that no index reaches; re-sending every
// unacknowledged Put (same requestId, same values) converges on exactly one record per tuple,
// and acknowledged Puts keep what they were acknowledged with.
import { expect } from 'chai';
import type { PutResponse } from '@shameless/proto';
import { pack, unpack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  codeName,
  contentShardOf,
  grpcCode,
  newRequestId,
  range,
  sleep,
  versionsByCell,
  whereHotel,
} from './support.js';

const SHARDS = 4;
const KILLS = 4;
const IN_FLIGHT = 8;
const HOTELS = 8;

interface Attempt {
  values: Record<string, unknown>;
  requestId: string;
  acked?: PutResponse;
  error?: string;
}

describe('consistency: partial failure is invisible (§4.5)', function () {
  this.timeout(120_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.serving(SHARDS);
  });
  after(() => cluster?.close());

  it('SIGKILLs mid-stream leave nothing half-visible, and retries converge', async () => {
    const attempts: Attempt[] = [];
    let up = true;
    let stop = false;
    let serial = 0;
    // Fresh tuples, spread over a few hotels so that Where can list them.
    const nextValues = () => {
      serial += 1;
      return {
        hotel_id: 7000 + (serial % HOTELS),
        room_type: `room-${serial}`,
        check_in_date: '2024-06-01',
        gateway: `gw-${serial % 3}`,
        serial,
      };
    };

    const streamer = async () => {
      while (!stop) {
        if (!up) {
          await sleep(5);
          continue;
        }
        const attempt: Attempt = { values: nextValues(), requestId: newRequestId('crash') };
        attempts.push(attempt);
        try {
          attempt.acked = await cluster.api(0).put({
            model: 'rate',
            values: pack(attempt.values),
            requestId: attempt.requestId,
          });
        } catch (error) {
          attempt.error = codeName(grpcCode(error));
        }
      }
    };
    const streaming = Promise.all(range(IN_FLIGHT).map(streamer));

    const kills: string[] = [];
    for (const k of range(KILLS)) {
      await sleep(150 + Math.random() * 500);
      const before = attempts.length;
      up = false;
      await cluster.crashAndRestart(0);
      kills.push(`kill ${k + 1} after ${before} Puts`);
      up = true;
    }
    await sleep(300);
    stop = true;
    await streaming;

    const unacked = attempts.filter((attempt) => !attempt.acked);
    console.log(
      `      crash: ${attempts.length} Puts, ${attempts.length - unacked.length} acknowledged, ${unacked.length} not ` +
        `(${[...new Set(unacked.map((a) => a.error))].join(', ')}); ${kills.join(', ')}`,
    );
    expect(unacked.length, 'some Puts were cut off by the kills').to.be.greaterThan(0);

    // 1. Nothing is half-visible: every index row reaches a base cell, and so does Where.
    await expectNoIndexRowWithoutBase();
    for (const hotel of range(HOTELS)) {
      const records = await whereHotel(cluster.api(0), 7000 + hotel);
      for (const record of records) {
        expect(
          record.cells.map((cell) => cell.name),
          `record ${record.uuid} through Where`,
        ).to.deep.equal(['base']);
      }
    }

    // What the kills interrupted: Puts that had fully committed (only the answer was lost) and
    // Puts that wrote nothing. A create commits its base cell and its index rows (all on this
    // one partition) in one transaction, so nothing in between can be left.
    const contentBefore = await cluster.contentRows();
    const primaryBefore = new Set((await cluster.indexRows('primary')).map((r) => String(r.uuid)));
    const secondaryBefore = new Set(
      (await cluster.indexRows('secondary')).map((r) => String(r.uuid)),
    );
    const states = { committed: 0, noSecondaryRow: 0, basesOnly: 0, nothing: 0 };
    for (const attempt of unacked) {
      const row = contentBefore.find((r) => r.requestId === attempt.requestId);
      if (!row) states.nothing += 1;
      else if (!primaryBefore.has(row.uuid)) states.basesOnly += 1;
      else if (!secondaryBefore.has(row.uuid)) states.noSecondaryRow += 1;
      else states.committed += 1;
    }
    console.log(`      crash: the unacknowledged Puts had left: ${JSON.stringify(states)}`);
    expect(states.basesOnly, 'base cells without their index rows').to.equal(0);
    expect(states.noSecondaryRow, 'records without their secondary row').to.equal(0);

    // 2. Re-sending every unacknowledged Put, unchanged, converges.
    for (const attempt of unacked) {
      attempt.acked = await cluster.api(0).put({
        model: 'rate',
        values: pack(attempt.values),
        requestId: attempt.requestId,
      });
      expect(
        attempt.acked.created,
        `retry of ${attempt.requestId} creates or replays the create`,
      ).to.equal(true);
      expect(attempt.acked.base!.refKey).to.equal(0);
    }
    await expectNoIndexRowWithoutBase();

    const primary = await cluster.indexRows('primary');
    const secondary = await cluster.indexRows('secondary');
    const versions = versionsByCell(await cluster.contentRows());
    expect(primary).to.have.length(attempts.length);
    for (const attempt of attempts) {
      const rows = primary.filter(
        (row) =>
          Number(row.hotel_id) === attempt.values.hotel_id &&
          row.room_type === attempt.values.room_type,
      );
      expect(rows, `primary rows of ${attempt.requestId}`).to.have.length(1);
      const uuid = String(rows[0]!.uuid);
      expect(uuid).to.equal(attempt.acked!.uuid);
      const base = versions.get(`${uuid}/base`) ?? [];
      // One version: the one the Put was acknowledged with, holding its values.
      expect(base.map((row) => [row.refKey, row.id, row.requestId])).to.deep.equal([
        [0, attempt.acked!.base!.id, attempt.requestId],
      ]);
      expect(attempt.acked!.base!.shard).to.equal(contentShardOf(uuid, SHARDS));
      expect(unpack(base[0]!.body)).to.deep.equal(attempt.values);
      expect(
        secondary.filter((row) => row.uuid === uuid).map((row) => row.gateway),
        `secondary rows of ${attempt.requestId}`,
      ).to.deep.equal([attempt.values.gateway]);
    }
    const reachable = new Set(primary.map((row) => String(row.uuid)));
    const orphans = [...versions.keys()].filter((key) => !reachable.has(key.split('/')[0]!));
    expect(orphans, 'base cells no index reaches').to.deep.equal([]);

    // Where lists exactly the records of each hotel, each with the base it was acknowledged with.
    for (const hotel of range(HOTELS)) {
      const records = await whereHotel(cluster.api(0), 7000 + hotel);
      const expected = attempts.filter((attempt) => attempt.values.hotel_id === 7000 + hotel);
      expect(records.map((record) => record.uuid).sort()).to.deep.equal(
        expected.map((attempt) => attempt.acked!.uuid).sort(),
      );
      for (const record of records) {
        expect(record.cells.map((cell) => cell.name)).to.deep.equal(['base']);
      }
    }
  });

  /** Every row of every index names a uuid whose base cell exists (checked in MySQL). */
  async function expectNoIndexRowWithoutBase() {
    const withBase = new Set(
      (await cluster.contentRows()).filter((row) => row.cell === 'base').map((row) => row.uuid),
    );
    for (const index of ['primary', 'secondary']) {
      const dangling = (await cluster.indexRows(index))
        .map((row) => String(row.uuid))
        .filter((uuid) => !withBase.has(uuid));
      expect(dangling, `${index} index rows without a base cell`).to.deep.equal([]);
    }
  }
});
