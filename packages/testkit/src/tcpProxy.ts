/**
 * A fault-injecting TCP proxy for loopback traffic (gRPC over HTTP/2, the MySQL protocol).
 *
 * Faults act on chunks, the buffers Node hands us as bytes arrive, never on protocol messages. For
 * gRPC that is the practical granularity: HTTP/2 multiplexes many calls over one connection, so
 * "delay this connection" would delay every call, while delaying a random share of chunks delays
 * some responses and not others. Bytes are never reordered: a held-back chunk also holds back the
 * chunks after it on the same connection and direction, just as a slow network would.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface DelayFault {
  /** Chance, from 0 to 1, that any one chunk is held back. */
  probability: number;
  /** How long a chunk that is held back waits before being forwarded. */
  ms: number;
  /** Stands in for Math.random, e.g. to make a test deterministic. */
  random?: () => number;
}

/** Faults are read as each chunk or connection arrives, so changes apply to open connections too. */
export interface ProxyFaults {
  delayServerToClient?: DelayFault;
  delayClientToServer?: DelayFault;
  /**
   * Discard everything the server sends while requests still reach it: the server commits, the
   * client never hears back. Discarded bytes are gone, so a connection that lost some is corrupt
   * and should be reset (`resetAll()`) before the fault is lifted.
   */
  dropServerToClient?: boolean;
  /** Reset new connections as soon as they are accepted, like a host that is down. */
  refuseConnections?: boolean;
  /**
   * Accept connections but forward nothing in either direction, like a host that hangs. New
   * connections are not even opened to the target and stay hung until reset; on open connections
   * bytes are discarded (see `dropServerToClient` about corruption).
   */
  blackhole?: boolean;
}

export interface TcpProxyStats {
  connectionsAccepted: number;
  /** Connections reset on arrival because of `refuseConnections`; included in accepted. */
  connectionsRefused: number;
  /** Bytes actually written to the target. */
  bytesClientToServer: number;
  /** Bytes actually written back to clients. */
  bytesServerToClient: number;
  chunksDelayed: number;
  /** Chunks discarded by `dropServerToClient` or `blackhole`. */
  chunksDropped: number;
}

export interface TcpProxyOptions {
  target: { host: string; port: number };
  /** Port to listen on, on 127.0.0.1; a free one when omitted. */
  listenPort?: number;
  faults?: ProxyFaults;
  /**
   * Sees each chunk a client sends as it is forwarded, with the client's socket (one per
   * connection): a test can count the statements a server sends its database.
   */
  observeClientToServer?: (chunk: Buffer, client: Socket) => void;
}

export interface TcpProxy {
  readonly port: number;
  /** `127.0.0.1:<port>`, ready to hand to a gRPC client. */
  readonly address: string;
  /** Connections currently open through the proxy. */
  readonly connectionCount: number;
  /** A snapshot of the counters since the proxy started. */
  readonly stats: TcpProxyStats;
  readonly faults: Readonly<ProxyFaults>;
  /** Replaces all faults; `setFaults({})` restores plain forwarding. */
  setFaults(faults: ProxyFaults): void;
  /** Abruptly closes (TCP RST) both sides of every open connection. */
  resetAll(): void;
  /** Stops listening, resets every open connection and resolves once the listener is closed. */
  close(): Promise<void>;
}

export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const proxy = new FaultInjectingProxy(
    options.target,
    options.faults ?? {},
    options.observeClientToServer,
  );
  await proxy.listen(options.listenPort ?? 0);
  return proxy;
}

type Direction = 'clientToServer' | 'serverToClient';

// Above this many chunks waiting on one direction (e.g. behind a long delay), stop reading from the
// sender so that memory stays bounded and TCP flow control pushes back on it.
const MAX_QUEUED_CHUNKS = 256;

class FaultInjectingProxy implements TcpProxy {
  private readonly server: Server;
  private readonly connections = new Set<ProxiedConnection>();
  private readonly counters: TcpProxyStats = {
    connectionsAccepted: 0,
    connectionsRefused: 0,
    bytesClientToServer: 0,
    bytesServerToClient: 0,
    chunksDelayed: 0,
    chunksDropped: 0,
  };
  private currentFaults: ProxyFaults = {};
  private listeningPort = 0;
  private closing = false;

  constructor(
    private readonly target: { host: string; port: number },
    faults: ProxyFaults,
    readonly observeClientToServer?: (chunk: Buffer, client: Socket) => void,
  ) {
    this.setFaults(faults);
    this.server = createServer((client) => this.accept(client));
  }

  get port(): number {
    return this.listeningPort;
  }

  get address(): string {
    return `127.0.0.1:${this.listeningPort}`;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  get stats(): TcpProxyStats {
    return { ...this.counters };
  }

  get faults(): Readonly<ProxyFaults> {
    return this.currentFaults;
  }

  setFaults(faults: ProxyFaults): void {
    validateDelay('delayServerToClient', faults.delayServerToClient);
    validateDelay('delayClientToServer', faults.delayClientToServer);
    this.currentFaults = { ...faults };
  }

  resetAll(): void {
    for (const connection of this.connections) {
      connection.reset();
    }
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host: '127.0.0.1', port }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address();
    if (address === null || typeof address === 'string') {
      throw new Error(`unexpected listening address: ${String(address)}`);
    }
    this.listeningPort = address.port;
  }

