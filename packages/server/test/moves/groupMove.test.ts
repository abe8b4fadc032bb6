// Issue 54's "consumer cursors stay valid" for a live consumer group: a store of two partitions
// served by two servers, a group of two members consuming through one of them, a writer writing
// cells through both before, during and after a move of two shards to a third database. Every
// acknowledged cell is handled by the group; the moved shards' cursor rows continue on the
// target (epoch bumped, cursor at or past the source's at the cut-over); only the moved shards
// may see a cell delivered again.
import { type MoveShardsProgress, WriteMode } from '@shameless/proto';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { RATE, codeName, contentShardOf, grpcCode, newRequestId } from '../consistency/support.js';
import { GroupMember, timeUntil } from '../support/groupMember.js';
import { type StoreFixture, pack, startStoreFixture } from '../support/storeFixture.js';

const NS = 'gmv';
const SHARDS = 8;
/** Shards 0-3 live on partition 0, 4-7 on partition 1; 2 and 3 move to the third database. */
const MOVED = [2, 3];
const GROUP = 'movers';
const groupShards = `${NS}_shameless_group_shards`;

interface CursorRow {
  shard: number;
  cursor: number;
  epoch: number;
  owner: string | null;
}

async function cursorRows(pool: mysql.Pool, shards: readonly number[]): Promise<CursorRow[]> {
  const [rows] = await pool.query<mysql.RowDataPacket[]>(
    `SELECT shard, \`cursor\` AS c, epoch, owner FROM \`${groupShards}\`
      WHERE model = 'rate' AND group_name = ? AND shard IN (?) ORDER BY shard`,
    [GROUP, shards],
  );
  return rows.map((row) => ({
    shard: Number(row.shard),
    cursor: Number(row.c),
    epoch: Number(row.epoch),
    owner: row.owner as string | null,
  }));
}

