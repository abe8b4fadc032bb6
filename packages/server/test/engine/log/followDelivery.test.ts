// How an Each follower delivers what commits: the cells a commit through its own server stored
// are handed over and sent without a read when they are the very next ones after its cursor;
// otherwise it reads, and a round after a wait reads every shard that moved in one round trip
// (a follower that read one shard a round trip delivered a group's cells a round trip apart).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { WriteMode } from '@shameless/proto';
import { type CallScope, UNBOUNDED } from '../../../src/engine/base/callScope.js';
import type { Engine } from '../../../src/engine/engine.js';
import { Partition } from '../../../src/engine/mysql/partitions.js';
import type { EachEvent } from '../../../src/engine/log/shardLog.js';
import type { StoredCell } from '../../../src/engine/mysql/sql/contentRows.js';
import type { StatementReader } from '../../../src/engine/mysql/sql/statement.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  requestId,
  startStoreFixture,
} from '../../support/storeFixture.js';
import { startObservedEngine } from '../../support/observedEngine.js';

const SHARDS = 4;
/** Cells of a kilobyte: a read-ahead of 256 KiB holds a page of a shard's default batch. */
const KILOBYTE = 'x'.repeat(1000);
/** What a log page read looks like in its SQL (contentReads.ts). */
const LOG_PAGE = /WHERE `id` > \? ORDER BY `id` LIMIT \?/;

