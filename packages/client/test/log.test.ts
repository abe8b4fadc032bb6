// Shards and the shard log: findShard, eachShard, fetchLatestCells, maxIdOnShard, and each as
// an async iterator (with follow, break, AbortSignal, heartbeats, resume), against a real
// server and MariaDB.

import { expect } from 'chai';
import type { EachRequest } from '@shameless/proto';
import {
  InvalidArgumentError,
  UnavailableError,
  connect,
  type Cell,
  type ExactInteger,
  type Heartbeat,
  type Model,
} from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import {
  RecordingTransport,
  startStoreFixture,
  type StoreFixture,
} from './support/storeFixture.js';

type RateCell = Cell<typeof RATE_SCHEMA>;
const SHARDS = 4;
const key = (cell: RateCell) => `${cell.uuid}/${cell.name}@${cell.refKey}`;

describe('shards and the shard log', function () {
  this.timeout(20_000);
  let fixture: StoreFixture;
  let recording: RecordingTransport;
  let Rate: Model<typeof RATE_SCHEMA>;
  /** Every version written in `before`, as uuid/cell@refKey. */
  const written: string[] = [];
  /**
   * The content shard of the first record written, which holds its three versions: a given
   * shard (0, say) holds none of the twelve records in about 3% of runs.
   */
  let busyShard: number;

  before(async () => {
    fixture = await startStoreFixture({ shardsCount: SHARDS });
    recording = new RecordingTransport(fixture.store.transport);
    Rate = await (await connect({ transport: recording })).defineModel(RATE_SCHEMA);
    for (let hotel = 1; hotel <= 12; hotel++) {
      const rate = await Rate.put(rateValues(hotel, '1 bed', '2026-12-01', { net_price: hotel }));
      busyShard ??= rate.base.shard!;
      written.push(key(rate.base));
      await rate.update({ net_price: hotel + 1 });
      written.push(key(rate.base));
      await rate.meta.update({ hotel_enabled: hotel % 2 === 0 });
      written.push(key(rate.meta));
    }
  });
  beforeEach(() => recording.reset());
  after(async () => {
    await fixture?.close();
  });

  /** Every cell of the model, read page by page with fetchLatestCells. */
  async function readWholeLog(): Promise<Map<number, RateCell[]>> {
    const log = new Map<number, RateCell[]>();
    for (const shard of Rate.shards) {
      const cells: RateCell[] = [];
      let cursor: ExactInteger = 0;
      for (;;) {
        const page = await Rate.fetchLatestCells({ shard, cursor, limit: 4 });
        cells.push(...page.cells);
        if (page.cells.length === 0) break;
        cursor = page.nextCursor;
      }
      log.set(shard, cells);
    }
    return log;
  }

  describe('findShard and eachShard', () => {
    it('findShard gives the shard (floored modulo) and partition of a value or a uuid', async () => {
      expect(await fixture.store.findShard(7)).to.deep.equal({ shard: 3, partition: 0 });
      expect(await Rate.findShard(-1)).to.deep.equal({ shard: 3, partition: 0 });
      const rate = await Rate.put(rateValues(99, 'x', 'y'));
      const { shard } = await Rate.findShard({ uuid: rate.uuid });
      expect(shard).to.equal(rate.base.shard);
      expect(shard).to.equal(parseInt(rate.uuid.slice(0, 4), 16) % SHARDS);
      expect(recording.callsOf('findShard'), 'one FindShard each').to.have.length(2);
    });

    it('eachShard calls back with every shard in turn, awaiting each', async () => {
      const seen: string[] = [];
      await Rate.eachShard(async (shard) => {
        seen.push(`start ${shard}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        seen.push(`end ${shard}`);
      });
      expect(seen).to.deep.equal(
        [0, 1, 2, 3].flatMap((shard) => [`start ${shard}`, `end ${shard}`]),
      );
      expect(fixture.store.shards).to.deep.equal([0, 1, 2, 3]);
      expect(fixture.store.shardsCount).to.equal(SHARDS);
    });
  });

  describe('fetchLatestCells and maxIdOnShard', () => {
    it('pages through each shard in ascending id: every version written, once', async () => {
      const log = await readWholeLog();
      const all = [...log.values()].flat();
      expect(all.map(key).sort()).to.include.members(written);
      for (const [shard, cells] of log) {
        const ids = cells.map((cell) => cell.id!);
        expect(ids).to.deep.equal([...ids].sort(ascending));
        expect(new Set(ids).size).to.equal(ids.length);
        for (const cell of cells) expect(cell.shard).to.equal(shard);
      }
    });

    it('gives each cell with its body, and its record as a handle', async () => {
      const page = await Rate.fetchLatestCells({ shard: busyShard, limit: 100 });
      const base = page.cells.find((cell) => cell.name === 'base')!;
      expect(base.get('hotel_id')).to.be.a('number');
      expect(base.record.base).to.equal(base);
      expect(base.asJSON()).to.include({ uuid: base.uuid, column_name: 'base' });
      const meta = page.cells.find((cell) => cell.name === 'meta')!;
      expect(meta.record.meta).to.equal(meta);
      expect(meta.record.base.loaded).to.equal(false);
      await meta.record.base.load();
      expect(meta.record.get('room_type')).to.equal('1 bed');
      expect(page.maxId).to.equal(page.cells.at(-1)?.id);
      expect(page.nextCursor).to.equal(page.cells.at(-1)?.id);
    });

    it('refuse a shard or limit that is not a uint32, naming it, before any call', async () => {
      const refusals: [() => Promise<unknown>, string][] = [
        [() => Rate.fetchLatestCells({ shard: -1 }), 'fetchLatestCells: shard'],
        [() => Rate.fetchLatestCells({ shard: 1.5 }), 'fetchLatestCells: shard'],
        [() => Rate.fetchLatestCells({ shard: 0, limit: -1 }), 'fetchLatestCells: limit'],
        [() => Rate.fetchLatestCells({ shard: 0, limit: NaN }), 'fetchLatestCells: limit'],
        [() => Rate.maxIdOnShard(-1), 'maxIdOnShard: shard'],
      ];
      for (const [call, field] of refusals) {
        const error = await call().then(
          () => expect.fail(`${field}: the call succeeded`),
          (thrown: unknown) => thrown as Error,
        );
        expect(error, error.message).to.be.instanceOf(InvalidArgumentError);
        expect(error.message).to.match(new RegExp(`^${field} must be an unsigned 32-bit integer`));
      }
      expect(recording.callsOf('fetchLatestCells')).to.deep.equal([]);
    });

    it('maxIdOnShard is the highest id of the shard, 0 for an empty one', async () => {
      const log = await readWholeLog();
      for (const shard of Rate.shards) {
        const ids = log.get(shard)!.map((cell) => cell.id!);
        expect(await Rate.maxIdOnShard(shard)).to.equal([0, ...ids].sort(ascending).at(-1));
      }
      const Empty = await fixture.store.defineModel({
        name: 'empty',
        primary: { fields: { key: 'integer' }, shardOn: 'key' },
      });
      expect(await Empty.maxIdOnShard(2)).to.equal(0);
    });
  });

  describe('each', () => {
    it('iterates every shard’s log to its end, in ascending id per shard', async () => {
      const byShard = new Map<number, ExactInteger[]>();
      const seen: string[] = [];
      for await (const cell of Rate.each({ batchSize: 5 })) {
        seen.push(key(cell));
        byShard.set(cell.shard!, [...(byShard.get(cell.shard!) ?? []), cell.id!]);
      }
      expect(seen.sort()).to.deep.equal(
        [...(await readWholeLog()).values()].flat().map(key).sort(),
      );
      for (const ids of byShard.values()) {
        expect(ids).to.deep.equal([...ids].sort(ascending));
      }
      expect(recording.callsOf('each')[0]?.outcome).to.equal('done');
    });

    it('refuses a shard, batch size or heartbeat interval that is not a uint32, naming it, when made', () => {
      const refusals: [() => unknown, string][] = [
        [() => Rate.each({ shards: [0, -1] }), 'each: shards\\[1\\]'],
        [() => Rate.each({ shards: [0.5] }), 'each: shards\\[0\\]'],
        [() => Rate.each({ cursors: { x: 1 } as never }), 'each: a shard of cursors'],
        [() => Rate.each({ cursors: new Map([[-1, 1]]) }), 'each: a shard of cursors'],
        [() => Rate.each({ batchSize: -1 }), 'each: batchSize'],
        [() => Rate.each({ batchSize: 2.5 }), 'each: batchSize'],
        [() => Rate.each({ follow: true, heartbeatIntervalMs: -1 }), 'each: heartbeatIntervalMs'],
      ];
      for (const [make, field] of refusals) {
        let error: Error | undefined;
        try {
          make();
        } catch (thrown) {
          error = thrown as Error;
        }
        expect(error, field).to.be.instanceOf(InvalidArgumentError);
        expect(error!.message).to.match(new RegExp(`^${field} must be an unsigned 32-bit integer`));
      }
      expect(recording.callsOf('each')).to.deep.equal([]);
    });

    it('reads the shards asked for, from the cursors given', async () => {
      const log = await readWholeLog();
      const cells = log.get(busyShard)!;
      const start = cells[1]!.id!;
      const seen: RateCell[] = [];
      for await (const cell of Rate.each({
        shards: [busyShard],
        cursors: { [busyShard]: start },
      })) {
        seen.push(cell);
      }
      expect(seen.map(key)).to.deep.equal(cells.slice(2).map(key));
      const sent = recording.callsOf('each')[0]?.request as EachRequest;
      expect(sent.shards).to.deep.equal([busyShard]);
      // On the wire every cursor is a uint64, a bigint in the generated code.
      expect(sent.cursors).to.deep.equal({ [busyShard]: BigInt(start) });
    });

    it('follows new writes as they commit, and stops cleanly on break', async () => {
      const stream = Rate.each({ follow: true, cursors: await maxIds() });
      const fresh: string[] = [];
      const writer = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        for (let i = 0; i < 3; i++) {
          const rate = await Rate.put(rateValues(200 + i, 'live', '2026-12-24', { i }));
          fresh.push(key(rate.base));
        }
      })();
      const seen: RateCell[] = [];
      for await (const cell of stream) {
        seen.push(cell);
        if (seen.length === 3) break;
      }
      await writer;
      expect(seen.map(key).sort()).to.deep.equal(fresh.sort());
      expect(recording.callsOf('each')[0]?.outcome).to.equal('returned');
      // The position reached: the last cell handed out, per shard.
      for (const cell of seen) {
        expect(stream.cursors.get(cell.shard!)! >= cell.id!).to.equal(true);
      }
    });

    it('stops cleanly, without an error, when its AbortSignal aborts', async () => {
      const controller = new AbortController();
      const seen: RateCell[] = [];
      const started = Date.now();
      setTimeout(() => controller.abort(), 200);
      for await (const cell of Rate.each({ follow: true, signal: controller.signal })) {
        seen.push(cell);
      }
      expect(controller.signal.aborted).to.equal(true);
      expect(Date.now() - started).to.be.lessThan(5000);
      expect(seen.length, 'the existing log first').to.be.greaterThan(written.length - 1);
      expect(recording.callsOf('each')[0]?.outcome).to.not.equal('open');
    });

    it('reports heartbeats while idle, with every shard’s position', async () => {
      const controller = new AbortController();
      const heartbeats: Heartbeat[] = [];
      const stream = Rate.each({
        follow: true,
        cursors: await maxIds(),
        heartbeatIntervalMs: 50,
        signal: controller.signal,
        onHeartbeat: (heartbeat) => {
          heartbeats.push(heartbeat);
          if (heartbeats.length === 2) controller.abort();
        },
      });
      for await (const cell of stream) expect.fail(`no cell was written, got ${key(cell)}`);
      expect(heartbeats).to.have.length(2);
      expect(heartbeats[0]?.at).to.be.instanceOf(Date);
      expect([...heartbeats[0]!.cursors.keys()].sort()).to.deep.equal([0, 1, 2, 3]);
      expect(heartbeats[0]?.cursors).to.deep.equal(await maxIds());
    });

    it('resumes from its position after a transient break, and when iterated again', async () => {
      const before = await maxIds();
      const stream = Rate.each({ cursors: before, batchSize: 1 });
      const fresh: string[] = [];
      for (let i = 0; i < 4; i++) {
        const rate = await Rate.put(rateValues(300 + i, 'resume', '2026-12-31'));
        fresh.push(key(rate.base));
      }
      recording.breakNextStream('each', 2, () => new UnavailableError('connection reset'));
      const seen: string[] = [];
      for await (const cell of stream) {
        seen.push(key(cell));
        if (seen.length === 3) break;
      }
      for await (const cell of stream) seen.push(key(cell));
      expect(seen.sort(), 'nothing lost, nothing twice').to.deep.equal(fresh.sort());
      expect(recording.callsOf('each').map((call) => call.outcome)).to.deep.equal([
        'threw',
        'returned',
        'done',
      ]);
      const reopened = recording.callsOf('each')[1]?.request as EachRequest;
      expect(Object.keys(reopened.cursors)).to.have.length(SHARDS);
    });
  });

  async function maxIds(): Promise<Map<number, ExactInteger>> {
    const ids = new Map<number, ExactInteger>();
    for (const shard of Rate.shards) ids.set(shard, await Rate.maxIdOnShard(shard));
    return ids;
  }
});

/** Sorts ids (numbers or bigints) in ascending order. */
function ascending(a: ExactInteger, b: ExactInteger): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
