// 64-bit integers through the SDK, against a real server and MariaDB: integer index values in
// put, where and findShard, integers in bodies, and ids and cursors past 2^53. The API hands a
// 64-bit integer out as a number while it is a safe integer and as a bigint beyond, and takes
// either.

import { expect } from 'chai';
import { createMysqlPool, parseMysqlUrl, type MysqlPool } from '@shameless/server/sql';
import {
  InvalidArgumentError,
  type ExactInteger,
  type Heartbeat,
  type Model,
} from '../src/index.js';
import { rejection, startStoreFixture, thrown, type StoreFixture } from './support/storeFixture.js';

const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;
const PAST_SAFE = 2n ** 53n + 1n;
const UINT64_MAX = 2n ** 64n - 1n;
/** In ascending order; as the API hands them out (a number when safe). */
const SEQS: ExactInteger[] = [MIN, -(2n ** 53n) - 1n, -1, 0, PAST_SAFE, MAX];

const LEDGER = {
  name: 'ledger',
  primary: { fields: { account: 'integer', seq: 'integer' }, shardOn: 'account' },
  cells: ['meta'],
} as const;

const WIDE = {
  name: 'wide',
  primary: { fields: { key: 'integer' }, shardOn: 'key' },
  cells: ['meta'],
} as const;

