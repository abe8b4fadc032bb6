// A baseline's grpc-js server on a loopback port of its own, with the pool it reads through.
import * as grpc from '@grpc/grpc-js';

export interface LoopbackServer {
  /** The port bound on 127.0.0.1. */
  readonly port: number;
  /** Shuts the server down, then ends its pool. */
  close(): Promise<void>;
}

/** Binds `server` on `127.0.0.1:0`, without TLS; its `close` ends `pool` too. */
export async function listenOnLoopback(
  server: grpc.Server,
  pool: { end(): Promise<void> },
): Promise<LoopbackServer> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return {
    port,
    async close() {
      server.forceShutdown();
      await pool.end();
    },
  };
}
