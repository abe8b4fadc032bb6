// A real store for SDK tests: fresh databases on the local MariaDB (or MYSQL_URL), the engine
// and the gRPC server in-process on a loopback port, and an SDK store connected to it. Some
// partitions may be reached through a fault-injecting proxy, to take them down.

import {
  openStore,
  silentLogger,
  startServer,
  type QueryLimits,
  type ServerOptions,
} from '@shameless/server';
import { createTestDatabases, startTcpProxy, type TcpProxy } from '@shameless/testkit';
import {
  connect,
  type CoalescingOptions,
  type SessionToken,
  type Store,
  type StreamCallOptions,
  type Transport,
  type TransportOptions,
  type UnaryCallOptions,
} from '../../src/index.js';

export interface StoreFixture {
  /** The server's address, `127.0.0.1:<port>`. */
  readonly address: string;
  /** The store's first partition's database, for tests that look at or make tables. */
  readonly databaseUrl: string;
  /** By partition: the proxy the server reaches it through, if `proxiedPartitions` names it. */
  readonly partitionProxies: readonly (TcpProxy | undefined)[];
  /** An SDK store connected to the server. */
  readonly store: Store;
  /** Another SDK store on its own connection: "another process". */
  connectAnother(options?: ConnectSettings): Promise<Store>;
  close(): Promise<void>;
}

/** What `connect` takes besides the fixture's endpoint. */
export type ConnectSettings = Partial<TransportOptions> & CoalescingOptions;

export interface FixtureOptions {
  shardsCount?: number;
  /** MySQL databases the shards are spread over. Default 1. */
  partitions?: number;
  /** The partitions (by index) the server reaches through a proxy of their own. */
  proxiedPartitions?: readonly number[];
  /** The server's query limits (`--max-batch-keys`, ...). Default: the server's defaults. */
  queryLimits?: QueryLimits;
  /** The server's `--max-message-bytes`. Default 16 MiB. */
  serverMaxMessageBytes?: number;
  /** Layers every call the server runs passes through: what a test watches on the server. */
  serverMiddleware?: ServerOptions['middleware'];
  /** Transport settings of `store`. */
  transport?: ConnectSettings;
}

export async function startStoreFixture(options: FixtureOptions = {}): Promise<StoreFixture> {
  const databases = await createTestDatabases(options.partitions ?? 1);
  const partitionProxies = await Promise.all(
    databases.urls.map((url, i) =>
      options.proxiedPartitions?.includes(i) ? proxyTo(url) : undefined,
    ),
  );
  const engine = await openStore(
    {
      namespace: 'sdk',
      shardsCount: options.shardsCount ?? 4,
      partitionUrls: databases.urls.map((url, i) => throughProxy(url, partitionProxies[i])),
      poolSize: 8,
      connectTimeoutMs: 1000,
      startupTimeoutMs: 0,
      followPollIntervalMs: 20,
      queryLimits: options.queryLimits,
    },
    silentLogger,
  );
  const server = await startServer(
    engine,
    {
      listen: '127.0.0.1:0',
      maxMessageBytes: options.serverMaxMessageBytes ?? 16 * 1024 * 1024,
      middleware: options.serverMiddleware,
    },
    silentLogger,
  );
  const address = `127.0.0.1:${server.port}`;
  const others: Store[] = [];
  const connectAnother = async (transport: ConnectSettings = {}) => {
    const store = await connect({ endpoints: [address], ...transport });
    others.push(store);
    return store;
  };
  const store = await connectAnother(options.transport);
  return {
    address,
    databaseUrl: databases.urls[0]!,
    partitionProxies,
    store,
    connectAnother,
    async close() {
      await Promise.all(others.map((other) => other.close()));
      await server.shutdown(500);
      await engine.close();
      await Promise.all(partitionProxies.map((proxy) => proxy?.close()));
      await databases.drop();
    },
  };
}

function proxyTo(databaseUrl: string): Promise<TcpProxy> {
  const url = new URL(databaseUrl);
  return startTcpProxy({ target: { host: url.hostname, port: Number(url.port || 3306) } });
}

