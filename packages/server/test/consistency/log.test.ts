// SPEC §4.4, gap-free log: while 16 writers append to one content shard as fast as they can
// (through two `shameless serve` processes), a follower on Each and a pager on
// FetchLatestCells each receive every committed cell of that shard exactly once, in ascending
// id, with no skip. The negative control shows that this setup does catch the gem's bug: a naive
// `id > cursor` poller over plain concurrent inserts loses rows.
import { expect } from 'chai';
import { WriteMode, type Cell } from '@shameless/proto';
import type { ClientReadableStream } from '@grpc/grpc-js';
import type { EachResponse } from '@shameless/proto';
import mysql from 'mysql2/promise';
import { pack } from '../support/storeFixture.js';
import {
  ProcessCluster,
  RATE,
  codeName,
  contentTable,
  grpcCode,
  latencySummary,
  newRequestId,
  range,
  sleep,
} from './support.js';

const SHARDS = 4;
const SHARD = 1;
const WRITERS = 16;
const WRITE_MS = 3000;
const MAX_WRITES_PER_WRITER = 2000;

describe('consistency: gap-free log (§4.4)', function () {
  this.timeout(120_000);
  let cluster: ProcessCluster;

  before(async () => {
    cluster = await ProcessCluster.create(SHARDS);
    await Promise.all([cluster.start(0), cluster.start(1)]);
    await cluster.api(0).defineModel({ model: RATE });
    await cluster.api(1).describeStore({});
  });
  after(() => cluster?.close());

  /** Creates records until WRITERS of them live in content shard SHARD. */
  const recordsInShard = async (): Promise<string[]> => {
    const uuids: string[] = [];
    for (let hotelId = 1; uuids.length < WRITERS; hotelId++) {
      if (hotelId > 1000) throw new Error('could not place records in the shard');
      const put = await cluster.api(0).put({
        model: 'rate',
        values: pack({ hotel_id: hotelId, room_type: 'r', check_in_date: 'd', gateway: 'g' }),
        requestId: newRequestId('setup'),
      });
      if (put.base!.shard === SHARD) uuids.push(put.uuid);
    }
    return uuids;
  };

  it('an Each follower and a FetchLatestCells pager see every committed cell once, in id order', async () => {
    const uuids = await recordsInShard();
    const table = contentTable(SHARD);
    let writing = true;
    let target = Number.POSITIVE_INFINITY; // the final max id, once the writers have stopped
    const problems: string[] = [];

    // Consumer 1: Each with follow through server 0.
    const followed: Cell[] = [];
    const stream: ClientReadableStream<EachResponse> = cluster.api(0).client.each({
      model: 'rate',
      shards: [SHARD],
      cursors: {},
      follow: true,
      batchSize: 100,
      heartbeatIntervalMs: 200,
    });
    const followerDone = new Promise<void>((resolve, reject) => {
      stream.on('data', (message: EachResponse) => {
        if (message.event?.$case !== 'batch') return;
        followed.push(...message.event.batch.cells);
        if ((followed[followed.length - 1]?.id ?? 0) >= target) resolve();
      });
      stream.on('error', (error) => {
        if (grpcCode(error) !== 1) reject(error); // CANCELLED is ours
      });
      stream.on('end', () => reject(new Error('the follow stream ended by itself')));
    });
    void followerDone.catch(() => undefined); // awaited below; a late rejection is not unhandled
    const targetReached = () => {
      const last = followed[followed.length - 1]?.id ?? 0;
      if (last >= target) return Promise.resolve();
      return followerDone;
    };

    // Consumer 2: FetchLatestCells pages through server 1, small pages.
    const paged: Cell[] = [];
    let pages = 0;
    const pager = (async () => {
      let cursor = 0n;
      for (;;) {
        const page = await cluster.api(1).fetchLatestCells({
          model: 'rate',
          shard: SHARD,
          cursor,
          limit: 50,
        });
        pages += 1;
        paged.push(...page.cells);
        if (page.cells.length > 0 && page.nextCursor !== page.cells[page.cells.length - 1]!.id) {
          problems.push(`page after ${cursor}: next_cursor ${page.nextCursor} is not its last id`);
        }
        cursor = page.nextCursor;
        if (!writing && cursor >= target) return;
        if (page.cells.length === 0) await sleep(2);
      }
    })();
    void pager.catch(() => undefined); // awaited below; a late rejection is not unhandled

    // 16 writers, one record each, all in the same shard, half through each server.
    let writes = 0;
    const latencies: number[] = [];
    const failures: string[] = [];
    const started = Date.now();
    await Promise.all(
      uuids.map(async (uuid, w) => {
        const api = cluster.api(w % 2);
        for (let n = 0; n < MAX_WRITES_PER_WRITER && Date.now() - started < WRITE_MS; n++) {
          const sent = performance.now();
          try {
            await api.writeCell({
              model: 'rate',
              uuid,
              cell: 'meta',
              body: pack({ w, n }),
              mode: WriteMode.WRITE_MODE_REPLACE,
              requestId: newRequestId(`log${w}`),
            });
            writes += 1;
            latencies.push(performance.now() - sent);
          } catch (error) {
            failures.push(`writer ${w}: ${codeName(grpcCode(error))}`);
          }
        }
      }),
    );
    const elapsed = Date.now() - started;
    writing = false;

    const rows = await cluster.query<
      { id: number; uuid: string; column_name: string; ref_key: number }[]
    >(`SELECT id, uuid, column_name, ref_key FROM \`${table}\` ORDER BY id`);
    target = Number(rows[rows.length - 1]!.id);
    const caughtUp = await Promise.race([
      Promise.all([targetReached(), pager]).then(() => true),
      sleep(20_000).then(() => false),
    ]);
    stream.cancel();
    console.log(
      `      log: ${writes} writes into shard ${SHARD} in ${elapsed} ms (${Math.round((writes * 1000) / elapsed)} writes/s, ${WRITERS} writers, 2 servers, WriteCell ${latencySummary(latencies)}); ` +
        `follower got ${followed.length} cells, pager ${paged.length} in ${pages} pages`,
    );
    expect(failures).to.deep.equal([]);
    expect(caughtUp, 'both consumers reach the final max id').to.equal(true);
    expect(problems).to.deep.equal([]);

    const expected = rows.map((row) => `${row.id}:${row.uuid}:${row.column_name}:${row.ref_key}`);
    const seen = (cells: Cell[]) =>
      cells.map((cell) => `${cell.id}:${cell.uuid}:${cell.name}:${cell.refKey}`);
    // The shard holds the records' base cells and one meta version per acknowledged write.
    expect(rows).to.have.length(WRITERS + writes);
    // Exactly the table's rows, each once, in ascending id: nothing skipped, nothing repeated.
    expect(missingFrom(expected, seen(followed)), 'cells the follower skipped').to.deep.equal([]);
    expect(seen(followed)).to.deep.equal(expected);
    expect(missingFrom(expected, seen(paged)), 'cells the pager skipped').to.deep.equal([]);
    expect(seen(paged)).to.deep.equal(expected);
    expect(followed.every((cell) => cell.shard === SHARD)).to.equal(true);
  });

  it('negative control: a naive id > cursor poller over plain concurrent inserts skips rows', async () => {
    await cluster.query(`CREATE TABLE naive_log (
      id INT AUTO_INCREMENT PRIMARY KEY,
      uuid VARCHAR(36) NULL,
      column_name VARCHAR(255) NOT NULL,
      ref_key INT NOT NULL,
      body MEDIUMBLOB,
      created_at DATETIME NOT NULL,
      UNIQUE KEY naive_log_model (uuid, column_name, ref_key)
    )`);
    const pool = mysql.createPool({
      uri: cluster.databases.urls[0]!,
      connectionLimit: WRITERS + 1,
    });
    try {
      let writing = true;
      const seen: number[] = [];
      const poller = (async () => {
        let cursor = 0;
        for (;;) {
          const stopping = !writing;
          const [rows] = await pool.query<mysql.RowDataPacket[]>(
            'SELECT id FROM naive_log WHERE id > ? ORDER BY id',
            [cursor],
          );
          for (const row of rows) seen.push(Number(row.id));
          cursor = seen[seen.length - 1] ?? cursor;
          if (stopping) return;
        }
      })();
      // Like the gem's writers, but each commits after a short random pause: ids are handed out
      // at INSERT, so commits (and visibility) come out of id order.
      const started = Date.now();
      await Promise.all(
        range(WRITERS).map(async (w) => {
          const connection = await pool.getConnection();
          try {
            for (let n = 0; Date.now() - started < 2000; n++) {
              await connection.query('START TRANSACTION');
              await connection.query(
                'INSERT INTO naive_log (uuid, column_name, ref_key, body, created_at) VALUES (?, ?, ?, ?, NOW())',
                [
                  `00000000-0000-4000-8000-${String(w).padStart(12, '0')}`,
                  'base',
                  n,
                  pack({ w, n }),
                ],
              );
              await sleep(Math.random() * 3);
              await connection.query('COMMIT');
            }
          } finally {
            connection.release();
          }
        }),
      );
      writing = false;
      await poller;
      const [all] = await pool.query<mysql.RowDataPacket[]>('SELECT id FROM naive_log ORDER BY id');
      const committed = all.map((row) => Number(row.id));
      const missed = missingFrom(committed, seen);
      console.log(
        `      negative control: ${committed.length} rows committed, naive poller saw ${seen.length}, skipped ${missed.length}`,
      );
      expect(missed.length, 'rows the naive poller never saw').to.be.greaterThan(0);
    } finally {
      await pool.end();
    }
  });
});

function missingFrom<T>(expected: readonly T[], seen: readonly T[]): T[] {
  const have = new Set(seen);
  return expected.filter((item) => !have.has(item));
}