describe('64-bit integers through the SDK', function () {
  this.timeout(60_000);
  let fixture: StoreFixture;
  let Ledger: Model<typeof LEDGER>;
  let sql: MysqlPool;

  before(async () => {
    fixture = await startStoreFixture({ shardsCount: 4 });
    Ledger = await fixture.store.defineModel(LEDGER);
    sql = createMysqlPool(parseMysqlUrl(fixture.databaseUrl), {
      connectionLimit: 1,
      connectTimeoutMs: 1000,
    });
  });
  after(async () => {
    await sql?.end();
    await fixture?.close();
  });

  const seqsOf = async (query: AsyncIterable<{ get(key: string): unknown }>) => {
    const seqs: unknown[] = [];
    for await (const record of query) seqs.push(record.get('seq'));
    return seqs;
  };

  describe('index values', () => {
    before(async () => {
      for (const account of [MIN, MAX, PAST_SAFE, -1]) {
        for (const seq of SEQS) await Ledger.put({ account, seq, amount: 1 });
      }
    });

    it('put creates and updates records keyed by bigints and numbers', async () => {
      for (const account of [MIN, MAX, PAST_SAFE, -1]) {
        const updated = await Ledger.put({ account, seq: MAX, amount: 2 });
        expect(updated.refKey, `account ${account}`).to.equal(1);
        expect(updated.get('account')).to.equal(account);
        expect(updated.get('seq')).to.equal(MAX);
        expect(updated.get('amount')).to.equal(2);
      }
      // The same integer given as a number or as a bigint is the same key.
      const again = await Ledger.put({ account: -1n, seq: 0n, amount: 3 });
      expect(again.refKey).to.equal(1);
      expect(again.get('account')).to.equal(-1);
    });

    it('where pages through int64 extremes, with = and ranges given as bigints or numbers', async () => {
      for (const account of [MAX, MIN, PAST_SAFE, -1]) {
        expect(await seqsOf(Ledger.where({ account }, { pageSize: 1 }))).to.deep.equal(SEQS);
        expect(
          await seqsOf(
            Ledger.where({ account, seq: { between: [MIN, MAX] } }, { order: 'desc', pageSize: 2 }),
          ),
        ).to.deep.equal([...SEQS].reverse());
        expect(
          await seqsOf(Ledger.where({ account, seq: { gte: -1 } }, { pageSize: 1 })),
        ).to.deep.equal([-1, 0, PAST_SAFE, MAX]);
        expect(
          await seqsOf(Ledger.where({ account, seq: { lt: 0n } }, { pageSize: 2 })),
        ).to.deep.equal(SEQS.slice(0, 3));
        expect(await seqsOf(Ledger.where({ account, seq: PAST_SAFE }))).to.deep.equal([PAST_SAFE]);
        expect(await seqsOf(Ledger.where({ account, seq: 2n ** 53n }))).to.deep.equal([]);
        expect(await seqsOf(Ledger.where({ account, seq: { in: [MAX, 0, MIN] } }))).to.deep.equal([
          MIN,
          0,
          MAX,
        ]);
      }
    });

    it('findShard takes a bigint or a number: value mod shards, floored as Ruby does', async () => {
      // Worked by hand: 2^63 is a multiple of 4, 2^53 + 1 is one more than one.
      const expected: [number | bigint, number][] = [
        [MIN, 0],
        [MAX, 3],
        [PAST_SAFE, 1],
        [-1, 3],
        [-1n, 3],
        [6, 2],
      ];
      for (const [value, shard] of expected) {
        expect((await fixture.store.findShard(value)).shard, `${value}`).to.equal(shard);
      }
    });

    it('refuses a number past 2^53 (it may have lost digits) and values outside int64, before any call', async () => {
      const where = thrown(() => Ledger.where({ account: 2 ** 60 }));
      expect(where).to.be.instanceOf(InvalidArgumentError);
      expect(where.message).to.match(/account: 1152921504606847000 is beyond .* pass a bigint/);
      expect(thrown(() => Ledger.where({ account: 1, seq: { gt: 2n ** 63n } })).message).to.match(
        /seq must be a signed 64-bit integer, got 9223372036854775808n/,
      );
      expect(await rejection(fixture.store.findShard(2 ** 60))).to.be.instanceOf(
        InvalidArgumentError,
      );
      expect(await rejection(fixture.store.findShard(1.5))).to.be.instanceOf(InvalidArgumentError);
      const put = await rejection(Ledger.put({ account: 1, seq: -(2 ** 60) }));
      expect(put).to.be.instanceOf(InvalidArgumentError);
      expect(put.message).to.match(/^put on ledger: seq: /);
      expect(await rejection(Ledger.put({ account: UINT64_MAX, seq: 1 }))).to.be.instanceOf(
        InvalidArgumentError,
      );
    });
  });

  describe('bodies', () => {
    /** The stored bytes of a cell, read through the raw transport. */
    const storedBody = async (uuid: string, cell = 'base'): Promise<string> => {
      const response = await fixture.store.transport.unary(
        'getCell',
        { model: 'ledger', uuid, cell, refKey: undefined },
        { idempotent: true, hedgeable: false },
      );
      return Buffer.from(response.cell!.body).toString('hex');
    };

    it('writes integers as integers (2^40 as uint64, not a float) and reads them back exactly', async () => {
      const record = await Ledger.put({ account: 5, seq: 5, big: 2 ** 40, u64: UINT64_MAX });
      const bytes = await storedBody(record.uuid);
      expect(bytes).to.include('a3626967' + 'cf0000010000000000'); // "big": 2^40
      expect(bytes).to.include('a3753634' + 'cfffffffffffffffff'); // "u64": 2^64 - 1
      const read = (await Ledger.find(record.uuid))!;
      expect(read.get('big')).to.equal(2 ** 40);
      expect(read.get('u64')).to.equal(UINT64_MAX);

      await read.meta.load();
      await read.meta.update({ min: MIN, float: 0.5, whole: 7.0 });
      const meta = await storedBody(record.uuid, 'meta');
      expect(meta).to.include('a36d696e' + 'd38000000000000000'); // "min": -2^63
      expect(meta).to.include('a5666c6f6174' + 'cb3fe0000000000000'); // "float": 0.5
      // A JS number cannot say "float": 7.0 is the number 7, written as an integer.
      expect(meta).to.include('a577686f6c65' + '07');
    });

    it('writes integers inside a class instance or a Set as integers too, never as floats', async () => {
      class Money {
        constructor(
          readonly cents: number,
          readonly currency: string,
        ) {}
      }
      const record = await Ledger.put({ account: 6, seq: 6 });
      await record.update({ price: new Money(2 ** 40, 'EUR'), ids: new Set([2 ** 40]) });
      const bytes = await storedBody(record.uuid);
      // "price": { "cents": 2^40, "currency": "EUR" }
      expect(bytes).to.include('a5707269636582a563656e7473cf0000010000000000');
      expect(bytes).to.include('a3696473' + '91cf0000010000000000'); // "ids": [2^40]
      const read = (await Ledger.find(record.uuid))!;
      expect(read.get('price')).to.deep.equal({ cents: 2 ** 40, currency: 'EUR' });
      expect(read.get('ids')).to.deep.equal([2 ** 40]);
    });

    it('asJSON and JSON.stringify show bigints as decimal strings instead of throwing', async () => {
      const record = await Ledger.put({ account: MAX, seq: 42, nested: { list: [PAST_SAFE, 1] } });
      const json = record.asJSON();
      expect(json.body).to.deep.include({
        account: MAX.toString(),
        seq: 42,
        nested: { list: [PAST_SAFE.toString(), 1] },
      });
      expect(JSON.parse(JSON.stringify(record))).to.deep.include({ uuid: record.uuid, ref_key: 0 });
      // asJSON is a copy: the record still holds the bigint.
      expect(record.get('account')).to.equal(MAX);
    });
  });

  describe('ids and cursors past 2^53', () => {
    let Wide: Model<typeof WIDE>;
    const FIRST_ID = PAST_SAFE;

    /** The ids stored in a content shard of `wide`, read as text. */
    const storedIds = async (shard: number): Promise<bigint[]> => {
      const rows = await sql.query<{ id: string }[]>(
        `SELECT CAST(id AS CHAR) AS id FROM sdk_wide_00000${shard} ORDER BY id`,
      );
      return rows.map((row) => BigInt(row.id));
    };

    before(async () => {
      Wide = await fixture.store.defineModel(WIDE);
      for (let shard = 0; shard < 4; shard++) {
        await sql.query(`ALTER TABLE sdk_wide_00000${shard} AUTO_INCREMENT = ${FIRST_ID}`);
      }
      for (let key = 0; key < 12; key++) {
        const record = await Wide.put({ key, n: key });
        await record.meta.update({ m: key });
      }
    });

    it('cells carry their ids as bigints, equal to the stored ones; asJSON as strings', async () => {
      const record = (await Wide.where({ key: 3 }, { cells: ['base', 'meta'] }).first())!;
      for (const cell of [record.base, record.meta]) {
        expect(cell.id).to.be.a('bigint');
        expect(await storedIds(cell.shard!)).to.include(cell.id);
        expect(cell.asJSON().id).to.equal(String(cell.id));
      }
      expect(() => JSON.stringify(record)).not.to.throw();
    });

    it('fetchLatestCells, maxIdOnShard and each page and resume by them', async () => {
      let checked = 0;
      for (const shard of Wide.shards) {
        const ids = await storedIds(shard);
        if (ids.length < 2) continue;
        checked++;
        const whole = await Wide.fetchLatestCells({ shard });
        expect(whole.cells.map((cell) => cell.id)).to.deep.equal(ids);
        expect(whole.nextCursor).to.equal(ids.at(-1));
        expect(whole.maxId).to.equal(ids.at(-1));
        expect(await Wide.maxIdOnShard(shard)).to.equal(ids.at(-1));

        const rest = await Wide.fetchLatestCells({ shard, cursor: ids[0]!, limit: 1 });
        expect(rest.cells.map((cell) => cell.id)).to.deep.equal([ids[1]]);
        const past = await Wide.fetchLatestCells({ shard, cursor: UINT64_MAX });
        expect(past.cells).to.deep.equal([]);
        expect(past.nextCursor).to.equal(UINT64_MAX);

        const stream = Wide.each({ shards: [shard], cursors: { [shard]: ids[0]! } });
        const streamed: ExactInteger[] = [];
        for await (const cell of stream) streamed.push(cell.id!);
        expect(streamed).to.deep.equal(ids.slice(1));
        expect(stream.cursors.get(shard)).to.equal(ids.at(-1));
      }
      expect(checked, 'shards with two cells or more').to.be.greaterThan(0);
    });

    it('a following stream reports heartbeats at such ids', async () => {
      let shard = 0;
      while ((await storedIds(shard)).length === 0) shard++;
      const last = (await storedIds(shard)).at(-1)!;
      const controller = new AbortController();
      let heartbeat: Heartbeat | undefined;
      const cursors = new Map<number, ExactInteger>([[shard, last]]);
      for await (const cell of Wide.each({
        shards: [shard],
        cursors,
        follow: true,
        heartbeatIntervalMs: 50,
        signal: controller.signal,
        onHeartbeat: (beat) => {
          heartbeat = beat;
          controller.abort();
        },
      })) {
        expect.fail(`no cell was written after the cursor, got ${String(cell.id)}`);
      }
      expect(heartbeat?.cursors.get(shard)).to.equal(last);
    });

    it('refuses a cursor that is not a uint64, naming it, before any call', async () => {
      expect(await rejection(Wide.fetchLatestCells({ shard: 0, cursor: -1 }))).to.be.instanceOf(
        InvalidArgumentError,
      );
      expect(
        await rejection(Wide.fetchLatestCells({ shard: 0, cursor: 2n ** 64n })),
      ).to.be.instanceOf(InvalidArgumentError);
      const each = thrown(() => Wide.each({ cursors: { 1: 2 ** 60 } }));
      expect(each).to.be.instanceOf(InvalidArgumentError);
      expect(each.message).to.match(/^each: the cursor of shard 1: .* pass a bigint/);
    });
  });
});
