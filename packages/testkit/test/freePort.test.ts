import { createServer } from 'node:net';
import { expect } from 'chai';
import { freePort } from '../src/index.js';
import { listenOnLoopback } from './support/sockets.js';

describe('freePort', () => {
  it('returns a port that can be listened on right away', async () => {
    const port = await freePort();
    const server = createServer();
    try {
      server.listen({ host: '127.0.0.1', port });
      await new Promise((resolve, reject) => {
        server.once('listening', resolve);
        server.once('error', reject);
      });
      expect(port).to.be.within(1, 65_535);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('does not hand out a port that is in use', async () => {
    const busy = createServer();
    const busyPort = await listenOnLoopback(busy);
    try {
      const ports = await Promise.all(Array.from({ length: 5 }, () => freePort()));
      expect(ports).to.not.include(busyPort);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});
