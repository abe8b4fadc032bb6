// The gem-shaped service: the gem's statements for a read (gemShapedClient.ts) run by a bare
// grpc-js server in a process of its own, one read per message of one open stream. It is the gem
// behind the same hop as the store (a server process, a stream from the client) with none of the
// store's own work: no batching, no validation, no deadlines, a pooled connection per statement.
// Beside a read run it shows what the hop alone costs the gem on this machine: its throughput
// at the same concurrency, and its p99 at a half-peak row's rate, where the echoes show the
// transport's alone. Reads only: the gem's update races (two updates of one record read the same
// version, and the second insert fails on the unique key, holding its locks), and under an open
// loop's piling calls those collisions, not the hop, would set its latency.
import * as grpc from '@grpc/grpc-js';
import { type MysqlPool, createMysqlPool, parseMysqlUrl } from '@shameless/server/sql';
import { type GemValues, gemLatestBase, gemPointWhere } from './gemShapedClient.js';
import { type LoopbackServer, listenOnLoopback } from './loopbackServer.js';
import { BaselineTables, PRIMARY } from './mysqlBaseline.js';
import { rawBytesMethod } from './rawBytesMethod.js';

/** One read, as the gem's API names it; answered with the record's latest base body. */
export type GemRead =
  /** `fetch_cell('base')` of a record. */
  | { readonly op: 'find'; readonly uuid: string }
  /** `Model.where(primary values).first`, then its base cell. */
  | { readonly op: 'where'; readonly values: GemValues };

/**
 * A request is its call id (4 bytes) and the GemRead as JSON; an answer is the call id, a
 * status byte and what the read answers (a body, or a failure's message).
 */
const GEM_SERVICE = {
  pipe: rawBytesMethod('/shameless.bench.GemShaped/Pipe', true),
} satisfies grpc.ServiceDefinition;

const OK = 0;
const FAILED = 1;

export interface GemServiceSettings {
  /** The partition's URL, database included. */
  readonly partitionUrl: string;
  readonly shardsCount: number;
  /** mysql2 connections at most. */
  readonly connections: number;
}

/** Serves the gem-shaped service on `127.0.0.1:0`; resolves with the bound port. */
export async function serveGemService(settings: GemServiceSettings): Promise<LoopbackServer> {
  const pool = createMysqlPool(parseMysqlUrl(settings.partitionUrl), {
    connectionLimit: settings.connections,
    connectTimeoutMs: 5000,
  });
  const tables = new BaselineTables('rate', settings.shardsCount);
  const server = new grpc.Server();
  server.addService(GEM_SERVICE, {
    pipe: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (message: Buffer) => {
        const id = message.readUInt32BE(0);
        read(pool, tables, message.subarray(4)).then(
          (answer) => call.write(frame(id, OK, answer)),
          (error: unknown) =>
            call.write(
              frame(
                id,
                FAILED,
                Buffer.from(error instanceof Error ? error.message : String(error)),
              ),
            ),
        );
      });
      call.on('end', () => call.end());
    },
  });
  return listenOnLoopback(server, pool);
}

/** The read a request names (JSON), answered with the body; a bad request is a failed read. */
async function read(pool: MysqlPool, tables: BaselineTables, json: Buffer): Promise<Buffer> {
  const request = JSON.parse(json.toString('utf8')) as GemRead;
  const row =
    request.op === 'find'
      ? await gemLatestBase(pool, tables, request.uuid)
      : await gemPointWhere(pool, tables, PRIMARY, request.values);
  if (!row) throw new Error(`gem-shaped service: no base cell for ${JSON.stringify(request)}`);
  return row.body as Buffer;
}

function frame(id: number, status: number, payload: Buffer): Buffer {
  const message = Buffer.allocUnsafe(5 + payload.length);
  message.writeUInt32BE(id, 0);
  message[4] = status;
  payload.copy(message, 5);
  return message;
}

export interface GemServiceClient {
  /** Resolves with the body read; rejects with the read's failure. */
  read(request: GemRead): Promise<Buffer>;
  close(): void;
}

/** A client of the service over one stream, its calls matched to their answers by id. */
export function connectGemService(address: string): GemServiceClient {
  const Client = grpc.makeGenericClientConstructor(GEM_SERVICE, 'GemShaped');
  const client = new Client(
    address,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & {
    pipe(): grpc.ClientDuplexStream<Buffer, Buffer>;
  };
  const stream = client.pipe();
  const waiting = new Map<number, { resolve(answer: Buffer): void; reject(error: Error): void }>();
  let nextId = 0;
  stream.on('data', (answer: Buffer) => {
    const id = answer.readUInt32BE(0);
    const caller = waiting.get(id);
    waiting.delete(id);
    const payload = answer.subarray(5);
    if (answer[4] === OK) caller?.resolve(payload);
    else caller?.reject(new Error(payload.toString()));
  });
  stream.on('error', (error: Error) => {
    for (const caller of waiting.values()) caller.reject(error);
    waiting.clear();
  });
  return {
    read: (request) =>
      new Promise((resolve, reject) => {
        const id = nextId;
        nextId = (nextId + 1) >>> 0;
        waiting.set(id, { resolve, reject });
        const json = Buffer.from(JSON.stringify(request));
        const message = Buffer.allocUnsafe(4 + json.length);
        message.writeUInt32BE(id, 0);
        json.copy(message, 4);
        stream.write(message);
      }),
    close: () => {
      stream.end();
      client.close();
    },
  };
}
