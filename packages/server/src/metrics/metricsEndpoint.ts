// The Prometheus endpoint of `serve --metrics-listen`: GET /metrics answers the registry in the
// text format; anything else is 404.
import { type Server, createServer } from 'node:http';
import type { Registry } from 'prom-client';

export interface MetricsEndpoint {
  /** The port actually bound. */
  port: number;
  close(): Promise<void>;
}

export async function startMetricsEndpoint(
  listen: string,
  registry: Registry,
): Promise<MetricsEndpoint> {
  const { host, port } = hostAndPort(listen);
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) =>
        response
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`metrics failed: ${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    const refuse = (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'EADDRINUSE'
            ? `--metrics-listen ${listen}: the port is in use; pick a free one (port 0: any)`
            : `--metrics-listen ${listen}: ${error.message}`,
        ),
      );
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function hostAndPort(listen: string): { host: string; port: number } {
  const match = /^(.*):(\d+)$/.exec(listen);
  if (!match)
    throw new Error(`--metrics-listen: expected host:port, got ${JSON.stringify(listen)}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
}
