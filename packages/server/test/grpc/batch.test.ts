// WriteCells and GetCells, through a real gRPC server on loopback, over a real MariaDB: result
// order, chained versions within a batch, replays, per-write errors, whole-call validation, and
// the CellWriter guarantees (contiguous versions, idempotency, gap-free log) under concurrent
// batches and single writes.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import {
  type Cell,
  FieldType,
  type ModelDefinition,
  type WriteCellRequest,
  type WriteCellResult,
  type WriteCellsResponse,
  WriteMode,
} from '@shameless/proto';
import mysql from 'mysql2/promise';
import type { MariaDbServer } from '@shameless/testkit';
import { rejection } from '../support/grpcCalls.js';
import {
  RATE_MODEL,
  type StoreFixture,
  type TwoServerStore,
  pack,
  requestId,
  startStoreFixture,
  startTwoServerStore,
  unpack,
} from '../support/storeFixture.js';

const SHARDS = 4;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MISSING_UUID = '11111111-1111-4111-8111-111111111111';
const DOC_MODEL: ModelDefinition = {
  name: 'doc',
  primaryIndex: {
    name: '',
    fields: [{ name: 'doc_id', type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: 'doc_id',
  },
  secondaryIndices: [],
  cells: [],
};

describe('batch RPCs: WriteCells and GetCells', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let sql: mysql.Pool;
  let hotel = 0;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: RATE_MODEL });
    sql = mysql.createPool({ uri: store.partitionUrls[0]!, connectionLimit: 2, timezone: 'Z' });
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  /** A new record (a rate of a new hotel); its uuid. */
  const newRecord = async (content: Record<string, unknown> = {}) => {
    hotel += 1;
    const put = await store.api.put({
      model: 'rate',
      values: pack({
        hotel_id: hotel,
        room_type: 'r',
        check_in_date: 'd',
        gateway: 'g',
        discount_type: 'x',
        ...content,
      }),
      requestId: requestId(),
    });
    return put.uuid;
  };

  const write = (
    uuid: string,
    cell: string,
    body: Record<string, unknown>,
    options: Partial<WriteCellRequest> = {},
  ): WriteCellRequest => ({
    model: 'rate',
    uuid,
    cell,
    body: pack(body),
    mode: WriteMode.WRITE_MODE_REPLACE,
    requestId: requestId(),
    ...options,
  });

  const written = (result: WriteCellResult | undefined) => {
    if (result?.outcome?.$case !== 'written') {
      throw new Error(`expected a written result, got ${JSON.stringify(result?.outcome)}`);
    }
    return result.outcome.written;
  };
  const cellsOf = (response: WriteCellsResponse): Cell[] =>
    response.results.map((result) => written(result).cell!);

  const table = (shard: number) => `test_rate_${String(shard).padStart(6, '0')}`;

  /** Every content row of every shard, in id order per shard. */
  const contentRows = async () => {
    const rows: {
      shard: number;
      id: bigint;
      uuid: string;
      cell: string;
      refKey: number;
      requestId: string;
    }[] = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      const [found] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT id, uuid, column_name, ref_key, request_id FROM \`${table(shard)}\` ORDER BY id`,
      );
      for (const row of found) {
        rows.push({
          shard,
          id: BigInt(row.id as number),
          uuid: String(row.uuid),
          cell: String(row.column_name),
          refKey: Number(row.ref_key),
          requestId: String(row.request_id),
        });
      }
    }
    return rows;
  };

  describe('WriteCells', () => {
    it('answers one result per write, in request order, across records, cells and shards', async () => {
      const uuids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newRecord()));
      const writes = uuids.flatMap((uuid, i) => [
        write(uuid, 'meta', { i, cell: 'meta' }),
        write(uuid, 'base', { price: i }, { mode: WriteMode.WRITE_MODE_MERGE }),
      ]);
      const response = await store.api.writeCells({ writes });

      expect(response.results).to.have.length(writes.length);
      const cells = cellsOf(response);
      cells.forEach((cell, i) => {
        expect(cell.uuid).to.equal(writes[i]!.uuid);
        expect(cell.name).to.equal(writes[i]!.cell);
        expect(written(response.results[i]).replayed).to.equal(false);
      });
      for (const [i, uuid] of uuids.entries()) {
        const meta = cells[2 * i]!;
        const base = cells[2 * i + 1]!;
        expect(meta.refKey).to.equal(0);
        expect(unpack(meta.body)).to.deep.equal({ i, cell: 'meta' });
        expect(base.refKey).to.equal(1);
        // A merge into the base cell keeps the index fields.
        expect(unpack(base.body)).to.include({ hotel_id: hotel - 5 + i, price: i });
        // What was answered is what is stored, created_at included.
        const stored = await store.api.getCell({ model: 'rate', uuid, cell: 'base', refKey: 1 });
        expect(stored.cell).to.deep.equal(base);
      }
      expect(new Set(cells.map((cell) => cell.shard)).size).to.be.greaterThan(1);
    });

    it('chains writes to one cell: contiguous ref_keys, each merge onto the body before it', async () => {
      const uuid = await newRecord();
      const merge = { mode: WriteMode.WRITE_MODE_MERGE };
      const response = await store.api.writeCells({
        writes: [
          write(uuid, 'meta', { a: 1 }),
          write(uuid, 'meta', { b: 2 }, merge),
          write(uuid, 'base', { price: 7 }, merge),
          write(uuid, 'meta', { a: 3 }, merge),
          write(uuid, 'meta', { c: 4 }),
          write(uuid, 'meta', { d: 5 }, merge),
          write(uuid, 'base', { price: 8 }, merge),
        ],
      });
      const cells = cellsOf(response);
      const meta = cells.filter((cell) => cell.name === 'meta');
      expect(meta.map((cell) => cell.refKey)).to.deep.equal([0, 1, 2, 3, 4]);
      expect(meta.map((cell) => unpack(cell.body))).to.deep.equal([
        { a: 1 },
        { a: 1, b: 2 },
        { a: 3, b: 2 },
        { c: 4 },
        { c: 4, d: 5 },
      ]);
      const base = cells.filter((cell) => cell.name === 'base');
      expect(base.map((cell) => cell.refKey)).to.deep.equal([1, 2]);
      expect(unpack(base[1]!.body)).to.include({ hotel_id: hotel, price: 8 });
      // One shard, one transaction: the ids follow request order.
      const ids = cells.map((cell) => cell.id);
      expect(ids).to.deep.equal([...ids].sort((x, y) => Number(x - y)));

      const followUp = await store.api.writeCell(
        write(uuid, 'meta', { e: 6 }, { mode: WriteMode.WRITE_MODE_MERGE, expectedRefKey: 4 }),
      );
      expect(followUp.cell?.refKey).to.equal(5);
      expect(unpack(followUp.cell!.body)).to.deep.equal({ c: 4, d: 5, e: 6 });
    });

    it('replays a whole batch: the same versions come back and nothing is written', async () => {
      const uuids = await Promise.all([1, 2, 3, 4].map(() => newRecord()));
      const writes = uuids.flatMap((uuid, i) => [
        write(uuid, 'meta', { i }),
        write(uuid, 'meta', { j: i }, { mode: WriteMode.WRITE_MODE_MERGE }),
      ]);
      const first = await store.api.writeCells({ writes });
      const rowsBefore = (await contentRows()).length;

      const again = await store.api.writeCells({ writes });
      expect(again.results.map((result) => written(result).replayed)).to.deep.equal(
        writes.map(() => true),
      );
      expect(cellsOf(again)).to.deep.equal(cellsOf(first));
      expect((await contentRows()).length).to.equal(rowsBefore);

      // A single WriteCell with one of the batch's request ids replays it too.
      const single = await store.api.writeCell(writes[3]!);
      expect(single.replayed).to.equal(true);
      expect(single.cell).to.deep.equal(cellsOf(first)[3]);
    });

    it('replays a resent write whose expected version is now stale, and applies the new ones beside it', async () => {
      const uuid = await newRecord();
      const first = write(uuid, 'meta', { v: 0 }, { expectedRefKey: -1 });
      const applied = cellsOf(await store.api.writeCells({ writes: [first] }))[0]!;
      // The retry of a write that succeeded (its answer was lost): its expected version (-1) is
      // stale now, yet it is a replay, not a conflict; the new write with it is applied once.
      const fresh = write(uuid, 'meta', { v: 1 }, { expectedRefKey: 0 });
      const response = await store.api.writeCells({ writes: [first, fresh] });
      expect(response.results.map((result) => written(result).replayed)).to.deep.equal([
        true,
        false,
      ]);
      expect(cellsOf(response).map((cell) => cell.refKey)).to.deep.equal([0, 1]);
      expect(cellsOf(response)[0]).to.deep.equal(applied);
      const rows = (await contentRows()).filter((row) => row.uuid === uuid && row.cell === 'meta');
      expect(rows.map((row) => row.refKey)).to.deep.equal([0, 1]);
    });

    it('replays a request id repeated for the same cell within a batch', async () => {
      const uuid = await newRecord();
      const once = write(uuid, 'meta', { once: true });
      const response = await store.api.writeCells({
        writes: [once, once, write(uuid, 'meta', { next: true }), once],
      });
      const cells = cellsOf(response);
      expect(response.results.map((result) => written(result).replayed)).to.deep.equal([
        false,
        true,
        false,
        true,
      ]);
      expect(cells.map((cell) => cell.refKey)).to.deep.equal([0, 0, 1, 0]);
      expect(cells[1]).to.deep.equal(cells[0]);
      expect(cells[3]).to.deep.equal(cells[0]);
      const rows = (await contentRows()).filter((row) => row.uuid === uuid && row.cell === 'meta');
      expect(rows).to.have.length(2);
    });

    it('refuses a write on its own: NOT_FOUND for a missing record, ABORTED for a stale version', async () => {
      const uuid = await newRecord();
      const other = await newRecord();
      const response = await store.api.writeCells({
        writes: [
          write(uuid, 'meta', { n: 0 }),
          write(MISSING_UUID, 'meta', { n: 1 }),
          write(MISSING_UUID, 'base', { n: 1 }, { mode: WriteMode.WRITE_MODE_MERGE }),
          write(uuid, 'meta', { n: 2 }, { expectedRefKey: -1 }),
          write(uuid, 'meta', { n: 3 }, { expectedRefKey: 0 }),
          write(other, 'meta', { n: 4 }, { expectedRefKey: -1 }),
        ],
      });
      const outcomes = response.results.map((result) =>
        result.outcome?.$case === 'error'
          ? status[result.outcome.error.code]
          : `ref_key ${written(result).cell!.refKey}`,
      );
      expect(outcomes).to.deep.equal([
        'ref_key 0',
        'NOT_FOUND',
        'NOT_FOUND',
        'ABORTED',
        'ref_key 1',
        'ref_key 0',
      ]);
      const aborted = response.results[3]!.outcome;
      expect(aborted?.$case === 'error' && aborted.error.message).to.match(/version 0, not -1/);
      const missing = response.results[1]!.outcome;
      expect(missing?.$case === 'error' && missing.error.message).to.match(/does not exist/);
      const rows = (await contentRows()).filter((row) => row.uuid === uuid && row.cell === 'meta');
      expect(rows.map((row) => row.refKey)).to.deep.equal([0, 1]);
      expect((await contentRows()).some((row) => row.uuid === MISSING_UUID)).to.equal(false);
    });

    it('remembers the records it saw exist, and asks again for one it did not find', async () => {
      // Another server over the same tables, and one that remembers nothing.
      const other = await startStoreFixture({
        shardsCount: SHARDS,
        partitionUrls: store.partitionUrls,
      });
      const forgetful = await startStoreFixture({
        shardsCount: SHARDS,
        partitionUrls: store.partitionUrls,
        recordCacheEntries: 0,
      });
      try {
        const outcome = async (fixture: StoreFixture, uuid: string) => {
          const [result] = (await fixture.api.writeCells({ writes: [write(uuid, 'meta', {})] }))
            .results;
          return result?.outcome?.$case === 'error' ? status[result.outcome.error.code] : 'written';
        };
        // Made by this server: remembered when its create commits.
        const ours = await newRecord();
        // Made by the other one: this server reads its base cell once, then remembers it.
        const theirs = (
          await other.api.put({
            model: 'rate',
            values: pack({
              hotel_id: (hotel += 1),
              room_type: 'r',
              check_in_date: 'd',
              gateway: 'g',
              discount_type: 'x',
            }),
            requestId: requestId(),
          })
        ).uuid;
        expect(await outcome(store, theirs)).to.equal('written');
        // A record not found is not remembered: once the gem writes its base cell, it is found.
        const late = '22222222-2222-4222-8222-222222222222';
        expect(await outcome(store, late)).to.equal('NOT_FOUND');
        await sql.query(
          `INSERT INTO \`${table(store.engine.layout.contentShard(late))}\` (uuid, column_name, ref_key, body, created_at) VALUES (?, 'base', 0, ?, NOW())`,
          [late, pack({})],
        );
        expect(await outcome(store, late)).to.equal('written');
        // Remembered records are not read again. Shown by taking their base cells away behind
        // the servers' backs (nothing of Shameless deletes a row): a write to a cell they have
        // no version of yet still goes through where the record is remembered, and only there.
        const fresh = await newRecord();
        for (let shard = 0; shard < SHARDS; shard++) {
          await sql.query(
            `DELETE FROM \`${table(shard)}\` WHERE uuid IN (?) AND column_name = 'base'`,
            [[ours, fresh]],
          );
        }
        expect(await outcome(store, fresh)).to.equal('written');
        expect(await outcome(forgetful, ours)).to.equal('NOT_FOUND');
        expect(await outcome(other, ours), 'the other server never saw it').to.equal('NOT_FOUND');
        expect(await outcome(store, ours)).to.equal('written');
        expect(store.engine.recordCacheStats().entries).to.be.at.least(4);
        expect(forgetful.engine.recordCacheStats()).to.deep.equal({ entries: 0, capacity: 0 });
      } finally {
        await other.close();
        await forgetful.close();
      }
    });

    it('fails the whole call on a malformed write, naming it, before anything is written', async () => {
      const uuid = await newRecord();
      const good = () => write(uuid, 'meta', { ok: true });
      const cases: {
        writes: WriteCellRequest[];
        code: status;
        field: string;
        message: RegExp;
      }[] = [
        {
          writes: [good(), good(), { ...good(), uuid: 'not-a-uuid' }],
          code: status.INVALID_ARGUMENT,
          field: 'writes[2].uuid',
          message: /lowercase UUID/,
        },
        {
          writes: [good(), { ...good(), requestId: '' }],
          code: status.INVALID_ARGUMENT,
          field: 'writes[1].request_id',
          message: /is required/,
        },
        {
          writes: [good(), good(), good(), { ...good(), body: pack([1, 2]) }],
          code: status.INVALID_ARGUMENT,
          field: 'writes[3].body',
          message: /MessagePack map/,
        },
        {
          writes: [write(uuid, 'base', { hotel_id: 5 }), good()],
          code: status.INVALID_ARGUMENT,
          field: 'writes[0].body',
          message: /hotel_id cannot be written: it is part of the primary index/,
        },
        {
          writes: [good(), { ...good(), mode: 7 as WriteMode }],
          code: status.INVALID_ARGUMENT,
          field: 'writes[1].mode',
          message: /WRITE_MODE_REPLACE or WRITE_MODE_MERGE/,
        },
        {
          writes: [good(), { ...good(), expectedRefKey: -2 }],
          code: status.INVALID_ARGUMENT,
          field: 'writes[1].expected_ref_key',
          message: /must be -1/,
        },
        {
          writes: [good(), { ...good(), cell: 'nope' }],
          code: status.NOT_FOUND,
          field: 'writes[1].cell',
          message: /has no cell "nope"/,
        },
        {
          writes: [good(), good(), { ...good(), model: 'nope' }],
          code: status.NOT_FOUND,
          field: 'writes[2].model',
          message: /model "nope" is not defined/,
        },
        { writes: [], code: status.INVALID_ARGUMENT, field: 'writes', message: /at least one/ },
      ];
      const rowsBefore = (await contentRows()).length;
      for (const { writes, code, field, message } of cases) {
        const error = await rejection(store.api.writeCells({ writes }));
        expect(status[error.code], field).to.equal(status[code]);
        expect(error.details, field).to.satisfy((details: string) =>
          details.startsWith(`${field}: `),
        );
        expect(error.details, field).to.match(message);
        if (code === status.INVALID_ARGUMENT) {
          expect(error.metadata.get('shameless-field')).to.deep.equal([field]);
        }
      }
      expect((await contentRows()).length).to.equal(rowsBefore);
    });

    it('refuses more than 10000 writes', async () => {
      const uuid = await newRecord();
      const body = pack({});
      const writes = Array.from({ length: 10_001 }, (_, i) =>
        write(uuid, 'meta', {}, { body, requestId: `too-many-${i}` }),
      );
      const error = await rejection(store.api.writeCells({ writes }));
      expect(error.code).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.equal('writes: at most 10000 per call, got 10001');
    });

    it('writes one uuid and cell of two models as two cells: each its own versions and record', async () => {
      // Found by the contract fuzzer (seed 1329516896): a batch writing cell meta of a rate and
      // then cell meta of the same uuid in another model chained the second onto the first's
      // version (ref_key 1, in a table where the record does not exist).
      await store.api.defineModel({ model: { ...DOC_MODEL, name: 'twin', cells: ['meta'] } });
      const uuid = await newRecord();
      const twinTable = `test_twin_${String(parseInt(uuid.slice(0, 4), 16) % SHARDS).padStart(6, '0')}`;
      const [before] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT COUNT(*) AS n FROM \`${twinTable}\``,
      );
      const response = await store.api.writeCells({
        writes: [
          write(uuid, 'meta', { n: 1 }),
          write(uuid, 'meta', { n: 2 }, { model: 'twin' }),
          write(uuid, 'meta', { n: 3 }),
        ],
      });
      expect(
        cellsOf({ results: [response.results[0]!, response.results[2]!] }).map(
          (cell) => cell.refKey,
        ),
      ).to.deep.equal([0, 1]);
      const refused = response.results[1]?.outcome;
      expect(refused?.$case).to.equal('error');
      if (refused?.$case === 'error') {
        expect(refused.error.code).to.equal(status.NOT_FOUND);
        expect(refused.error.message).to.include('does not exist in model twin');
      }
      const [after] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT COUNT(*) AS n FROM \`${twinTable}\``,
      );
      expect(Number(after[0]!.n), 'nothing written in the other model').to.equal(
        Number(before[0]!.n),
      );
    });

    it('splits a large insert into several statements of one transaction', async () => {
      // A model of its own, so that the big rows stay out of the other tests' shard logs.
      await store.api.defineModel({ model: DOC_MODEL });
      const { uuid } = await store.api.put({
        model: 'doc',
        values: pack({ doc_id: 1 }),
        requestId: requestId(),
      });
      // Six 600 KB bodies: about 7 MiB of INSERT text, more than one statement's share.
      const writes = [0, 1, 2, 3, 4, 5].map((n) =>
        write(
          uuid,
          'base',
          { n, blob: Buffer.alloc(600 * 1024, n) },
          {
            model: 'doc',
            mode: n % 2 ? WriteMode.WRITE_MODE_MERGE : WriteMode.WRITE_MODE_REPLACE,
          },
        ),
      );
      const cells = cellsOf(await store.api.writeCells({ writes }));
      expect(cells.map((cell) => cell.refKey)).to.deep.equal([1, 2, 3, 4, 5, 6]);
      for (const cell of cells) {
        const stored = await store.api.getCell({
          model: 'doc',
          uuid,
          cell: 'base',
          refKey: cell.refKey,
        });
        expect(stored.cell).to.deep.equal(cell);
        expect(unpack(cell.body).n).to.equal(cell.refKey - 1);
      }
    });
  });

  describe('GetCells', () => {
    it('answers the latest version of each key in request order; no cell for missing ones', async () => {
      const first = await newRecord({ price: 1 });
      const second = await newRecord({ price: 2 });
      const [meta] = cellsOf(
        await store.api.writeCells({
          writes: [
            write(first, 'meta', { v: 0 }),
            write(first, 'meta', { v: 1 }),
            write(second, 'base', { price: 3 }, { mode: WriteMode.WRITE_MODE_MERGE }),
          ],
        }),
      ).slice(1);
      const response = await store.api.getCells({
        model: 'rate',
        keys: [
          { uuid: first, cell: 'meta' },
          { uuid: second, cell: 'meta' },
          { uuid: MISSING_UUID, cell: 'base' },
          { uuid: second, cell: '' },
          { uuid: first, cell: 'base' },
          { uuid: first, cell: 'meta' },
        ],
      });
      const found = response.results.map((result) => result.cell);
      expect(found).to.have.length(6);
      expect(found[0]).to.deep.equal(meta);
      expect(found[1]).to.equal(undefined);
      expect(found[2]).to.equal(undefined);
      expect(found[3]?.refKey).to.equal(1);
      expect(unpack(found[3]!.body)).to.include({ price: 3 });
      expect(found[4]?.refKey).to.equal(0);
      expect(unpack(found[4]!.body)).to.include({ price: 1 });
      expect(found[5]).to.deep.equal(meta);
    });

    it('reads many records over every shard', async () => {
      // One after another: the creates of one turn share its content shards (createShards.ts).
      const uuids: string[] = [];
      for (let i = 0; i < 40; i++) uuids.push(await newRecord());
      await store.api.writeCells({
        writes: uuids.map((uuid, i) => write(uuid, 'meta', { i })),
      });
      const keys = uuids.map((uuid) => ({ uuid, cell: 'meta' })).reverse();
      const response = await store.api.getCells({ model: 'rate', keys });
      expect(response.results.map((result) => result.cell?.uuid)).to.deep.equal(
        keys.map((key) => key.uuid),
      );
      expect(response.results.map((result) => unpack(result.cell!.body).i)).to.deep.equal(
        uuids.map((_, i) => i).reverse(),
      );
      expect(new Set(response.results.map((result) => result.cell!.shard)).size).to.equal(SHARDS);
    });

    it('fails the whole call on a malformed key, naming it', async () => {
      const uuid = await newRecord();
      const cases = [
        {
          request: {
            model: 'rate',
            keys: [
              { uuid, cell: '' },
              { uuid: 'x', cell: '' },
            ],
          },
          code: status.INVALID_ARGUMENT,
          message: /^keys\[1\]\.uuid: /,
        },
        {
          request: { model: 'rate', keys: [{ uuid, cell: 'nope' }] },
          code: status.NOT_FOUND,
          message: /^keys\[0\]\.cell: .*has no cell "nope"/,
        },
        {
          request: { model: 'rate', keys: [] },
          code: status.INVALID_ARGUMENT,
          message: /^keys: at least one/,
        },
        {
          request: { model: 'nope', keys: [{ uuid, cell: '' }] },
          code: status.NOT_FOUND,
          message: /model "nope" is not defined/,
        },
      ];
      for (const { request, code, message } of cases) {
        const error = await rejection(store.api.getCells(request));
        expect(status[error.code]).to.equal(status[code]);
        expect(error.details).to.match(message);
      }
    });
  });

  describe('under concurrency', () => {
    it('batches and single writes on the same cells: contiguous versions, each write once, a gap-free log', async () => {
      const uuids = await Promise.all(Array.from({ length: 8 }, () => newRecord()));
      const cells = uuids.flatMap((uuid) => [
        { uuid, cell: 'meta' },
        { uuid, cell: 'base' },
      ]);
      const acknowledged: { requestId: string; cell: Cell }[] = [];
      const failures: string[] = [];
      let writing = true;

      // A pager per shard reads the log as it grows, in small pages, as a consumer would.
      const paged = new Map<number, bigint[]>();
      const pagers = Array.from({ length: SHARDS }, async (_, shard) => {
        const seen: bigint[] = [];
        paged.set(shard, seen);
        let cursor = 0n;
        for (;;) {
          const stopping = !writing;
          const page = await store.api.fetchLatestCells({ model: 'rate', shard, cursor, limit: 7 });
          seen.push(...page.cells.map((cell) => cell.id));
          cursor = page.nextCursor;
          if (stopping && cursor >= page.maxId) return;
          if (page.cells.length === 0) await sleep(2);
        }
      });

      const pick = () => cells[Math.floor(Math.random() * cells.length)]!;
      const request = () => {
        const { uuid, cell } = pick();
        return write(
          uuid,
          cell,
          { at: Date.now() },
          {
            mode: Math.random() < 0.5 ? WriteMode.WRITE_MODE_MERGE : WriteMode.WRITE_MODE_REPLACE,
          },
        );
      };
      const batchWriters = Array.from({ length: 4 }, async () => {
        for (let n = 0; n < 15; n++) {
          const writes = Array.from({ length: 30 }, request);
          try {
            const response = await store.api.writeCells({ writes });
            response.results.forEach((result, i) =>
              acknowledged.push({ requestId: writes[i]!.requestId, cell: written(result).cell! }),
            );
          } catch (error) {
            failures.push(`batch: ${String(error)}`);
          }
        }
      });
      const singleWriters = Array.from({ length: 4 }, async () => {
        for (let n = 0; n < 60; n++) {
          const single = request();
          try {
            const response = await store.api.writeCell(single);
            acknowledged.push({ requestId: single.requestId, cell: response.cell! });
          } catch (error) {
            failures.push(`single: ${String(error)}`);
          }
        }
      });
      await Promise.all([...batchWriters, ...singleWriters]);
      writing = false;
      await Promise.all(pagers);
      expect(failures).to.deep.equal([]);

      const allRows = await contentRows();
      const rows = allRows.filter((row) => uuids.includes(row.uuid));
      // Each acknowledged write stored exactly once, besides each record's base version 0.
      const appended = rows.filter((row) => row.cell !== 'base' || row.refKey > 0);
      expect(appended.map((row) => row.requestId).sort()).to.deep.equal(
        acknowledged.map((ack) => ack.requestId).sort(),
      );
      // Per cell, ref_keys 0..n-1, each answered to exactly one write.
      for (const { uuid, cell } of cells) {
        const refKeys = rows
          .filter((row) => row.uuid === uuid && row.cell === cell)
          .map((row) => row.refKey)
          .sort((x, y) => x - y);
        expect(refKeys, `${uuid}/${cell}`).to.deep.equal(refKeys.map((_, i) => i));
      }
      const byId = new Map(rows.map((row) => [`${row.shard}/${row.id}`, row]));
      for (const { cell } of acknowledged) {
        const row = byId.get(`${cell.shard}/${cell.id}`);
        expect(row, `row of ${cell.shard}/${cell.id}`).to.not.equal(undefined);
        expect([row!.uuid, row!.cell, row!.refKey]).to.deep.equal([
          cell.uuid,
          cell.name,
          cell.refKey,
        ]);
      }
      // Each shard's pager saw every committed row once, in ascending id: ids commit in order.
      for (let shard = 0; shard < SHARDS; shard++) {
        const ids = allRows.filter((row) => row.shard === shard).map((row) => row.id);
        expect(paged.get(shard), `log of shard ${shard}`).to.deep.equal(ids);
      }
    });
  });
});

