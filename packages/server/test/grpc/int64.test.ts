// 64-bit integers end to end over the raw contract: index values, FindShard values, cell ids
// and log cursors at the edges of their ranges (-2^63, -1, 2^53 + 1, 2^63 - 1, 2^64 - 1), through
// a real gRPC server and MariaDB. Past 2^53 a JS number is no longer exact, so each of these
// would come back wrong (or fail to decode) anywhere a number stood in for the integer.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { Unpackr } from 'msgpackr';
import mysql from 'mysql2/promise';
import {
  FieldType,
  Operator,
  SortOrder,
  WriteMode,
  type Cell,
  type Condition,
  type ModelDefinition,
} from '@shameless/proto';
import { rejection } from '../support/grpcCalls.js';
import { int } from '../support/indexValues.js';
import { type StoreFixture, pack, requestId, startStoreFixture } from '../support/storeFixture.js';

const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;
const PAST_SAFE = 2n ** 53n + 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const SHARDS = 4;

/**
 * The index shard of each account, as the gem's Ruby computes it: `value % 4`, floored
 * (worked by hand: 2^63 is a multiple of 4, 2^53 + 1 is 1 more than one).
 */
const RUBY_SHARD = new Map<bigint, number>([
  [MIN, 0],
  [MAX, 3],
  [PAST_SAFE, 1],
  [-1n, 3],
  [0n, 0],
]);
const ACCOUNTS = [MIN, MAX, PAST_SAFE, -1n];
/** In ascending order. */
const SEQS = [MIN, -(2n ** 53n) - 1n, -1n, 0n, PAST_SAFE, MAX];

const LEDGER: ModelDefinition = {
  name: 'ledger',
  primaryIndex: {
    name: '',
    fields: [
      { name: 'account', type: FieldType.FIELD_TYPE_INTEGER },
      { name: 'seq', type: FieldType.FIELD_TYPE_INTEGER },
    ],
    shardOn: 'account',
  },
  secondaryIndices: [],
  cells: ['meta'],
};

/** Bodies decoded with every 64-bit integer as a bigint, to compare exactly. */
const exact = new Unpackr({ mapsAsObjects: true, useRecords: false, int64AsType: 'bigint' });
const bodyOf = (cell: Cell | undefined) =>
  exact.unpack(cell!.body) as Record<string, number | bigint>;
const asBigInt = (value: number | bigint | undefined) => BigInt(value!);

