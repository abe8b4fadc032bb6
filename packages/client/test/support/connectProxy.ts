// An HTTP CONNECT proxy, as grpc-js reaches one through `grpc_proxy` or `https_proxy`: it
// records the target each tunnel asks for and tunnels to that port on 127.0.0.1, whatever host
// the target names, so that a test can dial a name its certificate holds (`localhost`) while the
// proxy listens on an address the certificate does not name.

import { type Socket, createConnection, createServer } from 'node:net';

export interface ConnectProxy {
  /** `http://host:port`, for `grpc_proxy`. */
  readonly url: string;
  /** The `host:port` of each CONNECT, in order. */
  readonly targets: readonly string[];
  close(): Promise<void>;
}

export async function startConnectProxy(host: string): Promise<ConnectProxy> {
  const targets: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      client.off('data', onData);
      const target = /^CONNECT (\S+) HTTP\/1\.[01]\r\n/.exec(head.toString('latin1'))?.[1];
      const port = Number(target?.split(':').pop());
      if (target === undefined || !Number.isInteger(port)) {
        client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
        return;
      }
      targets.push(target);
      const upstream = createConnection({ host: '127.0.0.1', port }, () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        upstream.write(head.subarray(end + 4));
        client.pipe(upstream).pipe(client);
      });
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
    };
    client.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host}:${port}`,
    targets,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
