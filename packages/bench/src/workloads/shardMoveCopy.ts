// Copying a shard to a new partition (`--workloads moves`, issue 54): how fast the mover copies a
// shard's cells to another MariaDB server, beside `mariadb-dump | mariadb` of the same tables.
// A store of its own on the bench's MySQL (a database of its own, one `shameless serve`), whose
// shard 0 holds N cells of 1 KB (written by plain SQL: random bytes, one version each), and a
// second MariaDB server of the test kit's on a loopback port as the target. First the mover:
// MoveShards (the admin RPC the `shameless move-shards` CLI calls) of shard 0 to a database on
// the second server; its copy is timed from its `created` step to its `copied` step (rows copied
// by id in chunks, several in flight), beside the whole move (create, copy, catch up, verify,
// cut over) and the cut-over's hold of the shard's writes. Then `mariadb-dump --single-transaction`
// of the shard's tables piped into `mariadb` on the second server, timed end to end (its
// CREATE TABLEs included). Both in cells a second. Then, with a second `shameless serve`, the
// cut-overs under writes (cutOversUnderWrites.ts) to the same target.
import { spawn } from 'node:child_process';
import { credentials } from '@grpc/grpc-js';
import {
  FieldType,
  type MoveShardsProgress,
  type MoveShardsRequest,
  StoreClient,
} from '@shameless/proto';
import { startMariaDbServer } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import type { Progress } from '../load/progress.js';
import { type StoreSettings, serverConnection, startServe } from '../subjects/benchStore.js';
import { type CutOverResult, cutOverPlan, runCutOversUnderWrites } from './cutOversUnderWrites.js';

/** Its id for `--workloads`. */
export const MOVES_WORKLOAD = 'moves';

/** Issue 54: the mover's copy, in cells of 1 KB a second, at least. */
export const MOVE_COPY_TARGET = 15_000;

export interface MovesPlan {
  /** Cells of `bodyBytes` in the shard moved. */
  readonly cells: number;
  readonly bodyBytes: number;
}

export function movesPlan(quick: boolean): MovesPlan {
  return { cells: quick ? 20_000 : 100_000, bodyBytes: 1024 };
}

export interface MovesResult {
  readonly plan: MovesPlan;
  /** The mover's copy step (created → copied). */
  readonly copyMs: number;
  readonly copyCellsPerSecond: number;
  /** The whole move of the shard: create, copy, catch up, verify, cut over. */
  readonly moveMs: number;
  /** How long the cut-over held the shard's writes. */
  readonly holdMs: number;
  /** `mariadb-dump | mariadb` of the same tables, end to end. */
  readonly dumpMs: number;
  readonly dumpCellsPerSecond: number;
  /** Shards moved while writes went to them (issue 54's hold target). */
  readonly underWrites?: CutOverResult;
}

const NAMESPACE = 'bm';
const SHARD = 0;
const contentTable = (shard: number) => `${NAMESPACE}_rate_${String(shard).padStart(6, '0')}`;
const CONTENT = contentTable(SHARD);
const FILL_CHUNK = 10_000;

export async function runMovesWorkload(
  settings: StoreSettings,
  plan: MovesPlan,
  progress: Progress,
): Promise<MovesResult> {
  const database = `${settings.database}_moves`;
  const admin = await mysql.createConnection(serverConnection(settings.mysqlUrl));
  await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
  await admin.query(`CREATE DATABASE \`${database}\``);
  const sourceUrl = new URL(settings.mysqlUrl);
  sourceUrl.pathname = `/${database}`;
  progress.note('Shard moves: a second MariaDB of its own on a loopback port, as the target');
  // Sized for the copy (the test kit's default is a 64 MiB buffer pool and an 8 MiB redo log,
  // which 100 MB of rows would keep flushing): both copies go to this server.
  const target = await startMariaDbServer({
    extraArgs: ['--innodb-buffer-pool-size=512M', '--innodb-log-file-size=256M'],
  });
  let server: Awaited<ReturnType<typeof startServe>> | undefined;
  let second: Awaited<ReturnType<typeof startServe>> | undefined;
  let client: StoreClient | undefined;
  try {
    server = await startServe(settings, sourceUrl.toString(), {
      name: 'shameless serve (moves)',
      args: ['--namespace', NAMESPACE],
    });
    client = new StoreClient(server.address, credentials.createInsecure());
    await defineModel(client);

    progress.note(
      `Shard moves: ${plan.cells.toLocaleString('en-US')} cells of ${plan.bodyBytes} bytes in shard ${SHARD}`,
    );
    await admin.changeUser({ database });
    for (let first = 1; first <= plan.cells; first += FILL_CHUNK) {
      const last = Math.min(plan.cells, first + FILL_CHUNK - 1);
      // '0000' uuids: content shard 0 whatever the shard count.
      await admin.query(
        `INSERT INTO \`${CONTENT}\` (uuid, column_name, ref_key, body, created_at)
         SELECT CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0')), 'base', 0, RANDOM_BYTES(?), NOW(6)
           FROM seq_${first}_to_${last}`,
        [plan.bodyBytes],
      );
    }
    const [tables] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME AS name FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ? ORDER BY 1`,
      [`${NAMESPACE}\\_rate\\_%${String(SHARD).padStart(6, '0')}`],
    );
    const shardTables = tables.map((row) => String(row.name));

    // The dump first: the move renames the shard's tables away at the end.
    progress.note(`Shard moves: mariadb-dump | mariadb of shard ${SHARD}'s tables`);
    const dumpMs = await dumpAndLoad(settings.mysqlUrl, database, shardTables, target, database);
    progress.note(`Shard moves: the mover copies shard ${SHARD} to the second server`);
    const to = `${target.url}/${database}_moved`;
    const moved = await moveShard(client, to);
    // Then the cut-overs under writes, when the store has the shards for them.
    const cutOvers = cutOverPlan(settings.shardsCount);
    let underWrites: CutOverResult | undefined;
    if (cutOvers) {
      progress.note(
        `Shard moves: shards ${cutOvers.moving.join(', ')} moved under writes through two servers`,
      );
      second = await startServe(settings, sourceUrl.toString(), {
        name: 'shameless serve (moves, second)',
        args: ['--namespace', NAMESPACE],
      });
      underWrites = await runCutOversUnderWrites(
        [server.address, second.address],
        to,
        cutOvers,
        settings.shardsCount,
        (shard, uuids) =>
          admin
            .query(
              `INSERT INTO \`${contentTable(shard)}\` (uuid, column_name, ref_key, body, created_at) VALUES ?`,
              [uuids.map((uuid) => [uuid, 'base', 0, Buffer.from([0x80]), new Date()])],
            )
            .then(() => undefined),
        progress,
      );
    }
    return {
      plan,
      copyMs: moved.copyMs,
      copyCellsPerSecond: plan.cells / (moved.copyMs / 1000),
      moveMs: moved.moveMs,
      holdMs: moved.holdMs,
      dumpMs,
      dumpCellsPerSecond: plan.cells / (dumpMs / 1000),
      ...(underWrites ? { underWrites } : {}),
    };
  } finally {
    client?.close();
    await Promise.all([server?.kill('SIGKILL'), second?.kill('SIGKILL')]);
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => {});
    await admin.end();
    await target.destroy();
  }
}

