// The store's protocol with none of the store: the Store service's Pipeline method (its protobuf
// both ways, @shameless/proto's codec) answered by a bare grpc-js handler that runs, for each
// GetCell, the statement the store's server sends for a lone GetCell (the engine's own SQL and
// MariaDB time limit, so the text cannot drift), on a pooled connection, as the store's server
// runs it (runTogether over the engine's pool: prepared once a connection has sent its text
// before). No middleware, no validation, no batching, no cache. Beside a lone GetCell's rounds in
// turn with the gem-shaped service (issue 55) it shows what the protocol and the bounded
// statement cost by themselves: the floor of the store's server as it reads. GetCell only; any
// other call is answered UNIMPLEMENTED.
import * as grpc from '@grpc/grpc-js';
import {
  type PipelineRequest,
  type PipelineResponse,
  StoreClient,
  StoreService,
} from '@shameless/proto';
import {
  DEFAULT_PREPARED_READS_PER_CONNECTION,
  type Row,
  createMysqlPool,
  latestVersionsOf,
  parseMysqlUrl,
  readTimeLimitFor,
  runTogether,
} from '@shameless/server/sql';
import { type LoopbackServer, listenOnLoopback } from './loopbackServer.js';
import { BaselineTables } from './mysqlBaseline.js';

export interface ProtocolFloorSettings {
  /** The partition's URL, database included. */
  readonly partitionUrl: string;
  readonly shardsCount: number;
  /** mysql2 connections at most. */
  readonly connections: number;
  /** The time limit each statement carries, ms: the SDK's deadline, as the server passes it on. */
  readonly readLimitMs: number;
}

/** Serves the floor on `127.0.0.1:0`; resolves with the bound port. */
export async function serveProtocolFloor(settings: ProtocolFloorSettings): Promise<LoopbackServer> {
  const pool = createMysqlPool(parseMysqlUrl(settings.partitionUrl), {
    connectionLimit: settings.connections,
    connectTimeoutMs: 5000,
    preparedReadsPerConnection: DEFAULT_PREPARED_READS_PER_CONNECTION,
  });
  const [version] = await pool.query<Row[]>('SELECT VERSION() AS `version`');
  const timeLimit = readTimeLimitFor(String(version!.version));
  const tables = new BaselineTables('rate', settings.shardsCount);

  /** The latest version of the cell, answered as the store's server answers a GetCell. */
  const getCell = async (uuid: string, cell: string): Promise<PipelineResponse['result']> => {
    const shard = tables.contentShard(uuid);
    const read = latestVersionsOf([
      { table: tables.content(shard), keys: [{ uuid, cell, withBody: true }] },
    ]);
    // The call's deadline sets the statement's time limit, as it does in the store's server.
    const session = pool.for({ deadline: Date.now() + settings.readLimitMs }).reads;
    const [rows] = (await runTogether(session, [read], timeLimit)) as Row[][];
    const row = rows?.[0];
    if (!row) return notFound(`no version of ${uuid}/${cell}`);
    return {
      $case: 'getCell',
      getCell: {
        cell: {
          id: BigInt(String(row.id)),
          shard,
          uuid,
          name: String(row.column_name),
          refKey: Number(row.ref_key),
          createdAt: row.created_at instanceof Date ? row.created_at : undefined,
          body: row.body as Buffer,
        },
      },
    };
  };

  const server = new grpc.Server();
  server.addService(
    { pipeline: StoreService.pipeline },
    {
      pipeline: (call: grpc.ServerDuplexStream<PipelineRequest, PipelineResponse>) => {
        call.on('data', ({ callId, call: request }: PipelineRequest) => {
          const answered =
            request?.$case === 'getCell'
              ? getCell(request.getCell.uuid, request.getCell.cell || 'base')
              : Promise.resolve(unimplemented(request?.$case));
          answered.then(
            (result) => call.write({ callId, trailers: {}, result }),
            (error: unknown) =>
              call.write({
                callId,
                trailers: {},
                result: {
                  $case: 'error',
                  error: {
                    code: grpc.status.INTERNAL,
                    message: error instanceof Error ? error.message : String(error),
                    trailers: {},
                  },
                },
              }),
          );
        });
        call.on('end', () => call.end());
      },
    },
  );
  return listenOnLoopback(server, pool);
}

const notFound = (message: string): PipelineResponse['result'] => ({
  $case: 'error',
  error: { code: grpc.status.NOT_FOUND, message, trailers: {} },
});

const unimplemented = (method: string | undefined): PipelineResponse['result'] => ({
  $case: 'error',
  error: {
    code: grpc.status.UNIMPLEMENTED,
    message: `the protocol floor answers GetCell only, not ${method ?? 'an empty call'}`,
    trailers: {},
  },
});

export interface ProtocolFloorClient {
  /** Resolves with the cell's body; rejects with the call's error. */
  getCell(uuid: string): Promise<Buffer>;
  close(): void;
}

/**
 * A bare client of the store's Pipeline (the generated StoreClient, one stream, calls matched to
 * their answers by id): of the floor, or of a store's server, with none of the SDK.
 */
export function connectProtocolFloor(address: string, model = 'rate'): ProtocolFloorClient {
  const client = new StoreClient(address, grpc.credentials.createInsecure());
  const stream = client.pipeline();
  const waiting = new Map<number, { resolve(body: Buffer): void; reject(error: Error): void }>();
  let nextId = 0;
  stream.on('data', ({ callId, result }: PipelineResponse) => {
    const caller = waiting.get(callId);
    waiting.delete(callId);
    if (result?.$case === 'getCell' && result.getCell.cell) {
      caller?.resolve(Buffer.from(result.getCell.cell.body));
    } else {
      const message = result?.$case === 'error' ? result.error.message : 'no cell answered';
      caller?.reject(new Error(message));
    }
  });
  stream.on('error', (error: Error) => {
    for (const caller of waiting.values()) caller.reject(error);
    waiting.clear();
  });
  return {
    getCell: (uuid) =>
      new Promise((resolve, reject) => {
        const callId = nextId;
        nextId = (nextId + 1) >>> 0;
        waiting.set(callId, { resolve, reject });
        stream.write({
          callId,
          timeoutMs: 0,
          metadata: {},
          call: { $case: 'getCell', getCell: { model, uuid, cell: 'base', refKey: undefined } },
        });
      }),
    close: () => {
      stream.end();
      client.close();
    },
  };
}