  close(): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // server.close() only stops accepting; it waits for open connections, so end them now.
    this.resetAll();
    return closed;
  }

  /** Decides a chunk's fate: `'discard'`, or how many milliseconds to hold it back. */
  fateOfChunk(direction: Direction): number | 'discard' {
    const faults = this.currentFaults;
    if (faults.blackhole || (direction === 'serverToClient' && faults.dropServerToClient)) {
      this.countDiscarded();
      return 'discard';
    }
    const delay =
      direction === 'serverToClient' ? faults.delayServerToClient : faults.delayClientToServer;
    if (
      delay !== undefined &&
      delay.ms > 0 &&
      (delay.random ?? Math.random)() < delay.probability
    ) {
      this.counters.chunksDelayed++;
      return delay.ms;
    }
    return 0;
  }

  countDiscarded(): void {
    this.counters.chunksDropped++;
  }

  countForwarded(direction: Direction, bytes: number): void {
    if (direction === 'serverToClient') {
      this.counters.bytesServerToClient += bytes;
    } else {
      this.counters.bytesClientToServer += bytes;
    }
  }

  private accept(client: Socket): void {
    // Errors such as ECONNRESET are expected here and are handled through 'close'.
    client.on('error', () => {});
    if (this.closing) {
      // Accepted just before close(): it would outlive the resetAll() that close() did.
      client.resetAndDestroy();
      return;
    }
    this.counters.connectionsAccepted++;
    if (this.currentFaults.refuseConnections) {
      this.counters.connectionsRefused++;
      client.resetAndDestroy();
      return;
    }
    const upstream = this.currentFaults.blackhole
      ? undefined
      : connect({ host: this.target.host, port: this.target.port });
    const connection = new ProxiedConnection(client, upstream, this);
    this.connections.add(connection);
    void connection.closed.then(() => this.connections.delete(connection));
  }
}

/** One client socket and, unless it arrived during a blackhole, its socket to the target. */
class ProxiedConnection {
  readonly closed: Promise<void>;

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket | undefined,
    proxy: FaultInjectingProxy,
  ) {
    // Small gRPC frames and MySQL packets would otherwise sit in Nagle's buffer.
    client.setNoDelay(true);
    if (upstream === undefined) {
      client.on('data', () => proxy.countDiscarded());
      this.closed = closeOf(client);
      return;
    }
    upstream.setNoDelay(true);
    upstream.on('error', () => {});
    relay(client, upstream, 'clientToServer', proxy);
    relay(upstream, client, 'serverToClient', proxy);
    this.closed = Promise.all([closeOf(client), closeOf(upstream)]).then(() => {});
  }

  reset(): void {
    resetSocket(this.client);
    if (this.upstream !== undefined) {
      resetSocket(this.upstream);
    }
  }
}

/**
 * Forwards `source` to `sink` through a promise chain, so that each chunk is written only after the
 * one before it, however long either was held back.
 */
function relay(
  source: Socket,
  sink: Socket,
  direction: Direction,
  proxy: FaultInjectingProxy,
): void {
  let tail = Promise.resolve();
  let queuedChunks = 0;
  const afterQueued = (step: () => Promise<void> | void) => {
    tail = tail.then(step).catch(() => {});
  };

  source.on('data', (chunk: Buffer) => {
    const delayMs = proxy.fateOfChunk(direction);
    if (delayMs === 'discard') {
      return;
    }
    queuedChunks++;
    if (queuedChunks >= MAX_QUEUED_CHUNKS) {
      source.pause();
    }
    afterQueued(async () => {
      try {
        if (delayMs > 0) {
          // Unreferenced: a chunk held back for a connection nobody waits on must not keep the
          // test process alive.
          await sleep(delayMs, undefined, { ref: false });
        }
        if (!sink.writable) {
          return;
        }
        proxy.countForwarded(direction, chunk.length);
        if (direction === 'clientToServer') proxy.observeClientToServer?.(chunk, source);
        if (!sink.write(chunk)) {
          await drainedOrClosed(sink);
        }
      } finally {
        queuedChunks--;
        if (queuedChunks < MAX_QUEUED_CHUNKS && source.isPaused()) {
          source.resume();
        }
      }
    });
  });
  // A clean end is passed on once everything before it has been forwarded.
  source.once('end', () => afterQueued(() => void sink.end()));
  source.once('close', (hadError) => {
    if (hadError) {
      // Pass an abrupt failure on as one, without flushing what is still queued.
      resetSocket(sink);
    } else {
      afterQueued(() => sink.destroySoon());
    }
  });
}

function resetSocket(socket: Socket): void {
  if (socket.destroyed) {
    return;
  }
  // resetAndDestroy() on a socket still connecting would wait for the connection first.
  if (socket.connecting) {
    socket.destroy();
  } else {
    socket.resetAndDestroy();
  }
}

function closeOf(socket: Socket): Promise<void> {
  return socket.closed
    ? Promise.resolve()
    : new Promise((resolve) => socket.once('close', () => resolve()));
}

function drainedOrClosed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

function validateDelay(name: string, delay: DelayFault | undefined): void {
  if (delay === undefined) {
    return;
  }
  if (!(delay.probability >= 0 && delay.probability <= 1)) {
    throw new RangeError(`${name}.probability must be between 0 and 1, got ${delay.probability}`);
  }
  if (!(delay.ms >= 0)) {
    throw new RangeError(`${name}.ms must not be negative, got ${delay.ms}`);
  }
}