describe('move-shards: a live consumer group across a move', function () {
  this.timeout(60_000);
  let a: StoreFixture;
  let b: StoreFixture;
  let target: TestDatabases;
  const members: GroupMember[] = [];
  const pools: mysql.Pool[] = [];
  let stopLoad: (() => Promise<void>) | undefined;

  before(async () => {
    a = await startStoreFixture({ shardsCount: SHARDS, partitionCount: 2, namespace: NS });
    await a.api.defineModel({ model: RATE });
    b = await startStoreFixture({
      shardsCount: SHARDS,
      partitionUrls: a.partitionUrls,
      namespace: NS,
    });
    target = await createTestDatabases(1);
  });
  after(async () => {
    if (stopLoad) await stopLoad();
    for (const member of members) if (!member.ended) member.cancel();
    await Promise.allSettled(pools.map((pool) => pool.end()));
    await b?.close();
    await a?.close();
    await target?.drop();
  });

  it('handles every acknowledged cell; the moved shards continue from their cursors on the target; doubles only on the moved shards', async () => {
    // One record in every content shard at least.
    const records: { uuid: string; shard: number }[] = [];
    for (
      let hotel = 0;
      records.length < 40 || new Set(records.map((r) => r.shard)).size < SHARDS;
      hotel++
    ) {
      const { uuid } = await (hotel % 2 ? b : a).api.put({
        model: 'rate',
        values: pack({
          hotel_id: hotel,
          room_type: 'suite',
          check_in_date: '2024-05-01',
          gateway: 'gw',
        }),
        requestId: newRequestId('gput'),
      });
      records.push({ uuid, shard: contentShardOf(uuid, SHARDS) });
      expect(hotel).to.be.below(400);
    }

    // Two members through server A, each acknowledging every delivery at once.
    for (const memberId of ['one', 'two']) {
      members.push(await GroupMember.join(a.api, { group: GROUP, memberId }, { autoAck: true }));
    }
    await timeUntil(
      () => members.every((member) => member.owned.size === SHARDS / 2),
      15_000,
      'the two members owning 4 shards each',
    );

    // The writer: WriteCells (with request ids) to random records through both servers.
    const acked: { key: string; shard: number; phase: 'before' | 'during' | 'after' }[] = [];
    const refused: string[] = [];
    let phase: 'before' | 'during' | 'after' = 'before';
    let running = true;
    let turn = 0;
    const writer = async () => {
      while (running) {
        const record = records[Math.floor(Math.random() * records.length)]!;
        const requestId = newRequestId('gcell');
        const at = phase;
        try {
          const { cell } = await (turn++ % 2 ? b : a).api.writeCell({
            model: 'rate',
            uuid: record.uuid,
            cell: 'meta',
            body: pack({ requestId, at }),
            mode: WriteMode.WRITE_MODE_REPLACE,
            requestId,
          });
          acked.push({
            key: `${record.uuid}/meta/${cell!.refKey}`,
            shard: record.shard,
            phase: at,
          });
        } catch (error) {
          refused.push(`${requestId}: ${codeName(grpcCode(error))} ${(error as Error).message}`);
        }
      }
    };
    const writers = Array.from({ length: 8 }, writer);
    stopLoad = async () => {
      running = false;
      await Promise.all(writers);
    };
    await timeUntil(() => acked.length >= 300, 20_000, '300 writes before the move');

    // The moved shards' cursor rows on the source (partition 0) before the move.
    const source = mysql.createPool({ uri: a.partitionUrls[0]!, connectionLimit: 2 });
    const targetPool = mysql.createPool({ uri: target.urls[0]!, connectionLimit: 2 });
    pools.push(source, targetPool);
    // Cursors are written about once a second: the move starts once the moved shards' have moved.
    await timeUntil(
      async () => (await cursorRows(source, MOVED)).every((row) => row.cursor > 0),
      10_000,
      "the moved shards' cursors to move before the move",
    );
    const beforeMove = await cursorRows(source, MOVED);
    expect(beforeMove.map((row) => row.shard)).to.deep.equal(MOVED);

    // The move, through the MoveShards stream to server A, under the load.
    phase = 'during';
    const moveStarted = Date.now();
    const progress: MoveShardsProgress[] = [];
    const stream = a.api.client.moveShards({
      action: {
        $case: 'move',
        move: { firstShard: MOVED[0]!, lastShard: MOVED.at(-1)!, to: target.urls[0]! },
      },
    });
    for await (const message of stream as AsyncIterable<MoveShardsProgress>) {
      progress.push(message);
    }
    phase = 'after';
    const moveMs = Date.now() - moveStarted;
    const duringCount = acked.filter((ack) => ack.phase === 'during').length;

    // Writes keep landing on the moved shards after the move.
    await timeUntil(
      () => acked.filter((ack) => ack.phase === 'after' && MOVED.includes(ack.shard)).length >= 100,
      20_000,
      'writes to the moved shards after the move',
    );
    await stopLoad();
    stopLoad = undefined;

    // Every acknowledged cell handled by the group at least once.
    const deliveredKeys = () => {
      const counts = new Map<string, { shard: number; id: number; count: number }>();
      for (const member of members) {
        for (const { cell } of member.deliveries) {
          const key = `${cell!.uuid}/${cell!.name}/${cell!.refKey}`;
          const entry = counts.get(key) ?? { shard: cell!.shard, id: Number(cell!.id), count: 0 };
          entry.count += 1;
          counts.set(key, entry);
        }
      }
      return counts;
    };
    const handled = () => {
      const keys = new Set<string>();
      for (const member of members) {
        for (const { cell } of member.deliveries) {
          if (member.handled.has(`${cell!.shard}/${cell!.id}`)) {
            keys.add(`${cell!.uuid}/${cell!.name}/${cell!.refKey}`);
          }
        }
      }
      return keys;
    };
    const waitedMs = await timeUntil(
      () => {
        const keys = handled();
        return acked.every((ack) => keys.has(ack.key));
      },
      20_000,
      'the group to handle every acknowledged cell',
    ).catch((error: Error) => {
      const keys = handled();
      const missing = acked.filter((ack) => !keys.has(ack.key));
      const byShard = new Map<number, number>();
      for (const ack of missing) byShard.set(ack.shard, (byShard.get(ack.shard) ?? 0) + 1);
      throw new Error(
        `${error.message}: ${missing.length} of ${acked.length} never handled, per shard ${JSON.stringify([...byShard])}; ` +
          `members own ${members.map((m) => JSON.stringify([...m.owned.keys()])).join(' ')}`,
      );
    });

    // The moved shards' cursor rows: fenced on the source at the cut-over, continued on the target.
    const sourceAfter = await cursorRows(source, MOVED);
    // Cursors are written about once a second: wait for the target's to move past the cut-over.
    await timeUntil(
      async () => {
        const rows = await cursorRows(targetPool, MOVED);
        return (
          rows.length === MOVED.length &&
          rows.every((row, i) => row.cursor > sourceAfter[i]!.cursor)
        );
      },
      10_000,
      "the target's cursors to move on past the cut-over's",
    );
    const targetAfter = await cursorRows(targetPool, MOVED);
    for (const [i, shard] of MOVED.entries()) {
      const was = beforeMove[i]!;
      const fenced = sourceAfter[i]!;
      const now = targetAfter[i]!;
      expect(fenced.shard, `shard ${shard}`).to.equal(shard);
      expect(fenced.owner, `shard ${shard}: the source's row fenced`).to.equal(null);
      expect(fenced.epoch, `shard ${shard}: the source's epoch bumped`).to.be.greaterThan(
        was.epoch,
      );
      expect(fenced.cursor, `shard ${shard}: the source's cursor kept`).to.be.at.least(was.cursor);
      expect(now.epoch, `shard ${shard}: the target's epoch`).to.be.at.least(fenced.epoch);
      expect(now.cursor, `shard ${shard}: the target's cursor`).to.be.at.least(fenced.cursor);
    }

    // Doubles: cells delivered more than once, per shard.
    const doubles = new Map<number, number>();
    let deliveries = 0;
    /** Doubled cells at or below the cursor their shard was fenced at: none may be. */
    const belowFence: string[] = [];
    for (const { shard, id, count } of deliveredKeys().values()) {
      deliveries += count;
      if (count > 1) doubles.set(shard, (doubles.get(shard) ?? 0) + count - 1);
      const fencedAt = sourceAfter[MOVED.indexOf(shard)]?.cursor;
      if (count > 1 && fencedAt !== undefined && id <= fencedAt) belowFence.push(`${shard}/${id}`);
    }
    const shardsOf = (phaseOf: string) => acked.filter((ack) => ack.phase === phaseOf).length;
    console.log(
      `      writes acknowledged: ${shardsOf('before')} before, ${duringCount} during, ${shardsOf('after')} after the move; ${refused.length} refused`,
    );
    console.log(
      `      moved shards ${MOVED.join(', ')}: moved in ${moveMs} ms (${progress.length} progress messages); all handled ${waitedMs} ms after the last write; ${deliveries} deliveries`,
    );
    for (const [i, shard] of MOVED.entries()) {
      console.log(
        `      shard ${shard}: cursor ${beforeMove[i]!.cursor} epoch ${beforeMove[i]!.epoch} before; source fenced at cursor ${sourceAfter[i]!.cursor} epoch ${sourceAfter[i]!.epoch}; target now cursor ${targetAfter[i]!.cursor} epoch ${targetAfter[i]!.epoch} owner ${targetAfter[i]!.owner}`,
      );
    }
    console.log(
      `      doubles per shard: ${JSON.stringify(Object.fromEntries(doubles))} (moved: ${MOVED.join(', ')}), every one past its shard's fenced cursor`,
    );
    for (const shard of doubles.keys()) {
      expect(MOVED, `a double on shard ${shard}, which did not move`).to.include(shard);
    }
    expect(belowFence, 'cells redelivered though at or below the fenced cursor').to.deep.equal([]);
    if (refused.length) console.log(`      refused: ${refused.slice(0, 5).join('; ')}`);
  });
});
