// The mover against real MariaDB servers: a store on the local server, its shard moved to a
// database on a second mariadbd the test kit starts. Each test opens a store of its own.
import { expect } from 'chai';
import { type MariaDbServer, startMariaDbServer } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { timeUntil } from '../../support/groupMember.js';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { EngineError, FailedPreconditionError } from '../../../src/engine/base/errors.js';
import { ShardMoveDifferenceError } from '../../../src/engine/moves/moveErrors.js';
import { type MoveProgress, ShardMover } from '../../../src/engine/moves/shardMover.js';
import { movedName } from '../../../src/engine/moves/shardTables.js';
import {
  createGroupCellsTableSql,
  createGroupShardsTableSql,
} from '../../../src/engine/mysql/sql/groupTables.js';
import {
  type MapBox,
  NAMESPACE,
  type TestStore,
  TestHost,
  bigHotelId,
  EVERY_BYTE,
  mapBox,
  openTestStore,
  pack,
  requestId,
  putRate,
  shardTableNames,
  tableRows,
  tablesIn,
  triggersIn,
  writeMeta,
} from './moveHarness.js';

const MOVED = 1;
const content = (shard: number) => `${NAMESPACE}_rate_${String(shard).padStart(6, '0')}`;

describe('shard mover', function () {
  this.timeout(60_000);
  let second: MariaDbServer;
  let targetSql: mysql.Pool | undefined;
  let store: TestStore | undefined;
  const hosts: TestHost[] = [];
  let targetCount = 0;
  let targetUrl: string;

  before(async () => {
    second = await startMariaDbServer();
  });
  after(async () => {
    await second?.destroy();
  });
  beforeEach(async () => {
    store = await openTestStore();
    targetCount += 1;
    targetUrl = `${second.url}/move_target_${process.pid}_${targetCount}`;
  });
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.close()));
    await targetSql?.end();
    targetSql = undefined;
    await store?.close();
  });

  const hostOf = (box: MapBox) => {
    const host = new TestHost(store!.engine, box);
    hosts.push(host);
    return host;
  };
  const target = () =>
    (targetSql ??= mysql.createPool({
      uri: targetUrl,
      connectionLimit: 4,
      supportBigNumbers: true,
      bigNumberStrings: true,
    }));

  /** Records in every shard, with big ids in the moved shard's content table, several versions each. */
  async function seed(records = 40): Promise<string[]> {
    // Ids past 2^53 in the moved shard's content: a copy that went through doubles would lose them.
    await store!.sql.query(`ALTER TABLE \`${content(MOVED)}\` AUTO_INCREMENT = 9007199254740993`);
    const uuids: string[] = [];
    const inMoved = () =>
      uuids.filter((uuid) => store!.engine.layout.contentShard(uuid) === MOVED).length;
    // A record's uuid, so its content shard, is random: records are added until at least two
    // have their content in the moved shard (the tests plant a difference in its fourth row and
    // write to one of its records), so that no test depends on the draw.
    for (let n = 0; n < records || inMoved() < 2; n++) {
      uuids.push(await putRate(store!.engine, bigHotelId(n % 4, n), `room${n}`));
    }
    for (const [i, uuid] of uuids.entries()) {
      await writeMeta(store!.engine, uuid, i);
      await writeMeta(store!.engine, uuid, i + 1000);
    }
    return uuids;
  }

  /** Every table of the shard equal, row for row, on the frozen source and the target. */
  async function expectSameRows(shard: number, moveId: number): Promise<number> {
    let rows = 0;
    for (const table of shardTableNames(store!, shard)) {
      const source = await tableRows(store!.sql, movedName(table, moveId));
      const copied = await tableRows(target(), table);
      expect(copied, table).to.deep.equal(source);
      rows += source.length;
    }
    return rows;
  }

  /** How many versions of the record's meta cell the moved shard's copy on the target has. */
  async function metaVersionsOnTarget(uuid: string): Promise<number> {
    const [[written]] = (await target().query(
      `SELECT COUNT(*) AS n FROM \`${content(MOVED)}\` WHERE uuid = ? AND column_name = 'meta'`,
      [uuid],
    )) as unknown as [{ n: number }[]];
    return Number(written!.n);
  }

  /**
   * The same command run again, to the end: the shard cut over, published once, every row exact
   * on both sides, and `versions` versions of the record's meta cell on the target.
   */
  async function runAgainToTheEnd(box: MapBox, uuid: string, versions: number, why: string) {
    const [done] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    expect(done).to.include({ phase: 'cut_over' });
    expect(box.published).to.have.length(1);
    expect(await expectSameRows(MOVED, done!.moveId)).to.be.greaterThan(0);
    expect(await metaVersionsOnTarget(uuid), why).to.equal(versions);
    return done!;
  }

  it('moves a shard to a second server: every row exact, writes during the move included, group rows fenced; finish drops the source', async () => {
    const uuids = await seed();
    const ofShard = uuids.filter((uuid) => store!.engine.layout.contentShard(uuid) === MOVED);
    expect(ofShard.length).to.be.greaterThan(0);
    // A consumer group's rows of the shard, as the groups' room makes them.
    const layout = store!.engine.layout;
    await store!.sql.query(createGroupShardsTableSql(layout.groupShardsTable));
    await store!.sql.query(createGroupCellsTableSql(layout.groupCellsTable));
    await store!.sql.query(
      `INSERT INTO \`${layout.groupShardsTable}\` VALUES ('rate', 'g', ?, 5, 'member-a', 7, '2026-11-28 10:00:00.123456'), ('rate', 'g', 0, 1, 'member-a', 3, NOW(6))`,
      [MOVED],
    );
    await store!.sql.query(
      `INSERT INTO \`${layout.groupCellsTable}\` VALUES ('rate', 'g', ?, 9007199254740993, 2, 'boom', NULL, 0, NOW(6))`,
      [MOVED],
    );

    // Writes keep coming until the cut-over holds them: cells of the shard's records, and new
    // records whose index rows land in it (the triggers' business).
    let writing = true;
    let acknowledged = 0;
    const writer = (async () => {
      let n = 0;
      while (writing) {
        n += 1;
        try {
          await writeMeta(store!.engine, ofShard[n % ofShard.length]!, 5000 + n);
          if (n % 3 === 0) await putRate(store!.engine, bigHotelId(MOVED, 1000 + n), 'late');
          acknowledged += 1;
        } catch {
          // A write caught by the cut-over fails (the engine has no routing by the map yet).
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const events: MoveProgress[] = [];
    const box = mapBox(store!.url);
    let atCreated = 0;
    let atLocked = 0;
    const mover = new ShardMover(hostOf(box), {
      onProgress: (event) => {
        events.push(event);
        if (event.step === 'created') atCreated = acknowledged;
        if (event.step === 'locked') {
          atLocked = acknowledged;
          writing = false;
        }
      },
    });
    const [moved] = await mover.move({ shards: [MOVED], to: targetUrl });
    await writer;
    console.log(`      cut-over hold under writes: ${JSON.stringify(mover.lastHold)}`);
    // Writes were acknowledged between the change capture's start and the cut-over's hold.
    expect(atLocked).to.be.greaterThan(atCreated);
    for (const event of events) expect(event.lag, event.step).to.be.at.least(0);
    expect(moved).to.include({ shard: MOVED, source: 0, target: 1, phase: 'cut_over' });
    expect(moved!.holdMs).to.be.a('number');
    const phases = [...new Set(events.map((event) => event.step))];
    expect(phases).to.include.members([
      'created',
      'copied',
      'caught_up',
      'verified',
      'locked',
      'published',
      'cut_over',
    ]);

    // The map's next version names the target for the shard; the source tables are renamed away.
    expect(box.published).to.have.length(1);
    expect(box.map.version).to.equal(1);
    expect(box.map.partitionOf(MOVED)).to.equal(1);
    expect(box.map.locations).to.deep.equal([store!.url, targetUrl]);
    const rows = await expectSameRows(MOVED, moved!.moveId);
    expect(rows).to.be.greaterThan(ofShard.length * 3);
    const sourceTables = await tablesIn(store!.sql);
    for (const table of shardTableNames(store!, MOVED)) expect(sourceTables).not.to.include(table);
    // The target is a partition of the store: its record says so.
    const [record] = (await target().query(
      `SELECT partition_index, shards_count FROM \`${layout.storeTable}\``,
    )) as unknown as [{ partition_index: number; shards_count: number }[]];
    expect(record[0]).to.deep.equal({ partition_index: 1, shards_count: 4 });

    // Group rows: the target's leased anew one epoch on, the source's fenced the same way.
    const [targetShards] = (await target().query(
      `SELECT shard, \`cursor\`, owner, epoch, CAST(updated_at AS CHAR) AS updated FROM \`${layout.groupShardsTable}\``,
    )) as unknown as [Record<string, unknown>[]];
    // (BIGINT UNSIGNED read as strings: the pool's bigNumberStrings.)
    expect(targetShards).to.deep.equal([
      { shard: MOVED, cursor: '5', owner: null, epoch: '8', updated: '2026-11-28 10:00:00.123456' },
    ]);
    const [sourceShards] = (await store!.sql.query(
      `SELECT shard, owner, epoch FROM \`${layout.groupShardsTable}\` ORDER BY shard`,
    )) as unknown as [Record<string, unknown>[]];
    expect(sourceShards).to.deep.equal([
      { shard: 0, owner: 'member-a', epoch: '3' },
      { shard: MOVED, owner: null, epoch: '8' },
    ]);
    const [targetCells] = (await target().query(
      `SELECT cell_id, error FROM \`${layout.groupCellsTable}\``,
    )) as unknown as [Record<string, unknown>[]];
    expect(targetCells).to.deep.equal([{ cell_id: '9007199254740993', error: 'boom' }]);

    const [finished] = await new ShardMover(hostOf(box)).finish();
    expect(finished).to.include({ shard: MOVED, phase: 'finished' });
    const left = await tablesIn(store!.sql);
    for (const table of shardTableNames(store!, MOVED)) {
      expect(left).not.to.include(movedName(table, moved!.moveId));
    }
    expect(await triggersIn(store!.sql)).to.deep.equal([]);
    // The other shards were never touched.
    expect(left).to.include(content(0));
  });

  it('holds a write during the cut-over; it then fails with 1146 on the source (the fence), and the hold is measured', async () => {
    await seed(8);
    const writer = await mysql.createConnection({ uri: store!.url });
    let held: Promise<unknown> | undefined;
    let heldSettledAt = 0;
    let lockedAt = 0;
    const box = mapBox(store!.url);
    try {
      let pendingWhileHeld = false;
      const mover = new ShardMover(hostOf(box), {
        onProgress: async (event) => {
          if (event.step !== 'locked') return;
          lockedAt = performance.now();
          held = writer
            .query(
              `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at) VALUES (UUID(), 'base', 0, 'x', NOW())`,
            )
            .finally(() => (heldSettledAt = performance.now()));
          held.catch(() => {});
          // Still under the lock, 50 ms on (a pause of the test's, in the hold): still waiting.
          await new Promise((resolve) => setTimeout(resolve, 50));
          pendingWhileHeld = heldSettledAt === 0;
        },
      });
      const [moved] = await mover.move({ shards: [MOVED], to: targetUrl });
      const error = await held!.then(
        () => undefined,
        (failure: unknown) => failure as { errno?: number },
      );
      expect(error?.errno, 'the held INSERT fails with ER_NO_SUCH_TABLE').to.equal(1146);
      // It waited (held, not refused) while the lock was held, and failed once it went.
      expect(pendingWhileHeld, 'the INSERT waits while the shard is held').to.equal(true);
      expect(heldSettledAt).to.be.greaterThan(lockedAt + 50);
      expect(moved!.holdMs).to.be.a('number').and.to.be.lessThan(5000);
      const [[row]] = (await store!.sql.query(
        `SELECT hold_ms FROM \`${NAMESPACE}_shameless_shard_moves\` WHERE move_id = ?`,
        [moved!.moveId],
      )) as unknown as [{ hold_ms: number }[]];
      expect(row!.hold_ms).to.equal(moved!.holdMs);
      console.log(
        `      cut-over hold with the test's 50 ms pause: ${JSON.stringify(mover.lastHold)}`,
      );
    } finally {
      await writer.end();
    }
  });

  it('resumes after being stopped in each phase in turn, and the verify passes', async () => {
    const uuids = await seed(24);
    // Enough content rows in the shard for its copy to take several chunks.
    await store!.sql.query(
      `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at)
       SELECT CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0')), 'base', 0, RANDOM_BYTES(64), NOW(6) FROM seq_1_to_5000`,
    );
    const box = mapBox(store!.url);
    const stops = [
      'created',
      'copying',
      'copied',
      'catching_up',
      'caught_up',
      'verified',
      'locked',
      'published',
    ];
    let writes = 0;
    for (const stop of stops) {
      const mover = new ShardMover(hostOf(box), {
        onProgress: (event) => {
          if (event.step === stop) throw new Error(`killed at ${stop}`);
        },
      });
      const failure = await mover.move({ shards: [MOVED], to: targetUrl }).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(failure?.message, stop).to.include(`killed at ${stop}`);
      // Writes between the runs, while the shard is still served at its source.
      if (box.map.partitionOf(MOVED) === 0) {
        for (const uuid of uuids.slice(0, 4)) await writeMeta(store!.engine, uuid, 7000 + writes++);
        await putRate(store!.engine, bigHotelId(MOVED, 5000 + writes), 'between');
      }
    }
    const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    expect(moved).to.include({ phase: 'cut_over' });
    expect(box.published).to.have.length(1);
    await expectSameRows(MOVED, moved!.moveId);
    const [finished] = await new ShardMover(hostOf(box)).finish();
    expect(finished).to.include({ phase: 'finished' });
  });

  it('resumes a cut-over stopped between its renames, catching up what the tables not yet renamed took meanwhile', async () => {
    const uuids = await seed(16);
    const box = mapBox(store!.url);
    await new ShardMover(hostOf(box), {
      onProgress: (event) => {
        // Killed under the lock, before its renames (one round trip, so a death between two of
        // them is made by hand below).
        if (event.step === 'locked') throw new Error('killed holding the lock');
      },
    })
      .move({ shards: [MOVED], to: targetUrl })
      .catch(() => {});
    const [row] = await new ShardMover(hostOf(box)).activeMoves();
    // As if it had died after its first rename: the primary index table renamed away...
    const primary = shardTableNames(store!, MOVED).find((name) => name.includes('_primary_'))!;
    await store!.sql.query(
      `ALTER TABLE \`${primary}\` RENAME TO \`${movedName(primary, row!.moveId)}\``,
    );
    // ...while its content table, still there, takes a write from a server on the old map.
    const ofShard = uuids.find((uuid) => store!.engine.layout.contentShard(uuid) === MOVED)!;
    await writeMeta(store!.engine, ofShard, 31337);
    const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    expect(moved).to.include({ phase: 'cut_over' });
    expect(box.published).to.have.length(1);
    await expectSameRows(MOVED, moved!.moveId);
  });

  it('puts the tables back when the publish fails after the renames; stopped there, the next run puts them back, and what the shard took in between arrives', async () => {
    const uuids = await seed(16);
    const box = mapBox(store!.url);
    const ofShard = uuids.find((uuid) => store!.engine.layout.contentShard(uuid) === MOVED)!;
    const names = shardTableNames(store!, MOVED);
    const at = async () => {
      const present = new Set(await tablesIn(store!.sql));
      return names.map((name) => (present.has(name) ? 'in place' : 'elsewhere'));
    };
    const failingPublish = () => {
      const host = hostOf(box);
      let tried = false;
      host.publishMap = async () => {
        tried = true;
        throw new Error('partition 0 went away');
      };
      return { host, tried: () => tried };
    };

    // The publish fails after the renames: the tables go back at once, and the shard takes
    // writes at its old place (the map still names it).
    const first = failingPublish();
    const failure = await new ShardMover(first.host).move({ shards: [MOVED], to: targetUrl }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).to.include('partition 0 went away');
    // The failure told is the publish's, not that of the put-back after it.
    expect(failure?.message).to.include('publishing the partition map failed');
    expect(first.tried(), 'the publish was tried').to.equal(true);
    const { moveId } = (await new ShardMover(hostOf(box)).activeMoves())[0]!;
    expect(await at()).to.deep.equal(names.map(() => 'in place'));
    await writeMeta(store!.engine, ofShard, 4242);

    // Stopped there (the map cannot be read to put them back): the tables stay at their moved
    // names, and the shard is written nowhere.
    const second = failingPublish();
    Object.assign(second.host, {
      latestMap: async () => {
        if (second.tried()) throw new Error('partition 0 does not answer');
        return box.map;
      },
    });
    await new ShardMover(second.host).move({ shards: [MOVED], to: targetUrl }).catch(() => {});
    expect(await at()).to.deep.equal(names.map(() => 'elsewhere'));
    const moved = new Set(await tablesIn(store!.sql));
    const refused = await writeMeta(store!.engine, ofShard, 4343).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(refused?.message).to.include('being moved');
    expect(names.every((name) => moved.has(movedName(name, moveId)))).to.equal(true);

    // Run again: put back, caught up (the write above and the last rows of both attempts), cut over.
    const done = await runAgainToTheEnd(
      box,
      ofShard,
      3,
      'the versions of the record written on the source, 4242 among them',
    );
    expect(done.moveId).to.equal(moveId);
  });

  /**
   * The target SIGKILLed once the cut-over holds its lock, a write of the shard held there: the
   * cut-over fails before it publishes, the tables go back, the held write is answered at the
   * source, and the next run (the target back) cuts over with it. `withGroup`: a consumer
   * group's cursor of the shard gives the target's commit under the lock rows to write; without
   * it nothing was written since the pass before the lock, and the target is only asked.
   */
  async function targetDiesUnderTheLock(withGroup: boolean): Promise<void> {
    const uuids = await seed(16);
    const box = mapBox(store!.url);
    const ofShard = uuids.find((uuid) => store!.engine.layout.contentShard(uuid) === MOVED)!;
    const names = shardTableNames(store!, MOVED);
    const layout = store!.engine.layout;
    if (withGroup) {
      await store!.sql.query(createGroupShardsTableSql(layout.groupShardsTable));
      await store!.sql.query(createGroupCellsTableSql(layout.groupCellsTable));
      await store!.sql.query(
        `INSERT INTO \`${layout.groupShardsTable}\` VALUES ('rate', 'g', ?, 5, 'member-a', 7, NOW(6))`,
        [MOVED],
      );
    }
    let held: Promise<Error | undefined> | undefined;
    const first = new ShardMover(hostOf(box), {
      onProgress: async (event) => {
        if (event.step !== 'locked' || held) return;
        held = writeMeta(store!.engine, ofShard, 7777).then(
          () => undefined,
          (error: unknown) => error as Error,
        );
        await second.kill();
      },
    });
    const failure = await first.move({ shards: [MOVED], to: targetUrl }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(held, 'the cut-over was reached').to.not.equal(undefined);
    expect(failure, 'the cut-over with its target dead').to.be.instanceOf(EngineError);
    console.log(`      the cut-over with its target dead: ${failure!.message}`);
    expect(failure!.message)
      .to.include('writing the last rows on the target failed on partition 1')
      .and.include('run the same command again');
    expect(failure!.message).not.to.match(/\n\s+at /);
    // Nothing published, the tables back at their names: the held write is acknowledged at the
    // source (held, not refused), and the shard keeps taking writes there.
    expect(await held, 'the write held under the lock').to.equal(undefined);
    expect(box.published).to.have.length(0);
    expect(box.map.partitionOf(MOVED)).to.equal(0);
    const present = new Set(await tablesIn(store!.sql));
    expect(names.filter((name) => !present.has(name))).to.deep.equal([]);
    await writeMeta(store!.engine, ofShard, 7778);

    await second.start();
    await runAgainToTheEnd(box, ofShard, 4, "the record's meta versions, the held write's once");
    if (withGroup) {
      const [[cursor]] = (await target().query(
        `SELECT COUNT(*) AS n FROM \`${layout.groupShardsTable}\` WHERE shard = ?`,
        [MOVED],
      )) as unknown as [{ n: number }[]];
      expect(Number(cursor!.n), "the group's cursor of the shard, on the target").to.equal(1);
    }
  }

  it('puts the tables back when the target server is SIGKILLed under the cut-over lock, its commit with rows to write; a write held there lands once, and the next run finishes', () =>
    targetDiesUnderTheLock(true));

  it('does not publish a target SIGKILLed under the cut-over lock with nothing to write: it is asked all the same', () =>
    targetDiesUnderTheLock(false));

  /**
   * `body` run with the store on a MariaDB server of its own, so that it can die: the move's
   * source and the home of the map.
   */
  async function withTheStoreOnItsOwnServer(
    body: (source: MariaDbServer, store: TestStore) => Promise<void>,
  ): Promise<void> {
    const source = await startMariaDbServer();
    try {
      await store!.close();
      store = await openTestStore({ baseUrl: source.url });
      await body(source, store);
    } finally {
      // A failure that left the server dead leaves its database to go with it: the test's own
      // failure is the one told, and the server is destroyed all the same.
      await store?.close().catch(() => {});
      store = undefined;
      await source.destroy();
    }
  }

  it('resumes after the source server is SIGKILLed under the cut-over lock: nothing published, every acknowledged write arrives', () =>
    withTheStoreOnItsOwnServer(async (source, store) => {
      const uuids = await seed(16);
      const box = mapBox(store.url);
      const ofShard = uuids.find((uuid) => store.engine.layout.contentShard(uuid) === MOVED)!;
      let killed = false;
      const first = new ShardMover(hostOf(box), {
        onProgress: async (event) => {
          if (event.step !== 'locked' || killed) return;
          killed = true;
          await source.kill();
        },
      });
      const failure = await first.move({ shards: [MOVED], to: targetUrl }).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(killed, 'the cut-over was reached').to.equal(true);
      expect(failure, 'the cut-over with its source dead').to.be.instanceOf(EngineError);
      console.log(`      the cut-over with its source dead: ${failure!.message}`);
      expect(failure!.message)
        .to.include('failed on partition 0')
        .and.include('the connection was lost')
        .and.include('run the same command again');
      expect(failure!.message).not.to.match(/\n\s+at /);
      expect(box.published).to.have.length(0);

      // Back after its crash recovery: the shard is served where it was, and the same command
      // resumes, catches up (the write below included) and cuts over.
      await source.start();
      await timeUntil(
        () =>
          store.engine.getCell(UNBOUNDED, 'rate', ofShard, 'base').then(
            () => true,
            () => false,
          ),
        20_000,
        'a read of the shard once the source is back',
      );
      await writeMeta(store.engine, ofShard, 8888);
      await runAgainToTheEnd(
        box,
        ofShard,
        3,
        "the record's meta versions: the two seeded, the one after the crash",
      );
    }));

  /**
   * The source SIGKILLed once the cut-over's renames are done: before the map's publish
   * (`published` false: the shard's tables stay at their moved names through the crash recovery,
   * so the shard is written nowhere until the same command puts them back and cuts over), or just
   * after it (the mover never heard the lock let go nor recorded the phase; run again, it finds
   * the map naming the target and only finishes its bookkeeping).
   */
  function sourceDiesAfterTheRenames(published: boolean): Promise<void> {
    return withTheStoreOnItsOwnServer(async (source, store) => {
      const uuids = await seed(16);
      const box = mapBox(store.url);
      const ofShard = uuids.find((uuid) => store.engine.layout.contentShard(uuid) === MOVED)!;
      const names = shardTableNames(store, MOVED);
      const host = hostOf(box);
      const publish = host.publishMap.bind(host);
      let killed = false;
      host.publishMap = async (next) => {
        if (published) await publish(next);
        killed = true;
        await source.kill();
        if (!published) throw new Error('partition 0 went away with the source');
      };
      const failure = await new ShardMover(host).move({ shards: [MOVED], to: targetUrl }).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(killed, 'the renames were done').to.equal(true);
      expect(failure, 'the cut-over with its source dead').to.be.instanceOf(EngineError);
      console.log(`      the source dead after the renames: ${failure!.message}`);
      expect(failure!.message)
        .to.include(
          published
            ? 'letting go of the lock (the map is published) failed on partition 0'
            : 'publishing the partition map failed on partition 0',
        )
        .and.include(published ? 'the connection was lost' : 'partition 0 went away')
        .and.include('run the same command again');
      expect(failure!.message).not.to.match(/\n\s+at /);
      expect(box.published).to.have.length(published ? 1 : 0);

      // Back after its crash recovery: the renames survived it (the tables are at their moved
      // names), so no server writes the shard at its old place.
      await source.start();
      await timeUntil(
        () =>
          tablesIn(store.sql).then(
            () => true,
            () => false,
          ),
        20_000,
        'the source answering again',
      );
      const present = new Set(await tablesIn(store.sql));
      expect(
        names.filter((name) => present.has(name)),
        'tables left at their names',
      ).to.deep.equal([]);
      if (!published) {
        const refused = await writeMeta(store.engine, ofShard, 9999).then(
          () => undefined,
          (error: unknown) => error as Error,
        );
        expect(refused?.message, 'a write while the tables are away').to.include('being moved');
      }
      await runAgainToTheEnd(box, ofShard, 2, "the record's meta versions: the two seeded");
    });
  }

  it('resumes after the source server is SIGKILLed after its renames, before the publish: the shard is written nowhere until the same command puts the tables back and cuts over', () =>
    sourceDiesAfterTheRenames(false));

  it('finishes after the source server is SIGKILLed just after the publish: run again, it records the cut-over the map already has', () =>
    sourceDiesAfterTheRenames(true));

  it('resumes after its connections to the target are killed mid-copy', async () => {
    await seed(8);
    await store!.sql.query(
      `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at)
       SELECT CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0')), 'base', 0, RANDOM_BYTES(512), NOW(6) FROM seq_1_to_8000`,
    );
    const database = new URL(targetUrl).pathname.slice(1);
    const admin = await mysql.createConnection({ uri: second.url });
    const box = mapBox(store!.url);
    let killed = 0;
    try {
      const first = new ShardMover(hostOf(box), {
        onProgress: async (event) => {
          if (event.step !== 'copying' || killed > 0) return;
          // Every connection of the mover's to the target, mid-copy, as a network cut would.
          const [rows] = (await admin.query(
            'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()',
            [database],
          )) as unknown as [{ id: number }[]];
          for (const { id } of rows) {
            await admin.query(`KILL CONNECTION ${Number(id)}`).catch(() => {});
            killed += 1;
          }
        },
      });
      const outcome = await first.move({ shards: [MOVED], to: targetUrl }).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(killed).to.be.greaterThan(0);
      // Either the pool's next statement met a killed connection (the move stops and says how
      // to go on), or mysql2 noticed first and opened new ones.
      if (outcome) {
        expect(outcome).to.be.instanceOf(EngineError);
        expect(outcome.message).to.include('run the same command again');
      }
      const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
      expect(moved).to.include({ phase: 'cut_over' });
      await expectSameRows(MOVED, moved!.moveId);
    } finally {
      await admin.end();
    }
  });

  it('resumes after the target server is SIGKILLed mid-copy and started again', async () => {
    await seed(8);
    await store!.sql.query(
      `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at)
       SELECT CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0')), 'base', 0, RANDOM_BYTES(512), NOW(6) FROM seq_1_to_8000`,
    );
    const box = mapBox(store!.url);
    let killed = false;
    const first = new ShardMover(hostOf(box), {
      onProgress: async (event) => {
        if (event.step !== 'copying' || killed) return;
        killed = true;
        await second.kill(); // the whole server, mid-copy, as a crash of its host would
      },
    });
    const outcome = await first.move({ shards: [MOVED], to: targetUrl }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(killed).to.equal(true);
    expect(outcome, 'the move with its target dead').to.be.instanceOf(EngineError);
    expect(outcome!.message).to.include('run the same command again');
    console.log(`      the move with its target dead: ${outcome!.message}`);
    // The server that failed is named (the copy reads the source and writes the target), no stack.
    expect(outcome!.message).to.include('copying content failed on partition 1');
    expect(outcome!.message).not.to.match(/\n\s+at /);
    // Nothing was switched: the shard is served from its source meanwhile.
    expect(box.map.partitionOf(MOVED)).to.equal(0);
    await putRate(store!.engine, bigHotelId(MOVED % 4, 999), 'written while the target was down');

    await second.start();
    const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    expect(moved).to.include({ phase: 'cut_over' });
    await expectSameRows(MOVED, moved!.moveId);
  });

  it('stops the verify at a difference planted in the target, naming the table and the key; abort puts everything back', async () => {
    const uuids = await seed(12);
    const box = mapBox(store!.url);
    const before = new Map<string, unknown>();
    for (const table of shardTableNames(store!, MOVED))
      before.set(table, await tableRows(store!.sql, table));
    const tablesBefore = await tablesIn(store!.sql);
    const stopped = new ShardMover(hostOf(box), {
      onProgress: (event) => {
        if (event.step === 'caught_up') throw new Error('stopped before the verify');
      },
    });
    await stopped.move({ shards: [MOVED], to: targetUrl }).catch(() => {});
    const [[planted]] = (await target().query(
      `SELECT id FROM \`${content(MOVED)}\` ORDER BY id LIMIT 1 OFFSET 3`,
    )) as unknown as [{ id: string }[]];
    await target().query(`UPDATE \`${content(MOVED)}\` SET body = 'planted' WHERE id = ?`, [
      planted!.id,
    ]);

    const failure = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.be.instanceOf(ShardMoveDifferenceError);
    const difference = failure as ShardMoveDifferenceError;
    expect(difference.table).to.equal(content(MOVED));
    expect(difference.key).to.deep.equal([String(planted!.id)]);
    expect(difference.message).to.include(content(MOVED)).and.include(String(planted!.id));
    expect(box.published).to.have.length(0);
    const [[row]] = (await store!.sql.query(
      `SELECT phase, error FROM \`${NAMESPACE}_shameless_shard_moves\``,
    )) as unknown as [{ phase: string; error: string }[]];
    expect(row!.phase).to.equal('catching_up');
    expect(row!.error).to.include(String(planted!.id));

    const [aborted] = await new ShardMover(hostOf(box)).abort();
    expect(aborted).to.include({ shard: MOVED, phase: 'aborted' });
    // Everything back: no copy on the target, no trigger or captured change on the source, the
    // source's tables and rows as they were, and the shard takes writes there.
    const targetTables = await tablesIn(target());
    for (const table of shardTableNames(store!, MOVED)) expect(targetTables).not.to.include(table);
    expect(await triggersIn(store!.sql)).to.deep.equal([]);
    const [[changes]] = (await store!.sql.query(
      `SELECT COUNT(*) AS n FROM \`${NAMESPACE}_shameless_move_changes\``,
    )) as unknown as [{ n: number }[]];
    expect(Number(changes!.n)).to.equal(0);
    expect(await tablesIn(store!.sql)).to.include.members(tablesBefore);
    for (const table of shardTableNames(store!, MOVED)) {
      expect(await tableRows(store!.sql, table), table).to.deep.equal(before.get(table));
    }
    const ofShard = uuids.find((uuid) => store!.engine.layout.contentShard(uuid) === MOVED);
    if (ofShard) await writeMeta(store!.engine, ofShard, 9999);
  });

  it('moves a shard of tables the gem made (INT ids, index tables keyed by a unique key, BIGINT created_at)', async () => {
    await store!.close();
    store = await openTestStore({ gem: true });
    const uuids: string[] = [];
    for (let n = 0; n < 30; n++) {
      const created = await store.engine.put(
        UNBOUNDED,
        'rate',
        pack({
          hotel_id: n,
          room_type: `room${n}`,
          check_in_date: '2026-01-01',
          gateway: `g${n}`,
          discount_type: 'geo',
          blob: EVERY_BYTE,
        }),
        requestId(),
      );
      uuids.push(created.uuid);
    }
    for (const [i, uuid] of uuids.entries()) await writeMeta(store.engine, uuid, i);
    const box = mapBox(store.url);
    const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    expect(moved).to.include({ phase: 'cut_over' });
    const rows = await expectSameRows(MOVED, moved!.moveId);
    expect(rows).to.be.greaterThan(0);
    // The copies have the gem's column types: the same DDL as the source's.
    const [[created]] = (await target().query(
      `SHOW CREATE TABLE \`${content(MOVED)}\``,
    )) as unknown as [Record<string, string>[]];
    expect(created!['Create Table']).to.match(/`id` int\(11\) NOT NULL AUTO_INCREMENT/);
    expect(created!['Create Table']).to.match(/`created_at` bigint\(20\) NOT NULL/);
    const [finished] = await new ShardMover(hostOf(box)).finish();
    expect(finished).to.include({ phase: 'finished' });
  });

  it('aborts a move after its cut-over by the reverse move: writes made on the target come back, both frozen copies dropped', async () => {
    const uuids = await seed(12);
    const box = mapBox(store!.url);
    const [moved] = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl });
    // A write on the target after the cut-over, as a server serving the new map makes it.
    await target().query(
      `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at)
       VALUES ('0001aaaa-0000-4000-8000-000000000001', 'base', 0, x'00ff00', '2026-11-28 10:00:00.123456')`,
    );
    const onTarget = new Map<string, unknown>();
    for (const table of shardTableNames(store!, MOVED))
      onTarget.set(table, await tableRows(target(), table));
    const steps: string[] = [];
    const [aborted] = await new ShardMover(hostOf(box), {
      onProgress: (event) => void steps.push(`${event.moveId}:${event.step}`),
    }).abort();
    expect(aborted).to.include({ moveId: moved!.moveId, shard: MOVED, phase: 'aborted' });
    expect(steps)
      .to.include(`${moved!.moveId + 1}:cut_over`)
      .and.include(`${moved!.moveId + 1}:finished`);
    // The map took the shard back to partition 0; its rows are there, the target's write included.
    expect(box.published.map((map) => map.partitionOf(MOVED))).to.deep.equal([1, 0]);
    for (const table of shardTableNames(store!, MOVED)) {
      expect(await tableRows(store!.sql, table), table).to.deep.equal(onTarget.get(table));
    }
    const sourceTables = await tablesIn(store!.sql);
    const targetTables = await tablesIn(target());
    for (const table of shardTableNames(store!, MOVED)) {
      expect(sourceTables).not.to.include(movedName(table, moved!.moveId));
      expect(targetTables).not.to.include(table);
      expect(targetTables).not.to.include(movedName(table, moved!.moveId + 1));
    }
    expect(await triggersIn(store!.sql)).to.deep.equal([]);
    expect(await triggersIn(target())).to.deep.equal([]);
    // The shard takes the engine's writes at its source again.
    const ofShard = uuids.find((uuid) => store!.engine.layout.contentShard(uuid) === MOVED);
    if (ofShard) await writeMeta(store!.engine, ofShard, 4242);
    expect(await new ShardMover(hostOf(box)).activeMoves()).to.deep.equal([]);
  });

  it('moves two shards in one command to one new partition: map versions 1 and 2, one new id', async () => {
    await seed(8);
    const box = mapBox(store!.url);
    const moves = await new ShardMover(hostOf(box)).move({ shards: [2, 3], to: targetUrl });
    expect(moves.map((move) => [move.shard, move.target, move.phase])).to.deep.equal([
      [2, 1, 'cut_over'],
      [3, 1, 'cut_over'],
    ]);
    expect(box.published.map((map) => map.version)).to.deep.equal([1, 2]);
    expect(box.map.shardsOf(1)).to.deep.equal([2, 3]);
    expect(box.map.locations).to.have.length(2);
    for (const move of moves) await expectSameRows(move.shard, move.moveId);
    // Nothing to do the second time: both are cut over.
    const again = await new ShardMover(hostOf(box)).move({ shards: [2, 3], to: targetUrl });
    expect(again.map((move) => move.phase)).to.deep.equal(['cut_over', 'cut_over']);
    expect(box.published).to.have.length(2);
  });

  it('refuses a second mover of the same store while one runs', async () => {
    await seed(4);
    const box = mapBox(store!.url);
    let release!: () => void;
    const paused = new Promise<void>((resolve) => (release = resolve));
    let reachedPause!: () => void;
    const atPause = new Promise<void>((resolve) => (reachedPause = resolve));
    const first = new ShardMover(hostOf(box), {
      onProgress: async (event) => {
        if (event.step !== 'created') return;
        reachedPause();
        await paused;
      },
    });
    const running = first.move({ shards: [MOVED], to: targetUrl });
    await atPause;
    const refused = await new ShardMover(hostOf(box)).move({ shards: [MOVED], to: targetUrl }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    release();
    expect(refused).to.be.instanceOf(FailedPreconditionError);
    expect(refused!.message).to.match(/another mover of this store .* is running/);
    const [moved] = await running;
    expect(moved).to.include({ phase: 'cut_over' });
  });

  it('copies 1 KB cells fast (measured, printed)', async () => {
    const cells = 30_000;
    await store!.sql.query(
      `INSERT INTO \`${content(MOVED)}\` (uuid, column_name, ref_key, body, created_at)
       SELECT CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0')), 'base', 0, RANDOM_BYTES(1024), NOW(6) FROM seq_1_to_${cells}`,
    );
    let started = 0;
    let copiedAt = 0;
    const box = mapBox(store!.url);
    const [moved] = await new ShardMover(hostOf(box), {
      onProgress: (event) => {
        if (event.step === 'created') started = performance.now();
        if (event.step === 'copied') copiedAt = performance.now();
      },
    }).move({ shards: [MOVED], to: targetUrl });
    const rate = Math.round(cells / ((copiedAt - started) / 1000));
    console.log(
      `      copy: ${cells} cells of 1 KB in ${Math.round(copiedAt - started)} ms = ${rate} cells/s; hold ${moved!.holdMs} ms`,
    );
    expect(moved).to.include({ phase: 'cut_over' });
  });
});
