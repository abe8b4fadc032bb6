// Promise wrappers over the generated grpc-js client, for tests that speak the raw contract.
import {
  type ChannelCredentials,
  type ChannelOptions,
  type ClientReadableStream,
  Metadata,
  type ServiceError,
  credentials,
  makeClientConstructor,
} from '@grpc/grpc-js';
import type { UnaryMethod } from '../../src/commands/connection.js';
import { type EachRequest, SortOrder, StoreClient, type WhereRequest } from '@shameless/proto';
import { service as healthService } from 'grpc-health-check';

const DEADLINE_MS = 15_000;

const WHERE_DEFAULTS: WhereRequest = {
  model: 'rate',
  index: '',
  conditions: [],
  cells: [],
  order: SortOrder.SORT_ORDER_ASC,
  limit: 0,
  pageToken: '',
};
const EACH_DEFAULTS: EachRequest = {
  model: 'rate',
  shards: [],
  cursors: {},
  follow: false,
  batchSize: 0,
  heartbeatIntervalMs: 0,
};

export interface ConnectOptions {
  /** TLS or mutual TLS; insecure when unset. */
  credentials?: ChannelCredentials;
  /** A bearer token sent with every call as `authorization: Bearer <token>`. */
  token?: string;
  /** grpc-js channel options (e.g. a larger receive limit). */
  channelOptions?: ChannelOptions;
}

/** The Store's unary methods as promises, each with a deadline, plus the raw client. */
export function connectStore(address: string, options: ConnectOptions = {}) {
  const client = new StoreClient(
    address,
    options.credentials ?? credentials.createInsecure(),
    options.channelOptions ?? {},
  );
  const metadata = () => {
    const headers = new Metadata();
    if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
    return headers;
  };
  const unary =
    <Req, Res>(method: UnaryMethod<Req, Res>) =>
    (request: Req): Promise<Res> =>
      new Promise((resolve, reject) => {
        method.call(
          client,
          request,
          metadata(),
          { deadline: new Date(Date.now() + DEADLINE_MS) },
          (error, response) => (error ? reject(error) : resolve(response)),
        );
      });
  return {
    client,
    defineModel: unary(client.defineModel),
    describeStore: unary(client.describeStore),
    findShard: unary(client.findShard),
    put: unary(client.put),
    putMany: unary(client.putMany),
    writeCell: unary(client.writeCell),
    writeCells: unary(client.writeCells),
    getCell: unary(client.getCell),
    getCells: unary(client.getCells),
    previous: unary(client.previous),
    fetchLatestCells: unary(client.fetchLatestCells),
    describeConsumerGroup: unary(client.describeConsumerGroup),
    listParkedCells: unary(client.listParkedCells),
    replayParkedCell: unary(client.replayParkedCell),
    resetConsumerGroup: unary(client.resetConsumerGroup),
    /** WhereMany; unset fields of each query take the Where defaults. */
    whereMany: (queries: Partial<WhereRequest>[]) =>
      unary(client.whereMany)({
        queries: queries.map((query) => ({ ...WHERE_DEFAULTS, ...query })),
      }),
    /** A whole Where stream; unset fields take their defaults (model rate, primary index). */
    where: (request: Partial<WhereRequest>) =>
      collect(client.where({ ...WHERE_DEFAULTS, ...request }, metadata())),
    /** A whole Each stream without follow; unset fields take their defaults. */
    each: (request: Partial<EachRequest>) =>
      collect(client.each({ ...EACH_DEFAULTS, ...request }, metadata())),
    /** A Consume stream, with the connection's token. */
    consume: () => client.consume(metadata()),
    close: () => client.close(),
  };
}

export type StoreApi = ReturnType<typeof connectStore>;

/** Reads a whole server stream. */
export async function collect<T>(stream: ClientReadableStream<T>): Promise<T[]> {
  const messages: T[] = [];
  for await (const message of stream) messages.push(message as T);
  return messages;
}

/** The error a promise rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** A grpc.health.v1.Health client: `check` answers a service's status (`SERVING`, …). */
export function connectHealth(address: string) {
  const Health = makeClientConstructor(healthService, 'grpc.health.v1.Health');
  const client = new Health(address, credentials.createInsecure()) as unknown as {
    check(
      request: { service: string },
      callback: (error: Error | null, response: { status: string }) => void,
    ): void;
    watch(request: { service: string }): NodeJS.EventEmitter;
    close(): void;
  };
  return {
    check: (service: string) =>
      new Promise<string>((resolve, reject) =>
        client.check({ service }, (error, response) =>
          error ? reject(error) : resolve(response.status),
        ),
      ),
    watch: (service: string) => client.watch({ service }),
    close: () => client.close(),
  };
}