function throughProxy(databaseUrl: string, proxy: TcpProxy | undefined): string {
  if (proxy === undefined) return databaseUrl;
  const url = new URL(databaseUrl);
  url.host = proxy.address;
  return url.toString();
}

/** One call the model layer made through a {@link RecordingTransport}. */
export interface RecordedCall {
  readonly method: string;
  readonly request: unknown;
  readonly options: UnaryCallOptions | StreamCallOptions | undefined;
  readonly stream: boolean;
  /**
   * For streams: `'open'` while iterated, `'done'` when the server ended it, `'threw'` on an
   * error, `'returned'` when the consumer left early (the transport then cancels the call).
   */
  outcome: 'open' | 'done' | 'threw' | 'returned';
}

interface StreamBreak {
  afterMessages: number;
  error: () => Error;
}

/**
 * Wraps a transport and records every call (method, request object, options), so tests can
 * see what each SDK method sends. `failNext` makes calls of a method answer with a given
 * error after the call went through (the write landed, the answer was lost).
 */
export class RecordingTransport implements Transport {
  readonly calls: RecordedCall[] = [];
  readonly #inner: Transport;
  readonly #answerLost = new Map<string, { count: number; error: () => Error }>();
  readonly #streamBreaks = new Map<string, StreamBreak>();

  constructor(inner: Transport) {
    this.#inner = inner;
  }

  get endpoints(): readonly string[] {
    return this.#inner.endpoints;
  }

  get session(): SessionToken {
    return this.#inner.session;
  }

  /** The next `count` calls of `method` are sent, but answer with `error()`. */
  loseAnswers(method: string, count: number, error: () => Error): void {
    this.#answerLost.set(method, { count, error });
  }

  /** The next stream of `method` fails with `error()` after `afterMessages` messages. */
  breakNextStream(method: string, afterMessages: number, error: () => Error): void {
    this.#streamBreaks.set(method, { afterMessages, error });
  }

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  reset(): void {
    this.calls.length = 0;
  }

  unary: Transport['unary'] = async (method, request, options) => {
    this.calls.push({ method, request, options, stream: false, outcome: 'done' });
    const response = await this.#inner.unary(method, request, options);
    const lost = this.#answerLost.get(method);
    if (lost !== undefined && lost.count > 0) {
      lost.count--;
      throw lost.error();
    }
    return response;
  };

  serverStream: Transport['serverStream'] = (method, request, options) => {
    const call: RecordedCall = { method, request, options, stream: true, outcome: 'open' };
    this.calls.push(call);
    const fault = this.#streamBreaks.get(method);
    this.#streamBreaks.delete(method);
    return watch(this.#inner.serverStream(method, request, options), call, fault);
  };

  bidiStream: Transport['bidiStream'] = (method, requests, options) => {
    const call: RecordedCall = {
      method,
      request: requests,
      options,
      stream: true,
      outcome: 'open',
    };
    this.calls.push(call);
    return watch(this.#inner.bidiStream(method, requests, options), call, undefined);
  };

  collect: Transport['collect'] = async (method, request, options) => {
    const call: RecordedCall = { method, request, options, stream: true, outcome: 'open' };
    this.calls.push(call);
    try {
      const messages = await this.#inner.collect(method, request, options);
      call.outcome = 'done';
      return messages;
    } catch (error) {
      call.outcome = 'threw';
      throw error;
    }
  };

  stats: Transport['stats'] = () => this.#inner.stats();

  close(): void {
    this.#inner.close();
  }
}

async function* watch<T>(
  messages: AsyncIterable<T>,
  call: RecordedCall,
  fault: StreamBreak | undefined,
): AsyncGenerator<T, void, undefined> {
  let count = 0;
  try {
    for await (const message of messages) {
      if (fault !== undefined && count >= fault.afterMessages) throw fault.error();
      count++;
      yield message;
    }
    call.outcome = 'done';
  } catch (error) {
    call.outcome = 'threw';
    throw error;
  } finally {
    if (call.outcome === 'open') call.outcome = 'returned';
  }
}

/** The rejection of a promise that must reject. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the promise to reject');
}

/** The error a function throws synchronously. */
export function thrown(action: () => unknown): Error {
  try {
    action();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to throw');
}
