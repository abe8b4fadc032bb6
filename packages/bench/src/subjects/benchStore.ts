// The store under test: a throwaway database on the local MariaDB, a `shameless serve` child
// process over it, an SDK connection, the benchmark's model and the records its reads need.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type Model, type Store } from '@shameless/client';
import { type ListeningProcess, freePort, startListeningProcess } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { forEachConcurrently } from '../load/concurrently.js';
import type { Progress } from '../load/progress.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../../../server/bin/shameless.js');

/** The gem README's rates, as the SDK declares them. */
export const RATE_SCHEMA = {
  name: 'rate',
  primary: {
    fields: { hotel_id: 'integer', room_type: 'string', check_in_date: 'string' },
    shardOn: 'hotel_id',
  },
  indices: {
    secondary: {
      fields: { hotel_id: 'integer', gateway: 'string', discount_type: 'string' },
      shardOn: 'hotel_id',
    },
  },
  cells: ['meta'],
} as const;

export type RateModel = Model<typeof RATE_SCHEMA>;

/** The deadline of the SDK's calls: the time limit the server gives their statements. */
export const SDK_DEADLINE_MS = 30_000;

export interface StoreSettings {
  /** `mysql://user:password@host:port` (no database: the benchmark makes its own). */
  readonly mysqlUrl: string;
  readonly database: string;
  readonly shardsCount: number;
  readonly poolSize: number;
  /** Whether the SDK sends calls made in the same tick as one batch call (its default). */
  readonly coalesce: boolean;
  /** Batch calls of one kind the SDK keeps out at once. Default: connect's, one per endpoint. */
  readonly maxBatchesInFlight?: number;
  /** Whether the SDK sends its calls over a Pipeline stream (its default). */
  readonly pipeline: boolean;
  /** Write a V8 CPU profile of the server here (`--cpu-prof`), for a flame graph. */
  readonly profileDir?: string;
  /** Serve the server's Prometheus metrics, to read its heap and external memory. */
  readonly metrics?: boolean;
}

export interface BenchStore {
  readonly settings: StoreSettings;
  readonly server: ListeningProcess;
  readonly store: Store;
  readonly rate: RateModel;
  /** The partition's URL, database included, for the raw-mysql2 baseline. */
  readonly partitionUrl: string;
  /** `http://127.0.0.1:port/metrics` when the settings asked for metrics. */
  readonly metricsUrl?: string;
  close(): Promise<void>;
}

export async function openBenchStore(settings: StoreSettings): Promise<BenchStore> {
  await recreateDatabase(settings.mysqlUrl, settings.database);
  const partitionUrl = withDatabase(settings.mysqlUrl, settings.database);
  const metricsListen = settings.metrics ? `127.0.0.1:${await freePort()}` : undefined;
  const server = await startServe(settings, partitionUrl, {
    ...(settings.profileDir ? { profileDir: settings.profileDir } : {}),
    ...(metricsListen ? { metricsListen } : {}),
  });
  const store = await connect({
    endpoints: [server.address],
    deadlineMs: SDK_DEADLINE_MS,
    coalesce: settings.coalesce,
    pipeline: settings.pipeline,
    ...(settings.maxBatchesInFlight === undefined
      ? {}
      : { maxBatchesInFlight: settings.maxBatchesInFlight }),
  });
  const rate = await store.defineModel(RATE_SCHEMA);
  return {
    settings,
    server,
    store,
    rate,
    partitionUrl,
    ...(metricsListen ? { metricsUrl: `http://${metricsListen}/metrics` } : {}),
    async close() {
      await store.close();
      await server.kill();
      await dropDatabase(settings.mysqlUrl, settings.database);
    },
  };
}

/**
 * A `shameless serve` process over the store's partition, with the store's settings: the
 * bench's server, or another one beside it (the consumer-group workload's members sit behind
 * two; the read-replica row's has `--replica` in `args`). Options its defaults leave alone
 * (`--group-poll-ms` among them) stay the server's.
 */
export function startServe(
  settings: StoreSettings,
  partitionUrl: string,
  extra: { profileDir?: string; metricsListen?: string; name?: string; args?: string[] } = {},
): Promise<ListeningProcess> {
  const profile = extra.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${extra.profileDir}`] : [];
  return startListeningProcess(
    [
      CLI,
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--partition',
      partitionUrl,
      '--shards-count',
      String(settings.shardsCount),
      '--pool-size',
      String(settings.poolSize),
      '--log-level',
      'warn',
      ...(extra.metricsListen ? ['--metrics-listen', extra.metricsListen] : []),
      ...(extra.args ?? []),
    ],
    { name: extra.name ?? 'shameless serve', nodeOptions: profile },
  );
}

/** A body of about `bytes` bytes once MessagePack-encoded. */
export function payloadOf(bytes: number): { net_price: number; payload: string } {
  return { net_price: 120.5, payload: 'x'.repeat(Math.max(0, bytes - 32)) };
}

/** The index fields of a seeded rate: hotel `hotel`, its `day`th date. */
export function seededRate(hotel: number, day: number) {
  return {
    hotel_id: hotel,
    room_type: 'double',
    check_in_date: `day-${String(day).padStart(5, '0')}`,
    gateway: 'pegasus',
    discount_type: 'geo',
  } as const;
}

/** Records the read workloads use: `hotels` hotels of `perHotel` rates each, `bodyBytes` each. */
export interface SeededSet {
  readonly bodyBytes: number;
  readonly hotels: readonly number[];
  readonly perHotel: number;
  readonly uuids: readonly string[];
}

export async function seedRates(
  rate: RateModel,
  options: { firstHotel: number; hotels: number; perHotel: number; bodyBytes: number },
  progress: Progress,
): Promise<SeededSet> {
  const hotels = Array.from({ length: options.hotels }, (_, i) => options.firstHotel + i);
  const total = hotels.length * options.perHotel;
  const uuids: string[] = new Array<string>(total);
  const body = payloadOf(options.bodyBytes);
  const task = progress.task(
    `seeding ${total} rates of ${formatBytes(options.bodyBytes)} (Put, 32 in flight)`,
    total,
  );
  await forEachConcurrently(total, 32, async (i) => {
    const hotel = hotels[Math.floor(i / options.perHotel)]!;
    const record = await rate.put({ ...seededRate(hotel, i % options.perHotel), ...body });
    uuids[i] = record.uuid;
    task.advance(1);
  });
  task.done();
  return { bodyBytes: options.bodyBytes, hotels, perHotel: options.perHotel, uuids };
}

export function formatBytes(bytes: number): string {
  return bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} B`;
}

/** The server URL with a database path; its `?socket=` (if any) stays. */
function withDatabase(mysqlUrl: string, database: string): string {
  const url = new URL(mysqlUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Connection options for the server itself (no database), from the same URL. */
export function serverConnection(mysqlUrl: string): mysql.ConnectionOptions {
  const url = new URL(mysqlUrl);
  const socketPath = url.searchParams.get('socket');
  return {
    host: url.hostname || '127.0.0.1',
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || 'root',
    password: decodeURIComponent(url.password),
    ...(socketPath ? { socketPath } : {}),
  };
}

async function recreateDatabase(mysqlUrl: string, database: string): Promise<void> {
  const connection = await mysql.createConnection(serverConnection(mysqlUrl));
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await connection.query(
      `CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
    );
  } finally {
    await connection.end();
  }
}

async function dropDatabase(mysqlUrl: string, database: string): Promise<void> {
  const connection = await mysql.createConnection(serverConnection(mysqlUrl));
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
  } finally {
    await connection.end();
  }
}