function defineModel(client: StoreClient): Promise<void> {
  return new Promise((resolve, reject) =>
    client.defineModel(
      {
        model: {
          name: 'rate',
          primaryIndex: {
            name: '',
            fields: [
              { name: 'hotel_id', type: FieldType.FIELD_TYPE_INTEGER },
              { name: 'room_type', type: FieldType.FIELD_TYPE_STRING },
            ],
            shardOn: 'hotel_id',
          },
          secondaryIndices: [],
          cells: ['meta'],
        },
      },
      (error) => (error ? reject(error) : resolve()),
    ),
  );
}

/** MoveShards of SHARD to `to`, timed by its progress messages. */
async function moveShard(
  client: StoreClient,
  to: string,
): Promise<{ copyMs: number; moveMs: number; holdMs: number }> {
  const request: MoveShardsRequest = {
    action: { $case: 'move', move: { firstShard: SHARD, lastShard: SHARD, to } },
  };
  const started = performance.now();
  let createdAt: number | undefined;
  let copiedAt: number | undefined;
  let holdMs = 0;
  for await (const message of client.moveShards(request) as AsyncIterable<MoveShardsProgress>) {
    if (message.step === 'created') createdAt = performance.now();
    if (message.step === 'copied') copiedAt = performance.now();
    if (message.holdMs > 0) holdMs = message.holdMs;
  }
  const moveMs = performance.now() - started;
  if (createdAt === undefined || copiedAt === undefined) {
    throw new Error('the move ended without its created and copied steps');
  }
  return { copyMs: copiedAt - createdAt, moveMs, holdMs };
}

/**
 * `mariadb-dump --single-transaction <db> <tables> | mariadb <db>` from the bench's MySQL to
 * the target server; its time in ms.
 */
async function dumpAndLoad(
  mysqlUrl: string,
  database: string,
  tables: readonly string[],
  target: { port: number; url: string },
  targetDatabase: string,
): Promise<number> {
  const source = serverConnection(mysqlUrl);
  const into = await mysql.createConnection(target.url);
  try {
    await into.query(`CREATE DATABASE IF NOT EXISTS \`${targetDatabase}\``);
  } finally {
    await into.end();
  }
  const sourceArgs = source.socketPath
    ? [`--socket=${source.socketPath}`]
    : [`--host=${source.host}`, `--port=${source.port}`];
  const started = performance.now();
  const dump = spawn(
    'mariadb-dump',
    [...sourceArgs, `--user=${source.user}`, '--single-transaction', database, ...tables],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MYSQL_PWD: source.password } },
  );
  const load = spawn(
    'mariadb',
    ['--host=127.0.0.1', `--port=${target.port}`, '--user=root', targetDatabase],
    { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, MYSQL_PWD: '' } },
  );
  dump.stdout.pipe(load.stdin);
  let errors = '';
  dump.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  load.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = (child: ReturnType<typeof spawn>) =>
    new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
  const [dumpCode, loadCode] = await Promise.all([exited(dump), exited(load)]);
  const elapsed = performance.now() - started;
  if (dumpCode !== 0 || loadCode !== 0) {
    throw new Error(`mariadb-dump | mariadb failed (${dumpCode}, ${loadCode}): ${errors.trim()}`);
  }
  return elapsed;
}
