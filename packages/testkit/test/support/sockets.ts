import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A real TCP server that echoes every byte and remembers what it was sent. */
export interface EchoServer {
  readonly port: number;
  /** Sockets the echo server has accepted so far, open or closed. */
  readonly accepted: Socket[];
  received(): string;
  close(): Promise<void>;
}

export async function startEchoServer(): Promise<EchoServer> {
  const accepted: Socket[] = [];
  const chunks: Buffer[] = [];
  const server = createServer((socket) => {
    accepted.push(socket);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      socket.write(chunk);
    });
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    accepted,
    received: () => Buffer.concat(chunks).toString(),
    close: async () => {
      for (const socket of accepted) {
        socket.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export async function listenOnLoopback(server: Server): Promise<number> {
  server.listen({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('server is not listening on TCP');
  }
  return address.port;
}

/** A connected client socket that records everything it receives and how it ended. */
export interface Client {
  readonly socket: Socket;
  received(): string;
  /** Resolves with the socket's error code (if any) once it has closed. */
  readonly closed: Promise<string | undefined>;
  isClosed(): boolean;
}

export async function connectClient(port: number): Promise<Client> {
  const socket = connect({ host: '127.0.0.1', port });
  const chunks: Buffer[] = [];
  let errorCode: string | undefined;
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', (error: NodeJS.ErrnoException) => (errorCode = error.code));
  const closed = new Promise<string | undefined>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve(errorCode);
    }),
  );
  // Not events.once(): that rejects on 'error', and tests want to inspect failed connections.
  await Promise.race([new Promise((resolve) => socket.once('connect', resolve)), closed]);
  return {
    socket,
    received: () => Buffer.concat(chunks).toString(),
    closed,
    isClosed: () => isClosed,
  };
}

/** Polls until `condition` holds, failing with `description` after `timeoutMs`. */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  description: string,
  timeoutMs = 2_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${description}`);
    }
    await sleep(5);
  }
}
