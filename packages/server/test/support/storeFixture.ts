// A real store for a test: fresh databases on the local MariaDB (or MYSQL_URL), the engine,
// and the gRPC server on a loopback port, with a client connected to it.
import { type MariaDbServer, createTestDatabases, startMariaDbServer } from '@shameless/testkit';
import type { ServerCredentials } from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import { FieldType, type ModelDefinition } from '@shameless/proto';
import { type ReplicaConfig, openStore } from '../../src/engine/openStore.js';
import { type Logger, silentLogger } from '../../src/engine/base/logger.js';
import type { CreatedAtKind } from '../../src/engine/model/layout.js';
import type { Engine } from '../../src/engine/engine.js';
import type { QueryLimits } from '../../src/engine/base/limits.js';
import type { BodyLimits } from '../../src/engine/base/bodyRules.js';
import type { ServerMiddleware } from '../../src/grpc/call/middleware.js';
import { type RunningServer, startServer } from '../../src/grpc/server.js';
import { type ConnectOptions, type StoreApi, connectStore } from './grpcCalls.js';

export interface StoreFixture {
  api: StoreApi;
  engine: Engine;
  server: RunningServer;
  address: string;
  partitionUrls: string[];
  close(): Promise<void>;
}

export interface FixtureOptions {
  shardsCount?: number;
  namespace?: string;
  /** Existing databases to use instead of fresh ones (the caller drops them). */
  partitionUrls?: string[];
  partitionCount?: number;
  /** The store setting legacyCreatedAtIsBigint: 'bigint'. */
  createdAt?: CreatedAtKind;
  /** The engine's logger; silent by default. */
  logger?: Logger;
  /** The server's middleware chain, outermost first. */
  middleware?: readonly ServerMiddleware[];
  /** The server's TLS; insecure by default. */
  serverCredentials?: ServerCredentials;
  /** How the fixture's own client connects (TLS, token). */
  connect?: ConnectOptions;
  /** Caps on what one request may ask; the defaults otherwise. */
  queryLimits?: QueryLimits;
  /** How deep and how large a body written may be; the defaults otherwise. */
  bodyLimits?: BodyLimits;
  /** The longest one statement may run; unbounded by default. */
  statementTimeoutMs?: number;
  /** The largest message the server sends (and GetCells answer it makes); 16 MiB by default. */
  maxMessageBytes?: number;
  /** Calls of one Pipeline stream the server runs at once; its default otherwise. */
  maxPipelineCalls?: number;
  /** Connections each partition's pool opens at most; 8 by default. */
  poolSize?: number;
  /** Records the engine remembers to exist; its default otherwise. */
  recordCacheEntries?: number;
  /** Cells whose latest version the engine remembers; its default otherwise. */
  versionCacheBytes?: number;
  /** How often consumer groups read their rows; 100 ms by default (quick hand-overs). */
  groupPollIntervalMs?: number;
  /** How often every partition is probed for health; the engine's default (1000 ms) otherwise. */
  healthCheckIntervalMs?: number;
  /** serve --idle-health-check-ms; by default the probe never rests. */
  idleHealthCheckMs?: number;
  /** Read replicas of the partitions (serve --replica); none by default. */
  replicas?: readonly ReplicaConfig[];
  /** serve --replica-check-ms; the engine's default otherwise. */
  replicaCheckIntervalMs?: number;
  /** serve --replica-max-lag-ms; the engine's default otherwise. */
  replicaMaxLagMs?: number;
  /** serve --replica-wait-ms; the engine's default otherwise. */
  replicaWaitMs?: number;
}

