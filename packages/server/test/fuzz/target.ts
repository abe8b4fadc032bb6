// The server under fuzzing: a real `shameless serve` process over a fresh database, with
// modest bounds so that memory past them shows, a raw grpc-js client that sends whatever bytes
// it is given, and what the fuzzer watches of the process: that it lives, answers
// DescribeStore, how much memory it holds and whether it logged an error.
import { readFile } from 'node:fs/promises';
import { Client, Metadata, credentials } from '@grpc/grpc-js';
import {
  type DescribeStoreResponse,
  DescribeStoreResponse as DescribeStoreResponseCodec,
  type Delivery,
} from '@shameless/proto';
import {
  type ListeningProcess,
  type TestDatabases,
  createTestDatabases,
  startListeningProcess,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { connectStore } from '../support/grpcCalls.js';
import { GroupMember } from '../support/groupMember.js';
import { CLI } from '../support/serverProcess.js';
import { pack } from '../support/storeFixture.js';
import { CAPS } from './requests.js';
import { GROUP, MODELS, NAMESPACE, RECORDS_PER_MODEL, SHARDS_COUNT, seedValues } from './world.js';

const MiB = 1024 * 1024;

/** The bounds the server is started with (`shameless serve` flags). */
export const SERVER_BOUNDS = {
  maxMessageBytes: 4 * MiB,
  maxInFlightBytes: 32 * MiB,
  maxConcurrentCalls: 64,
  maxOpenStreams: 16,
  maxPipelineCalls: 16,
  versionCacheBytes: 8 * MiB,
  writeQueueMaxBytes: 16 * MiB,
  primaryKeyCacheEntries: 20_000,
  recordCacheEntries: 20_000,
} as const;

/**
 * The most resident memory (VmHWM, the peak) the server may reach under the fuzzer, with the
 * bounds above: what it holds at start (about 130 MiB), its bounded bytes in flight and caches
 * (about 50 MiB), requests grpc-js reads whole before admission (4 MiB each, a few at once),
 * and room for V8's heap and glibc's arenas to grow between collections: runs of 3,000
 * requests peaked at 140 to 320 MiB. docs/development.md states it.
 */
export const RSS_CEILING_BYTES = 512 * MiB;

const flag = (name: string, value: number | string) => [`--${name}`, String(value)];

function serveArgs(partitionUrl: string): string[] {
  return [
    CLI,
    'serve',
    ...flag('listen', '127.0.0.1:0'),
    ...flag('log-level', 'warn'),
    ...flag('partition', partitionUrl),
    ...flag('shards-count', SHARDS_COUNT),
    ...flag('namespace', NAMESPACE),
    ...flag('pool-size', 4),
    ...flag('group-poll-ms', 100),
    ...flag('max-message-bytes', SERVER_BOUNDS.maxMessageBytes),
    ...flag('max-in-flight-bytes', SERVER_BOUNDS.maxInFlightBytes),
    ...flag('max-concurrent-calls', SERVER_BOUNDS.maxConcurrentCalls),
    ...flag('max-open-streams', SERVER_BOUNDS.maxOpenStreams),
    ...flag('max-pipeline-calls', SERVER_BOUNDS.maxPipelineCalls),
    ...flag('version-cache-bytes', SERVER_BOUNDS.versionCacheBytes),
    ...flag('write-queue-max-bytes', SERVER_BOUNDS.writeQueueMaxBytes),
    ...flag('primary-key-cache-entries', SERVER_BOUNDS.primaryKeyCacheEntries),
    ...flag('record-cache-entries', SERVER_BOUNDS.recordCacheEntries),
    ...flag('max-where-conditions', CAPS.maxWhereConditions),
    ...flag('max-in-values', CAPS.maxInValues),
    ...flag('max-page-records', CAPS.maxPageRecords),
    ...flag('max-batch-keys', CAPS.maxBatchKeys),
    ...flag('max-put-batch', CAPS.maxPutBatch),
  ];
}

/** glibc's settings of `pnpm serve` and the Docker image (docs/limits.md, Memory after load). */
const MALLOC_ENV = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

export interface Memory {
  readonly rssBytes: number;
  /** The peak resident memory since the process started. */
  readonly peakBytes: number;
}

export class FuzzTarget {
  /** Uuids of the records the setup made, by slot: rate's first, then event's. */
  readonly records: string[] = [];
  /** How many times the server had to be started again after it died. */
  restarts = 0;
  private process!: ListeningProcess;
  private rawClient!: Client;
  private logOffset = 0;

  private constructor(
    private readonly databases: TestDatabases,
    readonly sql: mysql.Pool,
  ) {}

  /** A fresh database, the server over it, and the models, records and group of world.ts. */
  static async start(): Promise<FuzzTarget> {
    const databases = await createTestDatabases(1, { prefix: 'shameless_fuzz' });
    const sql = mysql.createPool({
      uri: databases.urls[0]!,
      connectionLimit: 2,
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
    });
    const target = new FuzzTarget(databases, sql);
    try {
      await target.spawn();
      await target.populate();
    } catch (error) {
      await target.close();
      throw error;
    }
    return target;
  }

  get database(): string {
    return this.databases.names[0]!;
  }

  get client(): Client {
    return this.rawClient;
  }

  get pid(): number {
    return this.process.process.pid!;
  }

  /** Whether the process is still running. */
  alive(): boolean {
    const child = this.process.process;
    return child.exitCode === null && child.signalCode === null;
  }

  /** How the process ended, and the last of its output; undefined while it runs. */
  deathNote(): string | undefined {
    if (this.alive()) return undefined;
    const child = this.process.process;
    const output = this.process.output();
    return `exited with ${child.exitCode ?? child.signalCode}; its last output:\n${output.slice(-4000)}`;
  }

  /** Starts the server again over the same database after it died. */
  async restartIfDead(): Promise<void> {
    if (this.alive()) return;
    this.restarts += 1;
    this.rawClient.close();
    await this.spawn();
  }

  /** Ends the process (the next restartIfDead starts it again). */
  async kill(): Promise<void> {
    await this.process.kill('SIGKILL');
  }

  /** DescribeStore over the raw client: the server answers, or this throws saying how not. */
  async describe(deadlineMs = 10_000): Promise<DescribeStoreResponse> {
    const bytes = await new Promise<Buffer>((resolve, reject) =>
      this.rawClient.makeUnaryRequest(
        '/shameless.v1.Store/DescribeStore',
        (request: Buffer) => request,
        (response: Buffer) => response,
        Buffer.alloc(0),
        new Metadata(),
        { deadline: Date.now() + deadlineMs },
        (error, response) => (error ? reject(error) : resolve(response!)),
      ),
    );
    return DescribeStoreResponseCodec.decode(bytes);
  }

  /** The process's resident memory now and at its peak (Linux /proc). */
  async memory(): Promise<Memory> {
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
    const kib = (name: string) =>
      Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1]) * 1024;
    return { rssBytes: kib('VmRSS'), peakBytes: kib('VmHWM') };
  }

  /** Lines the server logged at level error or fatal since the last call. */
  newErrorLines(): string[] {
    const output = this.process.output();
    const fresh = output.slice(this.logOffset);
    const complete = fresh.lastIndexOf('\n') + 1;
    this.logOffset += complete;
    return fresh
      .slice(0, complete)
      .split('\n')
      .filter(
        (line) => /"level":(50|60)\b/.test(line) || /^\s*(Error|TypeError|RangeError)\b/.test(line),
      );
  }

  async close(): Promise<void> {
    this.rawClient?.close();
    await this.process?.kill('SIGKILL');
    await this.sql.end();
    await this.databases.drop();
  }

  private async spawn(): Promise<void> {
    this.process = await startListeningProcess(serveArgs(this.databases.urls[0]!), {
      name: 'shameless serve',
      env: MALLOC_ENV,
    });
    this.logOffset = 0;
    this.rawClient = new Client(this.process.address, credentials.createInsecure(), {
      'grpc.max_send_message_length': -1,
      'grpc.max_receive_message_length': -1,
    });
  }

  /** The models, RECORDS_PER_MODEL records of each (with a second cell), a group with a parked cell. */
  private async populate(): Promise<void> {
    const api = connectStore(this.process.address);
    try {
      for (const model of MODELS) await api.defineModel({ model });
      for (const model of MODELS) {
        for (let n = 0; n < RECORDS_PER_MODEL; n++) {
          const put = await api.put({
            model: model.name,
            values: pack(seedValues(model, n)),
            requestId: `setup-${model.name}-${n}`,
          });
          this.records.push(put.uuid);
          await api.writeCell({
            model: model.name,
            uuid: put.uuid,
            cell: model.cells[0]!,
            body: pack({ seeded: n }),
            mode: 0,
            requestId: `setup-${model.name}-${n}-cell`,
          });
        }
      }
      // A group on rate whose member parks the first cell it is handed, then leaves.
      const member = await GroupMember.join(api, {
        model: 'rate',
        group: GROUP,
        memberId: 'setup',
      });
      const first: Delivery = (await member.next('deliveries')).deliveries[0]!;
      member.park(first, 'parked by the fuzzer setup');
      await member.next('parked');
      await member.leave();
    } finally {
      api.close();
    }
  }
}
