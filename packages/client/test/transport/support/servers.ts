// Real grpc-js servers on loopback ports implementing the generated StoreService with
// scripted handlers, for the transport's tests. Real network, real grpc-js on both sides; only
// the server's behaviour is scripted.

import { createServer } from 'node:net';
import {
  Server,
  ServerCredentials,
  status,
  type Metadata,
  type ServerErrorResponse,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { StoreService, type Cell, type GetCellRequest, type StoreServer } from '@shameless/proto';
import { createTransport, type Transport, type TransportOptions } from '../../../src/index.js';

/** The marks of a read: retried and hedged. */
export const READ = { idempotent: true, hedgeable: true } as const;

/** A GetCell of the latest base cell, for calls whose answer the scripted server decides. */
export const GET_CELL: GetCellRequest = { model: 'rate', uuid: 'u-1', cell: '', refKey: undefined };

/** A running scripted server. */
export interface TestServer {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  readonly server: Server;
  /** Stops the server at once, cancelling calls in flight. */
  stop(): void;
}

/**
 * Starts a grpc-js server on 127.0.0.1:0 serving the given Store handlers (others:
 * UNIMPLEMENTED); plaintext unless `credentials` say otherwise (TLS).
 */
export async function startServer(
  handlers: Partial<StoreServer>,
  credentials: ServerCredentials = ServerCredentials.createInsecure(),
): Promise<TestServer> {
  const server = new Server();
  server.addService(StoreService, handlers as UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', credentials, (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
  return {
    address: `127.0.0.1:${port}`,
    server,
    stop: () => server.forceShutdown(),
  };
}

/** An address where nothing listens (a port that was free a moment ago). */
export async function deadAddress(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `127.0.0.1:${address.port}`;
}

/** A status error for a handler's callback. */
export function statusError(code: status, details: string): ServerErrorResponse {
  return Object.assign(new Error(details), { code, details });
}

/** A cell whose uuid names where it came from. */
export function cell(uuid: string, refKey = 0): Cell {
  return {
    id: BigInt(refKey + 1),
    shard: 0,
    uuid,
    name: 'base',
    refKey,
    createdAt: new Date(0),
    body: Buffer.from([0x80]),
  };
}

/** A promise with its resolve function exposed. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Rejects if `promise` has not settled within `ms` (so a missing event fails fast). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The deadline a server call carries, as epoch ms (Infinity when none). */
export function deadlineMs(call: { getDeadline(): Date | number }): number {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : deadline;
}

/** First value of a metadata key as a string. */
export function metadataValue(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return value === undefined ? undefined : value.toString();
}

/** Waits `ms` of real time. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Scripted servers and transports for the tests of one `describe`: `serve` starts a server,
 * `connect` makes a transport (with `defaults` under its own options); both are stopped and
 * closed after each test.
 */
export function serversAndTransports(defaults: Partial<TransportOptions> = {}) {
  const servers: TestServer[] = [];
  const transports: Transport[] = [];
  afterEach(() => {
    for (const transport of transports.splice(0)) transport.close();
    for (const server of servers.splice(0)) server.stop();
  });
  return {
    async serve(handlers: Partial<StoreServer>, credentials?: ServerCredentials) {
      const server = await startServer(handlers, credentials);
      servers.push(server);
      return server;
    },
    connect(endpoints: string[], options: Partial<TransportOptions> = {}): Transport {
      const transport = createTransport({ endpoints, ...defaults, ...options });
      transports.push(transport);
      return transport;
    },
  };
}