/** A partition that counts its reads holding log pages, and the pages each read. */
class PageCountingPartition extends Partition {
  readonly pageReads: number[] = [];
  override read<T>(
    scope: CallScope,
    work: (reader: StatementReader) => Promise<T>,
    apart = false,
  ): Promise<T> {
    return super.read(
      scope,
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

/** A follow stream of every shard from the start, and the cells it delivered. */
class Follower {
  readonly cells: StoredCell[] = [];
  /** While set, the consumer takes no event: the stream waits at its next. */
  private paused: Promise<void> | undefined;
  private readonly consumed: Promise<void>;

  private constructor(
    events: AsyncGenerator<EachEvent>,
    private readonly following: AbortController,
  ) {
    this.consumed = (async () => {
      for await (const event of events) {
        if (event.kind === 'batch') this.cells.push(...event.cells);
        await this.paused;
      }
    })();
  }

  static async start(engine: Engine): Promise<Follower> {
    const following = new AbortController();
    const events = await engine.each(
      UNBOUNDED,
      'rate',
      { shards: [], cursors: new Map(), follow: true, batchSize: 500, heartbeatIntervalMs: 60_000 },
      following.signal,
    );
    return new Follower(events as AsyncGenerator<EachEvent>, following);
  }

  /** The consumer takes no event after its next batch until the returned function is called. */
  pause(): () => void {
    let resume!: () => void;
    this.paused = new Promise((resolve) => (resume = resolve));
    return () => {
      this.paused = undefined;
      resume();
    };
  }

  async stop(): Promise<void> {
    this.following.abort();
    await this.consumed;
  }

  /** The cells delivered, each as its {@link place}. */
  places(): string[] {
    return this.cells.map((cell) => place(cell));
  }

  async received(places: readonly string[], withinMs = 5000): Promise<void> {
    const deadline = Date.now() + withinMs;
    while (!places.every((at) => this.places().includes(at)) && Date.now() < deadline) {
      await sleep(5);
    }
    expect(this.places(), 'cells delivered').to.include.members([...places]);
  }
}

describe('Each follow: delivering what commits', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let engine: Engine;
  let partition: PageCountingPartition;
  /** A rate on each content shard, by shard. */
  let rates: Map<number, string>;
  let follower: Follower;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    ({ engine, partition } = await startObservedEngine(
      store,
      (location, pool) => new PageCountingPartition(0, location, pool),
      { followPollIntervalMs: 50 },
    ));
    rates = new Map();
    let created = 0;
    for (let hotelId = 1; rates.size < SHARDS && hotelId < 1000; hotelId++, created++) {
      const put = await engine.put(
        UNBOUNDED,
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
      if (!rates.has(put.base.shard)) rates.set(put.base.shard, put.uuid);
    }
    expect(rates.size, 'content shards holding a rate').to.equal(SHARDS);
    // Caught up with the creates, cells of a kilobyte learned, and waiting for news.
    follower = await Follower.start(engine);
    const caughtUp = Date.now() + 5000;
    while (follower.cells.length < created && Date.now() < caughtUp) await sleep(5);
    expect(follower.cells, 'the creates, delivered').to.have.length(created);
    await sleep(200);
  });
  after(async () => {
    await follower?.stop();
    await engine?.close();
    await store?.close();
  });

  /** A kilobyte `meta` version of the rate of each of `shards`, in one call through `engine`. */
  async function writeMeta(shards: readonly number[]): Promise<string[]> {
    const outcomes = await engine.writeCells(
      UNBOUNDED,
      shards.map((shard) => ({
        model: 'rate',
        uuid: rates.get(shard)!,
        cell: 'meta',
        body: pack({ note: KILOBYTE, at: randomUUID() }),
        mode: 'replace' as const,
        requestId: requestId(),
      })),
    );
    return outcomes.map((outcome) => {
      if (!outcome.ok) throw outcome.error;
      return place(outcome.cell);
    });
  }

  /** A `meta` version of the rate of `shard` through the fixture's own engine: another server. */
  async function writeElsewhere(shard: number): Promise<string> {
    const written = await store.api.writeCell({
      model: 'rate',
      uuid: rates.get(shard)!,
      cell: 'meta',
      body: pack({ from: 'elsewhere' }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    });
    return place(written.cell!);
  }

  it('sends the cells its server committed without a read, exactly as a read answers', async () => {
    const readsBefore = partition.pageReads.length;
    const written = await writeMeta([...rates.keys()]);
    await follower.received(written);
    expect(partition.pageReads.slice(readsBefore), 'log page reads').to.deep.equal([]);

    const delivered = follower.cells.filter((cell) => written.includes(place(cell)));
    expect(delivered).to.have.length(written.length);
    for (const cell of delivered) {
      const page = await engine.fetchLatestCells(
        UNBOUNDED,
        'rate',
        cell.shard,
        offsetBefore(cell.id),
        1,
      );
      expect(page.cells, `cell ${cell.id} as read`).to.deep.equal([cell]);
    }
  });

  it('reads every shard that another server wrote in one round trip', async () => {
    const readsBefore = partition.pageReads.length;
    // Through the fixture's own engine: this one learns of it from its poll only.
    const outcome = await store.api.writeCells({
      writes: [...rates.values()].map((uuid) => ({
        model: 'rate',
        uuid,
        cell: 'meta',
        body: pack({ note: KILOBYTE, from: 'elsewhere' }),
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: requestId(),
      })),
    });
    const written = outcome.results.map((result) => {
      if (result.outcome?.$case !== 'written') throw new Error('a write was refused');
      return place(result.outcome.written.cell!);
    });
    await follower.received(written);
    expect(partition.pageReads.slice(readsBefore), 'log page reads').to.deep.equal([SHARDS]);
  });

  it('reads when another server’s cell lies between its cursor and those handed over', async () => {
    const [shard] = [...rates.keys()];
    const before = follower.cells.length;
    const readsBefore = partition.pageReads.length;
    const elsewhere = await writeElsewhere(shard!);
    const [here] = await writeMeta([shard!]);
    await follower.received([elsewhere, here!]);
    expect(follower.places().slice(before), 'in log order, once each').to.deep.equal([
      elsewhere,
      here!,
    ]);
    expect(partition.pageReads.length, 'log page reads').to.be.above(readsBefore);
  });

  it('sends no cell handed over past one another server wrote before it', async () => {
    const [shard] = [...rates.keys()];
    const before = follower.cells.length;
    const resume = follower.pause();
    // The consumer holds the next batch: what commits meanwhile waits in the stream.
    const [first] = await writeMeta([shard!]);
    await follower.received([first!]);
    const [kept] = await writeMeta([shard!]);
    const elsewhere = await writeElsewhere(shard!);
    const [after] = await writeMeta([shard!]);
    resume();
    const written = [first!, kept!, elsewhere, after!];
    await follower.received(written);
    expect(follower.places().slice(before), 'in log order, once each').to.deep.equal(written);
  });

  it('keeps at most 64 KiB handed over for a consumer that waits, then reads', async () => {
    const [shard] = [...rates.keys()];
    const before = follower.cells.length;
    const resume = follower.pause();
    // The consumer holds the next batch; commits meanwhile hand over about 100 KiB.
    const [first] = await writeMeta([shard!]);
    await follower.received([first!]);
    const written = [first!];
    for (let i = 0; i < 100; i++) written.push(...(await writeMeta([shard!])));
    const readsBefore = partition.pageReads.length;
    resume();
    await follower.received(written);
    expect(follower.places().slice(before), 'in log order, once each').to.deep.equal(written);
    expect(partition.pageReads.length, 'log page reads').to.be.above(readsBefore);
  });
});

/** Where a cell lies in the store: ids are unique within a shard's table only. */
function place(cell: { shard: number; id: StoredCell['id'] }): string {
  return `${cell.shard}:${cell.id}`;
}

/** The cursor a page starting at `id` is read from. */
function offsetBefore(id: StoredCell['id']): StoredCell['id'] {
  return typeof id === 'bigint' ? id - 1n : id - 1;
}