export async function startStoreFixture(options: FixtureOptions = {}): Promise<StoreFixture> {
  const databases = options.partitionUrls
    ? undefined
    : await createTestDatabases(options.partitionCount ?? 1);
  const partitionUrls = options.partitionUrls ?? databases!.urls;
  const engine = await openStore(
    {
      namespace: options.namespace ?? 'test',
      shardsCount: options.shardsCount ?? 4,
      partitionUrls,
      createdAt: options.createdAt ?? 'datetime',
      poolSize: options.poolSize ?? 8,
      connectTimeoutMs: 1000,
      startupTimeoutMs: 0,
      followPollIntervalMs: 50,
      groupPollIntervalMs: options.groupPollIntervalMs ?? 100,
      queryLimits: options.queryLimits,
      bodyLimits: options.bodyLimits,
      statementTimeoutMs: options.statementTimeoutMs,
      maxAnswerBytes: options.maxMessageBytes ?? 16 * 1024 * 1024,
      recordCacheEntries: options.recordCacheEntries,
      versionCacheBytes: options.versionCacheBytes,
      healthCheckIntervalMs: options.healthCheckIntervalMs,
      replicas: options.replicas,
      replicaCheckIntervalMs: options.replicaCheckIntervalMs,
      replicaMaxLagMs: options.replicaMaxLagMs,
      replicaWaitMs: options.replicaWaitMs,
    },
    options.logger ?? silentLogger,
  );
  const server = await startServer(
    engine,
    {
      listen: '127.0.0.1:0',
      maxMessageBytes: options.maxMessageBytes ?? 16 * 1024 * 1024,
      middleware: options.middleware,
      credentials: options.serverCredentials,
      maxPipelineCalls: options.maxPipelineCalls,
      idleHealthCheckMs: options.idleHealthCheckMs,
    },
    silentLogger,
  );
  const address = `127.0.0.1:${server.port}`;
  const api = connectStore(address, options.connect);
  return {
    api,
    engine,
    server,
    address,
    partitionUrls,
    async close() {
      api.close();
      await server.shutdown(1000);
      await engine.close();
      await databases?.drop();
    },
  };
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
/** A store over two MariaDB servers: shards 0-1 on the local one, 2-3 on a private second. */
export interface TwoServerStore {
  readonly store: StoreFixture;
  /** The second server: kill and start it to take partition 1 down and up. */
  readonly second: MariaDbServer;
  close(): Promise<void>;
}

/** Starts a private second MariaDB and a 4-shard store with a partition on each server. */
export async function startTwoServerStore(): Promise<TwoServerStore> {
  const second = await startMariaDbServer();
  const firstDb = await createTestDatabases(1);
  const store = await startStoreFixture({
    shardsCount: 4,
    partitionUrls: [firstDb.urls[0]!, `${second.url}/shameless_second`],
  });
  await store.api.defineModel({ model: RATE_MODEL });
  return {
    store,
    second,
    async close() {
      await store.close();
      await firstDb.drop();
      await second.destroy();
    },
  };
}

export const pack = (value: unknown): Buffer => packr.pack(value);
export const unpack = (bytes: Buffer): Record<string, unknown> =>
  packr.unpack(bytes) as Record<string, unknown>;

/** The gem README's rates model: primary (hotel_id, room_type, check_in_date), a secondary index and a meta cell. */
export const RATE_MODEL: ModelDefinition = {
  name: 'rate',
  primaryIndex: {
    name: '',
    fields: [
      { name: 'hotel_id', type: FieldType.FIELD_TYPE_INTEGER },
      { name: 'room_type', type: FieldType.FIELD_TYPE_STRING },
      { name: 'check_in_date', type: FieldType.FIELD_TYPE_STRING },
    ],
    shardOn: 'hotel_id',
  },
  secondaryIndices: [
    {
      name: 'secondary',
      fields: [
        { name: 'hotel_id', type: FieldType.FIELD_TYPE_INTEGER },
        { name: 'gateway', type: FieldType.FIELD_TYPE_STRING },
        { name: 'discount_type', type: FieldType.FIELD_TYPE_STRING },
      ],
      shardOn: 'hotel_id',
    },
  ],
  cells: ['meta'],
};

/** Creates a rate of hotel `hotelId` (its index shard is hotelId mod shardsCount); its uuid. */
export async function putRate(
  api: StoreApi,
  hotelId: number,
  date = '2026-01-01',
): Promise<string> {
  const created = await api.put({
    model: 'rate',
    values: pack({
      hotel_id: hotelId,
      room_type: 'double',
      check_in_date: date,
      gateway: 'pegasus',
      discount_type: 'geo',
    }),
    requestId: requestId(),
  });
  return created.uuid;
}

let counter = 0;
/** A fresh request id for each logical write. */
export function requestId(): string {
  counter += 1;
  return `test-${process.pid}-${Date.now()}-${counter}`;
}
