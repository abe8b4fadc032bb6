// Shared by the consistency tests (SPEC §4): real `shameless serve` processes over fresh
// databases, gRPC calls with a chosen deadline, and plain-SQL access to what was committed.
import { Metadata, status } from '@grpc/grpc-js';
import {
  type ModelDefinition,
  FieldType,
  Operator,
  type Record as StoredRecord,
} from '@shameless/proto';
import { createTestDatabases, freePort, type TestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import type { UnaryMethod } from '../../src/commands/connection.js';
import { type StoreApi, collect, connectStore } from '../support/grpcCalls.js';
import { type ServerProcess, startServerProcess } from '../support/serverProcess.js';
import { type StoreFixture, RATE_MODEL, startStoreFixture } from '../support/storeFixture.js';

export const NAMESPACE = 'cons';

/** Primary (hotel_id, room_type, check_in_date) on hotel_id; a secondary index; a meta cell. */
export const RATE: ModelDefinition = {
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
      ],
      shardOn: 'hotel_id',
    },
  ],
  cells: ['meta'],
};

/** Values of a RATE record of one hotel, every index field set, with `extra` beside them. */
export const rateValues = (hotelId: number, extra: Record<string, unknown> = {}) => ({
  hotel_id: hotelId,
  room_type: 'suite',
  check_in_date: '2024-05-01',
  gateway: 'gw',
  ...extra,
});

export const pad = (shard: number) => String(shard).padStart(6, '0');
export const contentTable = (shard: number, ns = NAMESPACE, model = 'rate') =>
  `${ns}_${model}_${pad(shard)}`;
export const indexTable = (index: string, shard: number, ns = NAMESPACE, model = 'rate') =>
  `${ns}_${model}_${index}_index_${pad(shard)}`;
export const contentShardOf = (uuid: string, shardsCount: number) =>
  Number.parseInt(uuid.slice(0, 4), 16) % shardsCount;

let requestCounter = 0;
/** A fresh request id: one per logical write. */
export function newRequestId(tag = 'w'): string {
  requestCounter += 1;
  return `${tag}-${process.pid}-${Date.now().toString(36)}-${requestCounter}`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** Runs `work` for every item with at most `concurrency` at a time. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** One unary call with its own deadline (the shared wrappers always allow 15 s). */
export function callWithDeadline<Req, Res>(
  api: StoreApi,
  method: UnaryMethod<Req, Res>,
  request: Req,
  deadlineMs: number,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(
      api.client,
      request,
      new Metadata(),
      { deadline: new Date(Date.now() + deadlineMs) },
      (error, response) => (error ? reject(error) : resolve(response)),
    );
  });
}

export function grpcCode(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}

export function codeName(code: number | undefined): string {
  return code === undefined ? 'non-gRPC error' : (status[code] ?? String(code));
}

/** Every record Where finds on the primary index for one hotel, following page tokens. */
export async function whereHotel(
  api: StoreApi,
  hotelId: number,
  cells: string[] = [],
): Promise<StoredRecord[]> {
  const records: StoredRecord[] = [];
  let pageToken = '';
  do {
    const messages = await collect(
      api.client.where({
        model: 'rate',
        index: '',
        conditions: [
          {
            field: 'hotel_id',
            op: Operator.OPERATOR_EQ,
            values: [{ kind: { $case: 'integer', integer: BigInt(hotelId) } }],
          },
        ],
        cells,
        order: 0,
        limit: 1000,
        pageToken,
      }),
    );
    pageToken = '';
    for (const message of messages) {
      records.push(...message.records);
      if (message.nextPageToken) pageToken = message.nextPageToken;
    }
  } while (pageToken);
  return records;
}

/** Fresh databases, `shameless serve` processes over them, and plain SQL on partition 0. */
export class ProcessCluster {
  readonly servers: (ServerProcess | undefined)[] = [];
  readonly apis: (StoreApi | undefined)[] = [];
  private readonly startArgs: string[][] = [];
  private constructor(
    readonly databases: TestDatabases,
    readonly shardsCount: number,
    readonly sql: mysql.Pool,
  ) {}

  static async create(shardsCount: number): Promise<ProcessCluster> {
    const databases = await createTestDatabases(1);
    const sql = mysql.createPool({
      uri: databases.urls[0]!,
      connectionLimit: 4,
      supportBigNumbers: true,
      timezone: 'Z',
    });
    return new ProcessCluster(databases, shardsCount, sql);
  }

  serverArgs(extra: string[] = []): string[] {
    return [
      '--partition',
      this.databases.urls[0]!,
      '--shards-count',
      String(this.shardsCount),
      '--namespace',
      NAMESPACE,
      ...extra,
    ];
  }

