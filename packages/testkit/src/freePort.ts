import { createServer } from 'node:net';

/**
 * Asks the kernel for a currently unused TCP port on 127.0.0.1.
 *
 * The port is released before this resolves, so another process could take it before the caller
 * binds it; on a test machine that race is rare enough to accept, and the alternative (passing a
 * listening socket around) is not possible for child processes such as mariadbd.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`unexpected listening address: ${String(address)}`));
        return;
      }
      server.close((error) => (error ? reject(error) : resolve(address.port)));
    });
  });
}
