// Writes from remembered versions (versionCache.ts, the one round trip of shardTransaction.ts):
// two servers over one database, each remembering what it wrote, and versions written behind
// their back with plain SQL, as the gem writes. Whatever a server remembers, every write gets
// the next version of its cell, a merge applies onto the latest body, a request id sent again
// gets its one version back, and a stale memory costs a try, never a gap or a duplicate.
import { expect } from 'chai';
import { WriteMode } from '@shameless/proto';
import mysql from 'mysql2/promise';
import { type StoreFixture, pack, putRate, requestId, unpack } from '../support/storeFixture.js';
import { type SharedStore, startSharedStore } from './support.js';

const SHARDS = 4;
const NAMESPACE = 'remembered';
const contentTable = (uuid: string) =>
  `${NAMESPACE}_rate_${String(parseInt(uuid.slice(0, 4), 16) % SHARDS).padStart(6, '0')}`;

describe('consistency: writes from remembered versions', function () {
  this.timeout(60_000);
  let shared: SharedStore;
  let a: StoreFixture;
  let b: StoreFixture;
  let sql: mysql.Connection;
  let nextHotel = 1;

  before(async () => {
    shared = await startSharedStore(SHARDS, NAMESPACE);
    ({ a, b, sql } = shared);
  });
  after(() => shared?.close());

  /** A write of `fields` over the latest base body of `uuid`. */
  const mergeRequest = (uuid: string, fields: Record<string, unknown>, id = requestId()) => ({
    model: 'rate',
    uuid,
    cell: 'base',
    body: pack(fields),
    mode: WriteMode.WRITE_MODE_MERGE,
    requestId: id,
  });
  const merge = (
    store: StoreFixture,
    uuid: string,
    fields: Record<string, unknown>,
    id = requestId(),
  ) => store.api.writeCell(mergeRequest(uuid, fields, id));
  const stats = (store: StoreFixture) => store.engine.versionCacheStats();

  /**
   * Runs `test` against a server of its own over the same database: one whose tries from memory
   * no earlier test has paused (oneTripBackoff.ts).
   */
  async function withOwnServer(test: (store: StoreFixture) => Promise<void>): Promise<void> {
    const own = await shared.another();
    try {
      await test(own);
    } finally {
      await own.close();
    }
  }

  /** The base versions of `uuid` as stored: ref_keys in order, and the latest body. */
  async function stored(
    uuid: string,
  ): Promise<{ refKeys: number[]; latest: Record<string, unknown> }> {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT ref_key, body FROM \`${contentTable(uuid)}\`
        WHERE uuid = ? AND column_name = 'base' ORDER BY ref_key`,
      [uuid],
    );
    return {
      refKeys: rows.map((row) => Number(row.ref_key)),
      latest: unpack(rows[rows.length - 1]!.body as Buffer),
    };
  }

  it('writes a remembered cell from memory: the next version, merged onto the latest body', () =>
    withOwnServer(async (own) => {
      const hotel = nextHotel++;
      const uuid = await putRate(own.api, hotel);
      const before = stats(own);
      const first = await merge(own, uuid, { price: 1 });
      const second = await merge(own, uuid, { currency: 'EUR' });
      expect([first.cell!.refKey, second.cell!.refKey]).to.deep.equal([1, 2]);
      const after = stats(own);
      expect(after.hits - before.hits, 'both writes found the cell remembered').to.equal(2);
      expect(after.stale - before.stale).to.equal(0);
      const { refKeys, latest } = await stored(uuid);
      expect(refKeys).to.deep.equal([0, 1, 2]);
      expect(latest).to.include({ hotel_id: hotel, price: 1, currency: 'EUR' });
      expect(unpack(second.cell!.body)).to.deep.equal(latest);
    }));

  it('two servers writing one cell in turn: each write the next version, each stale memory one try', async () => {
    const uuid = await putRate(a.api, nextHotel++);
    const staleBefore = stats(a).stale + stats(b).stale;
    const refKeys: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const answer = await merge(i % 2 === 0 ? a : b, uuid, { [`f${i}`]: i });
      refKeys.push(answer.cell!.refKey);
    }
    expect(refKeys).to.deep.equal([1, 2, 3, 4, 5, 6]);
    const { refKeys: storedKeys, latest } = await stored(uuid);
    expect(storedKeys).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    expect(latest).to.include({ f1: 1, f2: 2, f3: 3, f4: 4, f5: 5, f6: 6 });
    // a remembered the create and each of its own writes, each made stale by b's next one.
    expect(stats(a).stale + stats(b).stale - staleBefore).to.be.greaterThan(0);
  });

  it('a group writing a cell that an earlier group of its server is writing waits, then writes from memory', () =>
    withOwnServer(async (own) => {
      const uuid = await putRate(own.api, nextHotel++);
      await merge(own, uuid, { n: 0 }); // remembered at version 1
      // Hold the shard's log lock, so that the first write's group stays in flight.
      const holder = await mysql.createConnection(a.partitionUrls[0]!);
      try {
        await holder.query('START TRANSACTION');
        await holder.query(
          `SELECT table_name FROM \`${NAMESPACE}_shameless_log_locks\` WHERE table_name = ? FOR UPDATE`,
          [contentTable(uuid)],
        );
        const before = stats(own);
        const first = merge(own, uuid, { n: 1 });
        await new Promise((resolve) => setTimeout(resolve, 200));
        const second = merge(own, uuid, { n: 2 });
        await new Promise((resolve) => setTimeout(resolve, 200));
        await holder.query('ROLLBACK');
        const refKeys = (await Promise.all([first, second])).map((answer) => answer.cell!.refKey);
        expect(refKeys).to.deep.equal([2, 3]);
        const after = stats(own);
        // Sent at once, the second would have tried version 2 from memory as well.
        expect(after.stale - before.stale, 'no try from a memory about to go stale').to.equal(0);
        expect(after.hits - before.hits, 'each planned from memory').to.equal(2);
        const { refKeys: storedKeys, latest } = await stored(uuid);
        expect(storedKeys).to.deep.equal([0, 1, 2, 3]);
        expect(latest).to.include({ n: 2 });
      } finally {
        await holder.end();
      }
    }));

  it('a version written behind its back with SQL (as the gem writes) is found, not overwritten', () =>
    withOwnServer(async (own) => {
      const uuid = await putRate(own.api, nextHotel++);
      await merge(own, uuid, { price: 1 }); // remembered at version 1
      const { latest } = await stored(uuid);
      await sql.query(
        `INSERT INTO \`${contentTable(uuid)}\` (uuid, column_name, ref_key, body, created_at)
          VALUES (?, 'base', 2, ?, NOW(6))`,
        [uuid, pack({ ...latest, price: 2, by: 'gem' })],
      );
      const staleBefore = stats(own).stale;
      const answer = await merge(own, uuid, { currency: 'EUR' });
      expect(answer.cell!.refKey).to.equal(3);
      expect(stats(own).stale, 'the remembered version was tried').to.equal(staleBefore + 1);
      const after = await stored(uuid);
      expect(after.refKeys).to.deep.equal([0, 1, 2, 3]);
      expect(after.latest).to.include({ price: 2, by: 'gem', currency: 'EUR' });
      // Read again under the lock and remembered: later writes follow on from there.
      expect((await merge(own, uuid, { price: 4 })).cell!.refKey).to.equal(4);
      expect((await merge(own, uuid, { price: 5 })).cell!.refKey).to.equal(5);
      expect((await stored(uuid)).refKeys).to.deep.equal([0, 1, 2, 3, 4, 5]);
    }));

  it('a request id sent again to a server that remembers the cell gets its one version back', async () => {
    const uuid = await putRate(a.api, nextHotel++);
    const id = requestId();
    const first = await merge(a, uuid, { price: 7 }, id);
    const again = await merge(a, uuid, { price: 7 }, id);
    expect(again.replayed).to.equal(true);
    expect(again.cell!.refKey).to.equal(first.cell!.refKey);
    expect(again.cell!.id).to.equal(first.cell!.id);
    expect((await stored(uuid)).refKeys).to.deep.equal([0, 1]);
    // And the cell is still remembered at its latest version.
    expect((await merge(a, uuid, { price: 8 })).cell!.refKey).to.equal(2);
  });

  it('a batch mixing remembered, stale and repeated cells writes each in order', async () => {
    const uuids = [await putRate(a.api, nextHotel++), await putRate(a.api, nextHotel++)];
    await merge(b, uuids[1]!, { by: 'b' }); // a's memory of uuids[1] is now stale
    const written = await a.api.writeCells({
      writes: [
        mergeRequest(uuids[0]!, { n: 1 }),
        mergeRequest(uuids[1]!, { n: 2 }),
        mergeRequest(uuids[0]!, { m: 3 }),
      ],
    });
    const refKeys = written.results.map((result) =>
      result.outcome?.$case === 'written' ? result.outcome.written.cell?.refKey : result.outcome,
    );
    expect(refKeys).to.deep.equal([1, 2, 2]);
    expect((await stored(uuids[0]!)).latest).to.include({ n: 1, m: 3 });
    expect((await stored(uuids[1]!)).latest).to.include({ by: 'b', n: 2 });
    expect((await stored(uuids[0]!)).refKeys).to.deep.equal([0, 1, 2]);
    expect((await stored(uuids[1]!)).refKeys).to.deep.equal([0, 1, 2]);
  });

  /** A write of `fields` to the meta cell of `uuid`, which Put does not write. */
  const writeMeta = (
    store: StoreFixture,
    uuid: string,
    fields: Record<string, unknown>,
    options: { mode?: WriteMode; expectedRefKey?: number } = {},
  ) =>
    store.api.writeCell({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack(fields),
      mode: options.mode ?? WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
      ...(options.expectedRefKey === undefined ? {} : { expectedRefKey: options.expectedRefKey }),
    });
  /** The meta versions of `uuid` as stored, with their bodies. */
  async function storedMeta(uuid: string): Promise<[number, Record<string, unknown>][]> {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT ref_key, body FROM \`${contentTable(uuid)}\`
        WHERE uuid = ? AND column_name = 'meta' ORDER BY ref_key`,
      [uuid],
    );
    return rows.map((row) => [Number(row.ref_key), unpack(row.body as Buffer)]);
  }

  it('a record it created has no version of its other cells: their first writes go from memory', () =>
    withOwnServer(async (own) => {
      const uuid = await putRate(own.api, nextHotel++);
      const before = stats(own);
      const first = await writeMeta(own, uuid, { n: 1 }, { mode: WriteMode.WRITE_MODE_MERGE });
      const second = await writeMeta(own, uuid, { m: 2 }, { mode: WriteMode.WRITE_MODE_MERGE });
      expect([first.cell!.refKey, second.cell!.refKey]).to.deep.equal([0, 1]);
      const after = stats(own);
      expect(after.hits - before.hits, 'both found remembered').to.equal(2);
      expect(after.stale - before.stale).to.equal(0);
      expect(await storedMeta(uuid)).to.deep.equal([
        [0, { n: 1 }],
        [1, { n: 1, m: 2 }],
      ]);
    }));

  for (const [by, writeFirst] of [
    ['another server', (uuid: string) => writeMeta(a, uuid, { by: 'another server' })],
    [
      'SQL, as the gem writes',
      (uuid: string) =>
        sql.query(
          `INSERT INTO \`${contentTable(uuid)}\` (uuid, column_name, ref_key, body, created_at)
            VALUES (?, 'meta', 0, ?, NOW(6))`,
          [uuid, pack({ by: 'SQL, as the gem writes' })],
        ),
    ],
  ] as const) {
    it(`a first version written behind its back by ${by} is found, not overwritten`, () =>
      withOwnServer(async (own) => {
        const uuid = await putRate(own.api, nextHotel++);
        await writeFirst(uuid);
        const staleBefore = stats(own).stale;
        const answer = await writeMeta(own, uuid, { n: 1 }, { mode: WriteMode.WRITE_MODE_MERGE });
        expect(answer.cell!.refKey).to.equal(1);
        expect(stats(own).stale, 'the remembered absence was tried').to.equal(staleBefore + 1);
        expect(await storedMeta(uuid)).to.deep.equal([
          [0, { by }],
          [1, { by, n: 1 }],
        ]);
      }));
  }

  it('a first write expecting the cell to have no version, or one, is decided as ever', () =>
    withOwnServer(async (own) => {
      const uuid = await putRate(own.api, nextHotel++);
      const refused = await own.api
        .writeCell({
          model: 'rate',
          uuid,
          cell: 'meta',
          body: pack({ n: 0 }),
          mode: WriteMode.WRITE_MODE_REPLACE,
          requestId: requestId(),
          expectedRefKey: 0,
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(String(refused)).to.match(/ABORTED|at version -1, not 0/);
      const hitsBefore = stats(own).hits;
      const first = await writeMeta(own, uuid, { n: 1 }, { expectedRefKey: -1 });
      expect(first.cell!.refKey).to.equal(0);
      expect(stats(own).hits - hitsBefore, 'from memory').to.equal(1);
      expect(await storedMeta(uuid)).to.deep.equal([[0, { n: 1 }]]);
    }));

  it('remembers nothing with --version-cache-bytes 0', async () => {
    const off = await shared.another({ versionCacheBytes: 0 });
    try {
      const uuid = await putRate(off.api, nextHotel++);
      expect((await merge(off, uuid, { price: 1 })).cell!.refKey).to.equal(1);
      expect(off.engine.versionCacheStats()).to.include({ entries: 0, hits: 0 });
    } finally {
      await off.close();
    }
  });
});