  /**
   * A cluster whose server 0 runs on a fixed port (so that a restart serves the same address)
   * with the rate model defined.
   */
  static async serving(shardsCount: number): Promise<ProcessCluster> {
    const cluster = await ProcessCluster.create(shardsCount);
    await cluster.start(0, ['--listen', `127.0.0.1:${await freePort()}`]);
    await cluster.api(0).defineModel({ model: RATE });
    return cluster;
  }

  /** Starts (or restarts) server `slot`; returns its client. */
  async start(slot: number, extra: string[] = []): Promise<StoreApi> {
    this.startArgs[slot] = extra;
    const server = await startServerProcess(this.serverArgs(extra));
    this.servers[slot] = server;
    const api = connectStore(server.address);
    this.apis[slot] = api;
    return api;
  }

  api(slot: number): StoreApi {
    const api = this.apis[slot];
    if (!api) throw new Error(`server ${slot} is not running`);
    return api;
  }

  async kill(slot: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.apis[slot]?.close();
    this.apis[slot] = undefined;
    const server = this.servers[slot];
    this.servers[slot] = undefined;
    if (server) await server.kill(signal);
  }

  /** SIGKILLs server `slot` and starts it again as it was started. */
  async crashAndRestart(slot: number): Promise<StoreApi> {
    await this.kill(slot, 'SIGKILL');
    return this.start(slot, this.startArgs[slot]);
  }

  async query<T = mysql.RowDataPacket[]>(sqlText: string, values: unknown[] = []): Promise<T> {
    const [rows] = await this.sql.query(sqlText, values);
    return rows as T;
  }

  /** Every content row of every shard, with its shard. */
  async contentRows(): Promise<ContentRow[]> {
    const rows: ContentRow[] = [];
    for (let shard = 0; shard < this.shardsCount; shard++) {
      const found = await this.query<mysql.RowDataPacket[]>(
        `SELECT id, uuid, column_name, ref_key, request_id, body FROM \`${contentTable(shard)}\` ORDER BY id`,
      );
      for (const row of found) {
        rows.push({
          shard,
          id: BigInt(row.id as number | string),
          uuid: String(row.uuid),
          cell: String(row.column_name),
          refKey: Number(row.ref_key),
          requestId: row.request_id === null ? null : String(row.request_id),
          body: row.body as Buffer,
        });
      }
    }
    return rows;
  }

  /** Every row of one index over all shards. */
  async indexRows(index: string): Promise<mysql.RowDataPacket[]> {
    const rows: mysql.RowDataPacket[] = [];
    for (let shard = 0; shard < this.shardsCount; shard++) {
      rows.push(
        ...(await this.query<mysql.RowDataPacket[]>(
          `SELECT * FROM \`${indexTable(index, shard)}\``,
        )),
      );
    }
    return rows;
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((_, slot) => this.kill(slot, 'SIGKILL')));
    await this.sql.end();
    await this.databases.drop();
  }
}

export interface ContentRow {
  shard: number;
  /** As the wire carries ids. */
  id: bigint;
  uuid: string;
  cell: string;
  refKey: number;
  requestId: string | null;
  body: Buffer;
}

/** Groups content rows by `uuid/cell`, each group sorted by ref_key. */
export function versionsByCell(rows: readonly ContentRow[]): Map<string, ContentRow[]> {
  const groups = new Map<string, ContentRow[]>();
  for (const row of rows) {
    const key = `${row.uuid}/${row.cell}`;
    const group = groups.get(key) ?? [];
    group.push(row);
    groups.set(key, group);
  }
  for (const group of groups.values()) group.sort((a, b) => a.refKey - b.refKey);
  return groups;
}

export const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** "p50 x ms, p99 y ms" of some call latencies. */
export function latencySummary(latenciesMs: readonly number[]): string {
  const sorted = [...latenciesMs].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms`;
}

/** In-process servers over one fresh database (the rate model defined), and plain SQL to it. */
export interface SharedStore {
  readonly a: StoreFixture;
  readonly b: StoreFixture;
  readonly sql: mysql.Connection;
  /** Another server over the same database; the caller closes it. */
  another(options?: { versionCacheBytes?: number }): Promise<StoreFixture>;
  close(): Promise<void>;
}

export async function startSharedStore(
  shardsCount: number,
  namespace: string,
): Promise<SharedStore> {
  const a = await startStoreFixture({ shardsCount, namespace });
  await a.api.defineModel({ model: RATE_MODEL });
  const another = async (options: { versionCacheBytes?: number } = {}) => {
    const store = await startStoreFixture({
      shardsCount,
      namespace,
      partitionUrls: a.partitionUrls,
      ...options,
    });
    await store.api.describeStore({});
    return store;
  };
  const b = await another();
  const sql = await mysql.createConnection(a.partitionUrls[0]!);
  return {
    a,
    b,
    sql,
    another,
    close: async () => {
      await sql.end();
      await b.close();
      await a.close();
    },
  };
}