describe('64-bit integers end to end (raw gRPC)', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let sql: mysql.Connection;

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    await store.api.defineModel({ model: LEDGER });
    sql = await mysql.createConnection({ uri: store.partitionUrls[0]!, supportBigNumbers: true });
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  const put = (values: Record<string, unknown>) =>
    store.api.put({ model: 'ledger', values: pack(values), requestId: requestId() });

  const seqsOf = async (
    account: bigint,
    conditions: Condition[],
    order: SortOrder,
    limit: number,
  ): Promise<bigint[]> => {
    const seqs: bigint[] = [];
    let pageToken = '';
    do {
      const messages = await store.api.where({
        model: 'ledger',
        conditions: [
          { field: 'account', op: Operator.OPERATOR_EQ, values: [int(account)] },
          ...conditions,
        ],
        order,
        limit,
        pageToken,
      });
      for (const record of messages.flatMap((message) => message.records)) {
        seqs.push(asBigInt(bodyOf(record.cells[0]).seq));
      }
      pageToken = messages[messages.length - 1]?.nextPageToken ?? '';
    } while (pageToken !== '');
    return seqs;
  };

  describe('index values', () => {
    before(async () => {
      for (const account of ACCOUNTS) {
        for (const seq of SEQS) await put({ account, seq, amount: 1 });
      }
    });

    it('Put creates records keyed by int64 extremes, each index row in the Ruby shard', async () => {
      for (const account of ACCOUNTS) {
        const shard = RUBY_SHARD.get(account)!;
        const [rows] = await sql.query<mysql.RowDataPacket[]>(
          `SELECT CAST(seq AS CHAR) AS seq_text FROM test_ledger_primary_index_00000${shard} WHERE account = ? ORDER BY seq`,
          [account],
        );
        expect(
          rows.map((row) => BigInt(row.seq_text as string)),
          `index rows of account ${account} in shard ${shard}`,
        ).to.deep.equal(SEQS);
      }
    });

    it('Put updates them: the same record, the next version, the values exact', async () => {
      for (const account of ACCOUNTS) {
        for (const seq of [MIN, PAST_SAFE, MAX]) {
          const updated = await put({ account, seq, amount: MAX });
          expect(updated.created, `${account}/${seq}`).to.equal(false);
          expect(updated.base!.refKey).to.equal(1);
          expect(bodyOf(updated.base)).to.deep.include({ account, seq, amount: MAX });
        }
      }
    });

    it('Where: = on the shard field, every record in index order, one per page, both ways', async () => {
      for (const account of ACCOUNTS) {
        expect(await seqsOf(account, [], SortOrder.SORT_ORDER_ASC, 1)).to.deep.equal(SEQS);
        expect(await seqsOf(account, [], SortOrder.SORT_ORDER_DESC, 1)).to.deep.equal(
          [...SEQS].reverse(),
        );
      }
    });

    it('Where: = and ranges on an int64 field, paged across the extremes', async () => {
      const on = (op: Operator, ...values: bigint[]): Condition[] => [
        { field: 'seq', op, values: values.map(int) },
      ];
      const asc = SortOrder.SORT_ORDER_ASC;
      for (const account of [MAX, MIN]) {
        expect(await seqsOf(account, on(Operator.OPERATOR_EQ, MAX), asc, 2)).to.deep.equal([MAX]);
        expect(await seqsOf(account, on(Operator.OPERATOR_EQ, MIN), asc, 2)).to.deep.equal([MIN]);
        expect(await seqsOf(account, on(Operator.OPERATOR_EQ, PAST_SAFE), asc, 2)).to.deep.equal([
          PAST_SAFE,
        ]);
        // 2^53 + 1 and 2^53 are one double apart no more: a comparison made in floating point
        // would find 2^53 + 1 here.
        expect(await seqsOf(account, on(Operator.OPERATOR_EQ, 2n ** 53n), asc, 2)).to.deep.equal(
          [],
        );
        expect(await seqsOf(account, on(Operator.OPERATOR_GE, -1n), asc, 2)).to.deep.equal([
          -1n,
          0n,
          PAST_SAFE,
          MAX,
        ]);
        expect(await seqsOf(account, on(Operator.OPERATOR_LT, 0n), asc, 2)).to.deep.equal(
          SEQS.slice(0, 3),
        );
        expect(
          await seqsOf(account, on(Operator.OPERATOR_GT, PAST_SAFE - 1n), asc, 1),
        ).to.deep.equal([PAST_SAFE, MAX]);
        expect(
          await seqsOf(
            account,
            on(Operator.OPERATOR_BETWEEN, MIN, MAX),
            SortOrder.SORT_ORDER_DESC,
            2,
          ),
        ).to.deep.equal([...SEQS].reverse());
        expect(await seqsOf(account, on(Operator.OPERATOR_IN, MAX, MIN, 5n), asc, 1)).to.deep.equal(
          [MIN, MAX],
        );
        expect(await seqsOf(account, on(Operator.OPERATOR_NE, 0n), asc, 4)).to.deep.equal(
          SEQS.filter((seq) => seq !== 0n),
        );
      }
    });

    it('refuses index values outside int64 and a forged page token, naming the field', async () => {
      const tooBig = await rejection(put({ account: UINT64_MAX, seq: 1 }));
      expect(tooBig.code).to.equal(status.INVALID_ARGUMENT);
      expect(tooBig.details).to.match(/^values: account must be a signed 64-bit integer/);
      const float = await rejection(put({ account: 1e300, seq: 1 }));
      expect(float.code).to.equal(status.INVALID_ARGUMENT);
      expect(float.details).to.match(/^values: account must be a signed 64-bit integer/);

      const first = await store.api.where({
        model: 'ledger',
        conditions: [{ field: 'account', op: Operator.OPERATOR_EQ, values: [int(MAX)] }],
        limit: 1,
      });
      const token = first[first.length - 1]!.nextPageToken;
      const [fingerprint, key] = JSON.parse(Buffer.from(token, 'base64url').toString()) as [
        string,
        unknown[],
      ];
      expect(key[0], 'a bigint travels in the token as digits and n').to.equal(`${MAX}n`);
      const forged = Buffer.from(JSON.stringify([fingerprint, ['12xn', ...key.slice(1)]])).toString(
        'base64url',
      );
      const error = await rejection(
        store.api.where({
          model: 'ledger',
          conditions: [{ field: 'account', op: Operator.OPERATOR_EQ, values: [int(MAX)] }],
          limit: 1,
          pageToken: forged,
        }),
      );
      expect(error.code).to.equal(status.INVALID_ARGUMENT);
      expect(error.details).to.match(/^page_token:/);
    });
  });

  it('FindShard takes any int64 and answers value mod shards, floored as Ruby does', async () => {
    for (const [value, shard] of RUBY_SHARD) {
      expect(
        await store.api.findShard({ key: { $case: 'value', value } }),
        `${value}`,
      ).to.deep.equal({ shard, partition: 0 });
    }
  });

  it('WriteCell and GetCell keep 64-bit integers of a body byte for byte', async () => {
    const record = await put({ account: 7n, seq: 7n });
    // As Ruby's msgpack writes them: unsigned formats for values >= 0, smallest that holds.
    const body = Buffer.from(
      [
        '85',
        'a3 6d 69 6e d3 80 00 00 00 00 00 00 00', // "min": -2^63
        'a3 6d 61 78 cf 7f ff ff ff ff ff ff ff', // "max": 2^63 - 1
        'a3 75 36 34 cf ff ff ff ff ff ff ff ff', // "u64": 2^64 - 1
        'a3 62 69 67 cf 00 20 00 00 00 00 00 01', // "big": 2^53 + 1
        'a3 6e 65 67 ff', // "neg": -1
      ]
        .join(' ')
        .replaceAll(' ', ''),
      'hex',
    );
    const written = await store.api.writeCell({
      model: 'ledger',
      uuid: record.uuid,
      cell: 'meta',
      body,
      mode: WriteMode.WRITE_MODE_REPLACE,
      requestId: requestId(),
    });
    expect(written.cell!.body.toString('hex')).to.equal(body.toString('hex'));
    const read = await store.api.getCell({
      model: 'ledger',
      uuid: record.uuid,
      cell: 'meta',
      refKey: undefined,
    });
    expect(read.cell!.body.toString('hex')).to.equal(body.toString('hex'));
    expect(bodyOf(read.cell)).to.deep.equal({
      min: MIN,
      max: MAX,
      u64: UINT64_MAX,
      big: PAST_SAFE,
      neg: -1,
    });
  });

  it('a log cursor past 2^53, up to 2^64 - 1, reads nothing and fails nothing', async () => {
    for (let shard = 0; shard < SHARDS; shard++) {
      const { maxId } = await store.api.fetchLatestCells({
        model: 'ledger',
        shard,
        cursor: 0n,
        limit: 1,
      });
      for (const cursor of [PAST_SAFE, 2n ** 63n, UINT64_MAX]) {
        const page = await store.api.fetchLatestCells({
          model: 'ledger',
          shard,
          cursor,
          limit: 10,
        });
        expect(page.cells, `shard ${shard} after ${cursor}`).to.deep.equal([]);
        expect(page.nextCursor).to.equal(cursor);
        expect(page.maxId).to.equal(maxId);
      }
    }
    const cursors = Object.fromEntries(
      Array.from({ length: SHARDS }, (_, shard) => [shard, UINT64_MAX]),
    );
    expect(await store.api.each({ model: 'ledger', cursors })).to.deep.equal([]);
  });

  describe('row ids past 2^53', () => {
    const WIDE: ModelDefinition = {
      ...LEDGER,
      name: 'wide',
      primaryIndex: {
        name: '',
        fields: [{ name: 'key', type: FieldType.FIELD_TYPE_INTEGER }],
        shardOn: 'key',
      },
    };
    const FIRST_ID = PAST_SAFE;
    const puts: Awaited<ReturnType<typeof put>>[] = [];

    /** Every row of every content shard of `wide`, ids read as text. */
    const storedIds = async () => {
      const ids = new Map<number, bigint[]>();
      for (let shard = 0; shard < SHARDS; shard++) {
        const [rows] = await sql.query<mysql.RowDataPacket[]>(
          `SELECT CAST(id AS CHAR) AS id FROM test_wide_00000${shard} ORDER BY id`,
        );
        ids.set(
          shard,
          rows.map((row) => BigInt(row.id as string)),
        );
      }
      return ids;
    };

    before(async () => {
      await store.api.defineModel({ model: WIDE });
      for (let shard = 0; shard < SHARDS; shard++) {
        await sql.query(`ALTER TABLE test_wide_00000${shard} AUTO_INCREMENT = ${FIRST_ID}`);
      }
      for (let key = 0; key < 12; key++) {
        puts.push(
          await store.api.put({
            model: 'wide',
            values: pack({ key, n: 0 }),
            requestId: requestId(),
          }),
        );
      }
      // Batch writes take the multi-row INSERT path.
      const batch = await store.api.writeCells({
        writes: puts.map((p) => ({
          model: 'wide',
          uuid: p.uuid,
          cell: 'meta',
          body: pack({ m: 1 }),
          mode: WriteMode.WRITE_MODE_REPLACE,
          expectedRefKey: undefined,
          requestId: requestId(),
        })),
      });
      expect(batch.results.every((result) => result.outcome?.$case === 'written')).to.equal(true);
    });

    it('Put, WriteCells, GetCell and Where answer the stored ids exactly', async () => {
      const stored = await storedIds();
      const all = [...stored.values()].flat();
      expect(all.every((id) => id >= FIRST_ID)).to.equal(true);
      for (const p of puts) {
        expect(stored.get(p.base!.shard), `shard of ${p.uuid}`).to.include(p.base!.id);
        const got = await store.api.getCell({
          model: 'wide',
          uuid: p.uuid,
          cell: 'base',
          refKey: undefined,
        });
        expect(got.cell!.id).to.equal(p.base!.id);
      }
      const found = await store.api.where({
        model: 'wide',
        conditions: [{ field: 'key', op: Operator.OPERATOR_EQ, values: [int(3)] }],
        cells: ['base', 'meta'],
      });
      const cells = found.flatMap((message) => message.records).flatMap((record) => record.cells);
      expect(cells.map((cell) => cell.id)).to.have.length(2);
      for (const cell of cells) expect(stored.get(cell.shard)).to.include(cell.id);
    });

    it('FetchLatestCells pages by them: ids, next cursor and max id exact', async () => {
      const stored = await storedIds();
      for (const [shard, ids] of stored) {
        if (ids.length < 2) continue;
        const whole = await store.api.fetchLatestCells({
          model: 'wide',
          shard,
          cursor: 0n,
          limit: 0,
        });
        expect(whole.cells.map((cell) => cell.id)).to.deep.equal(ids);
        expect(whole.maxId).to.equal(ids[ids.length - 1]);
        expect(whole.nextCursor).to.equal(ids[ids.length - 1]);
        const rest = await store.api.fetchLatestCells({
          model: 'wide',
          shard,
          cursor: ids[0]!,
          limit: 1,
        });
        expect(rest.cells.map((cell) => cell.id)).to.deep.equal([ids[1]]);
        expect(rest.nextCursor).to.equal(ids[1]);
      }
    });

    it('Each streams from such a cursor, and its batches and heartbeats carry them exactly', async () => {
      const stored = await storedIds();
      const [shard, ids] = [...stored].find(([, shardIds]) => shardIds.length >= 2)!;
      const messages = await store.api.each({
        model: 'wide',
        shards: [shard],
        cursors: { [shard]: ids[0]! },
        batchSize: 1,
      });
      const batches = messages.flatMap((m) => (m.event?.$case === 'batch' ? [m.event.batch] : []));
      expect(batches.map((batch) => batch.cursor)).to.deep.equal(ids.slice(1));
      expect(batches.flatMap((batch) => batch.cells.map((cell) => cell.id))).to.deep.equal(
        ids.slice(1),
      );

      // Following an idle shard: the heartbeat names its position, the last id.
      const stream = store.api.client.each({
        model: 'wide',
        shards: [shard],
        cursors: { [shard]: ids[0]! },
        follow: true,
        batchSize: 100,
        heartbeatIntervalMs: 50,
      });
      const heartbeat = await new Promise<{ [shard: number]: bigint }>((resolve, reject) => {
        stream.on('data', (message) => {
          if (message.event?.$case === 'heartbeat') resolve(message.event.heartbeat.cursors);
        });
        stream.on('error', reject);
      });
      stream.cancel();
      expect(heartbeat).to.deep.equal({ [shard]: ids[ids.length - 1] });
    });
  });
});