describe('batch RPCs: a partition that is down', function () {
  this.timeout(90_000);
  let second: MariaDbServer;
  let store: StoreFixture;
  let servers: TwoServerStore;

  before(async () => {
    servers = await startTwoServerStore();
    ({ store, second } = servers);
  });
  after(async () => {
    await servers?.close();
  });

  it('fails WriteCells UNAVAILABLE; resending it applies the rest and replays what committed', async () => {
    const byPartition: [string[], string[]] = [[], []];
    for (let hotelId = 1; byPartition[0].length < 3 || byPartition[1].length < 3; hotelId++) {
      const put = await store.api.put({
        model: 'rate',
        values: pack({
          hotel_id: hotelId,
          room_type: 'r',
          check_in_date: 'd',
          gateway: 'g',
          discount_type: 'x',
        }),
        requestId: requestId(),
      });
      byPartition[put.base!.shard < 2 ? 0 : 1].push(put.uuid);
    }
    const uuids = [...byPartition[0].slice(0, 3), ...byPartition[1].slice(0, 3)];
    const writes = uuids.map((uuid, i) => ({
      model: 'rate',
      uuid,
      cell: 'meta',
      body: pack({ i }),
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    }));

    await second.kill();
    const down = await rejection(store.api.writeCells({ writes }));
    expect(down.code).to.equal(status.UNAVAILABLE);
    expect(down.details).to.match(/partition 1 is unavailable/);

    await second.start();
    const resent = await store.api.writeCells({ writes });
    const results = resent.results.map((result) =>
      result.outcome?.$case === 'written' ? result.outcome.written : undefined,
    );
    // The first partition's writes committed before the failure: they replay.
    expect(results.map((result) => result?.replayed)).to.deep.equal([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(results.map((result) => result?.cell?.refKey)).to.deep.equal([0, 0, 0, 0, 0, 0]);
  });
});
