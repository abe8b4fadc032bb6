// Which failed-delivery counts a cursor write forgets. A member's cursor write carries the
// forgetting of the counts its cursor has passed; when the member was fenced out (another claim moved the shard's epoch on), its cursor write
// matches nothing, and the next owner delivers again from the stored cursor: the counts of
// those cells must still be there, or a poison cell gets maxDeliveries more deliveries. A reset
// of one shard forgets that shard's counts, not its neighbours'.
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { GroupStore } from '../../../src/engine/groups/groupStore.js';
import { createMysqlPool, parseMysqlUrl } from '../../../src/engine/mysql/mysqlPool.js';
import { Partition, PartitionSet } from '../../../src/engine/mysql/partitions.js';
import { GroupMember } from '../../support/groupMember.js';
import { RATE_MODEL, type StoreFixture, startStoreFixture } from '../../support/storeFixture.js';

const SHARDS = 4;

describe('consumer groups: the failure counts a cursor write forgets', function () {
  this.timeout(30_000);
  let store: StoreFixture;
  let groups: GroupStore;
  let close: () => Promise<void>;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    const location = parseMysqlUrl(store.partitionUrls[0]!);
    const pool = createMysqlPool(location, { connectionLimit: 2, connectTimeoutMs: 2000 });
    close = () => pool.end();
    groups = new GroupStore(
      store.engine.layout,
      new PartitionSet([new Partition(0, location, pool)], SHARDS),
    );
  });
  after(async () => {
    await close?.();
    await store?.close();
  });

  /** The failure counts stored for cells of a shard, as `id: attempts`. */
  async function countsOf(group: string, shard = 0): Promise<Record<string, number>> {
    const sql = await mysql.createConnection(store.partitionUrls[0]!);
    const [rows] = await sql
      .query(
        `SELECT cell_id, attempts FROM \`${store.engine.layout.groupCellsTable}\`
         WHERE group_name = ? AND shard = ? ORDER BY cell_id`,
        [group, shard],
      )
      .finally(() => sql.end());
    return Object.fromEntries(
      (rows as { cell_id: string | number; attempts: number }[]).map((row) => [
        String(row.cell_id),
        Number(row.attempts),
      ]),
    );
  }

  it('forgets failure counts only with a cursor write that landed, kept or released', async () => {
    const group = 'fenced-forgetting';
    const key = { model: 'rate', group };
    // The group and its rows, made through the server; then nobody owns shard 0.
    const member = await GroupMember.join(store.api, { group }, { autoAck: true });
    await member.leave();
    const shard0 = async () => (await groups.readState(key)).shards.find((s) => s.shard === 0)!;

    const first = await groups.claim(key, 0, 'first', (await shard0()).epoch);
    expect(first?.owner).to.equal('first');
    expect(await groups.countFailure(key, 0, 5, 'boom')).to.equal(1);
    // Another member claims the shard: 'first' is fenced out.
    const second = await groups.claim(key, 0, 'second', first!.epoch);
    expect(second?.owner).to.equal('second');

    const commit = { shard: 0, cursor: 10, release: false, forgetFailures: true };
    const fenced = await groups.commit(key, [
      { ...commit, memberId: 'first', epoch: first!.epoch },
    ]);
    expect([...fenced], 'the fenced write kept').to.deep.equal([]);
    expect(Number((await shard0()).cursor)).to.equal(0);
    expect(await countsOf(group), 'counts after the fenced write').to.deep.equal({ 5: 1 });

    const kept = await groups.commit(key, [
      { ...commit, memberId: 'second', epoch: second!.epoch },
    ]);
    expect([...kept]).to.deep.equal([0]);
    expect(await countsOf(group), 'counts after the owner’s write').to.deep.equal({});

    // A release (the owner cleared by the write itself) forgets what it passed too.
    expect(await groups.countFailure(key, 0, 12, 'boom')).to.equal(1);
    const released = await groups.commit(key, [
      { ...commit, cursor: 20, release: true, memberId: 'second', epoch: second!.epoch },
    ]);
    expect([...released]).to.deep.equal([0]);
    expect((await shard0()).owner).to.equal(undefined);
    expect(await countsOf(group), 'counts after the release').to.deep.equal({});
  });

  it('a reset of one shard forgets its counts only', async () => {
    const group = 'reset-one-shard';
    const key = { model: 'rate', group };
    const member = await GroupMember.join(store.api, { group }, { autoAck: true });
    await member.leave();
    expect(await groups.countFailure(key, 0, 5, 'boom')).to.equal(1);
    expect(await groups.countFailure(key, 1, 6, 'boom')).to.equal(1);
    await groups.setCursors(key, [{ shard: 1, cursor: 0 }]);
    expect(await countsOf(group, 1), 'the reset shard').to.deep.equal({});
    expect(await countsOf(group, 0), 'another shard').to.deep.equal({ 5: 1 });
  });
});
