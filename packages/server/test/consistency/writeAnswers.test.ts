// A write answers with the cell as stored: the id and created_at it gives are those a later
// read returns. Where the partition gives a multi-row INSERT consecutive ids and the table's
// created_at is known (storedTimes.ts), the transaction takes them from the INSERT's answer;
// otherwise it reads them back. Both ways, with several versions to one table in one INSERT,
// must answer the same as reads. (Gem-made DATETIME and BIGINT tables: gem.test.ts.)
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { silentLogger } from '../../src/engine/base/logger.js';
import { VersionCache } from '../../src/engine/base/versionCache.js';
import { KnownRecords } from '../../src/engine/write/knownRecords.js';
import { LogNotifier } from '../../src/engine/log/logNotifier.js';
import { Partition } from '../../src/engine/mysql/partitions.js';
import { ShardTransaction } from '../../src/engine/write/shardTransaction.js';
import { StoredTimes } from '../../src/engine/model/storedTimes.js';
import { createMysqlPool, parseMysqlUrl } from '../../src/engine/mysql/mysqlPool.js';
import type { StoredCell } from '../../src/engine/mysql/sql/contentRows.js';
import { readConsecutiveInsertIds } from '../../src/engine/mysql/sql/serverVariables.js';
import type { WriteItem } from '../../src/engine/write/writeItems.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../support/storeFixture.js';

describe('consistency: write answers', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  const uuids: string[] = [];

  before(async () => {
    store = await startStoreFixture({ shardsCount: 4, logger: silentLogger });
    await store.api.defineModel({ model: RATE_MODEL });
    for (let hotel = 0; hotel < 8; hotel++) {
      const put = await store.engine.put(
        UNBOUNDED,
        'rate',
        pack({
          hotel_id: hotel,
          room_type: 'double',
          check_in_date: '2026-04-01',
          gateway: 'g',
          discount_type: 'd',
        }),
        requestId(),
      );
      uuids.push(put.uuid);
    }
  });
  after(() => store?.close());

  /** The cell as GetCell reads it, to compare with a write's answer. */
  async function asRead(cell: StoredCell) {
    const read = await store.engine.getCell(UNBOUNDED, 'rate', cell.uuid, cell.name, cell.refKey);
    return { ...read, body: read.body.toString('hex') };
  }
  const shown = (cell: StoredCell) => ({ ...cell, body: cell.body.toString('hex') });

  it('answers ids and created_at as stored when they come from the INSERT’s answer', async () => {
    const pool = createMysqlPool(parseMysqlUrl(store.partitionUrls[0]!), {
      connectionLimit: 1,
      connectTimeoutMs: 2000,
    });
    const consecutive = await readConsecutiveInsertIds(pool).finally(() => pool.end());
    expect(consecutive, 'MariaDB’s default lock mode: the engine uses the answer').to.equal(true);
    // Three versions of each of eight records' meta cell: several rows per table per INSERT.
    const outcomes = await store.engine.writeCells(
      UNBOUNDED,
      uuids.flatMap((uuid) =>
        [1, 2, 3].map((n) => ({
          model: 'rate',
          uuid,
          cell: 'meta',
          body: pack({ n }),
          mode: 'replace' as const,
          requestId: requestId(),
        })),
      ),
    );
    for (const outcome of outcomes) {
      if (!outcome.ok) throw outcome.error;
      expect(shown(outcome.cell)).to.deep.equal(await asRead(outcome.cell));
    }
  });

  it('answers the same when it reads them back (a partition whose ids may interleave, a table not inspected)', async () => {
    const location = parseMysqlUrl(store.partitionUrls[0]!);
    const pool = createMysqlPool(location, { connectionLimit: 2, connectTimeoutMs: 2000 });
    try {
      const model = await store.engine.models.get('rate', UNBOUNDED);
      const write = (uuid: string, n: number): WriteItem => ({
        kind: 'append',
        model,
        uuid,
        cell: 'meta',
        content: { mode: 'replace', bytes: pack({ n }) },
        requestId: randomUUID(),
      });
      const cases = [
        { name: 'ids not consecutive', consecutive: false, inspected: true },
        { name: 'created_at not inspected', consecutive: true, inspected: false },
      ];
      for (const { name, consecutive, inspected } of cases) {
        const partition = new Partition(0, location, pool);
        partition.insertIdsConsecutive = consecutive;
        const times = new StoredTimes('datetime');
        if (inspected) {
          for (let shard = 0; shard < 4; shard++) {
            times.learn(store.engine.layout.contentTable(model, shard), 6);
          }
        }
        const transaction = new ShardTransaction(
          store.engine.layout,
          partition,
          new LogNotifier(),
          times,
          new KnownRecords(1000),
          new VersionCache(1000),
        );
        const outcomes = await transaction.run(
          UNBOUNDED,
          uuids.flatMap((uuid) => [write(uuid, 1), write(uuid, 2)]),
        );
        for (const outcome of outcomes) {
          if (outcome.status !== 'written') throw new Error(`${name}: ${outcome.status}`);
          expect(shown(outcome.cell), name).to.deep.equal(await asRead(outcome.cell));
        }
      }
    } finally {
      await pool.end();
    }
  });
});
