// An Each follower woken by a commit that wrote several of its shards reads all of them in one
// round trip: the read-ahead is shared by the pending shards, not spent on one at a time. A
// follower that read one shard a round trip delivered a group's cells a round trip apart each.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { Engine } from '../src/engine/engine.js';
import { silentLogger } from '../src/engine/logger.js';
import { createMysqlPool, parseMysqlUrl } from '../src/engine/mysqlPool.js';
import { Partition, PartitionSet } from '../src/engine/partitions.js';
import type { EachEvent } from '../src/engine/shardLog.js';
import type { StatementReader } from '../src/engine/sql/statement.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from './support/storeFixture.js';

const SHARDS = 4;
/** Cells of a kilobyte: a read-ahead of 256 KiB holds a page of a shard's default batch. */
const KILOBYTE = 'x'.repeat(1000);
/** What a log page read looks like in its SQL (contentReads.ts). */
const LOG_PAGE = /WHERE `id` > \? ORDER BY `id` LIMIT \?/;

/** A partition that counts its reads holding log pages, and the pages each read. */
class PageCountingPartition extends Partition {
  readonly pageReads: number[] = [];
  override read<T>(work: (reader: StatementReader) => Promise<T>, apart = false) {
    return super.read(
      (reader) =>
        work({
          read: (statements) => {
            const pages = statements.filter((s) => LOG_PAGE.test(s.sql)).length;
            if (pages > 0) this.pageReads.push(pages);
            return reader.read(statements);
          },
        }),
      apart,
    );
  }
}

describe('Each follow: a commit over several shards', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let engine: Engine;
  let partition: PageCountingPartition;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    const location = parseMysqlUrl(store.partitionUrls[0]!);
    partition = new PageCountingPartition(
      0,
      location,
      createMysqlPool(location, { connectionLimit: 4, connectTimeoutMs: 2000 }),
    );
    engine = new Engine(store.engine.layout, new PartitionSet([partition], SHARDS), silentLogger, {
      followPollIntervalMs: 50,
      maxCellBytes: 1024 * 1024,
    });
    await engine.models.refresh();
  });
  after(async () => {
    await engine?.close();
    await store?.close();
  });

  /**
   * Rates created through the engine until one is on each content shard: the first of each
   * shard, and how many were created.
   */
  async function rateOnEveryShard(): Promise<{ byShard: Map<number, string>; created: number }> {
    const byShard = new Map<number, string>();
    let hotelId = 1;
    for (; byShard.size < SHARDS && hotelId < 1000; hotelId++) {
      const put = await engine.put(
        'rate',
        pack({
          hotel_id: hotelId,
          room_type: 'double',
          check_in_date: randomUUID(),
          gateway: 'g',
          discount_type: 'd',
          note: KILOBYTE,
        }),
        requestId(),
      );
      if (!byShard.has(put.base.shard)) byShard.set(put.base.shard, put.uuid);
    }
    expect(byShard.size, 'content shards holding a rate').to.equal(SHARDS);
    return { byShard, created: hotelId - 1 };
  }

  it('reads the shards it wrote in one round trip, and delivers every cell', async () => {
    const { byShard: rates, created } = await rateOnEveryShard();
    const following = new AbortController();
    const events = await engine.each(
      'rate',
      {
        shards: [],
        cursors: new Map(),
        follow: true,
        batchSize: 500,
        heartbeatIntervalMs: 60_000,
      },
      following.signal,
    );
    const received: bigint[] = [];
    const consumed = (async () => {
      for await (const event of events as AsyncGenerator<EachEvent>) {
        if (event.kind === 'batch') received.push(...event.cells.map((cell) => BigInt(cell.id)));
      }
    })();
    try {
      // Caught up with the creates, cells of a kilobyte learned, and waiting for news.
      const caughtUp = Date.now() + 5000;
      while (received.length < created && Date.now() < caughtUp) await sleep(5);
      expect(received, 'the creates, delivered').to.have.length(created);
      await sleep(200);

      const readsBefore = partition.pageReads.length;
      const outcomes = await engine.writeCells(
        [...rates.values()].map((uuid) => ({
          model: 'rate',
          uuid,
          cell: 'meta',
          body: pack({ note: KILOBYTE }),
          mode: 'replace' as const,
          requestId: requestId(),
        })),
      );
      const written = outcomes.map((outcome) => {
        if (!outcome.ok) throw outcome.error;
        return BigInt(outcome.cell.id);
      });
      const deadline = Date.now() + 5000;
      while (!written.every((id) => received.includes(id)) && Date.now() < deadline) {
        await sleep(5);
      }
      expect(received, 'the written cells, delivered').to.include.members(written);
      // One read of every shard's page; a poll that saw the commit first wakes the same read.
      expect(partition.pageReads.slice(readsBefore)).to.deep.equal([SHARDS]);
    } finally {
      following.abort();
      await consumed;
    }
  });
});
