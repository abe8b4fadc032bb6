// connect({ interceptors }): a user's middleware runs for every attempt (retries and hedges
// included), sees which attempt and endpoint it is, and can add metadata the server receives.
// Real grpc-js servers on loopback.

import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import type { ClientMiddleware } from '../../src/index.js';
import {
  cell,
  metadataValue,
  pause,
  serversAndTransports,
  statusError,
  GET_CELL,
  READ,
} from './support/servers.js';

interface Seen {
  readonly kind: string | undefined;
  readonly index: number | undefined;
  readonly address: string | undefined;
}

/** An interceptor that records each attempt and tags it with `x-attempt: <index>`. */
function recordingInterceptor(): { interceptor: ClientMiddleware; seen: Seen[] } {
  const seen: Seen[] = [];
  const interceptor: ClientMiddleware = async function* (call, options, next) {
    const { attempt, endpoint } = options;
    seen.push({ kind: attempt?.kind, index: attempt?.index, address: endpoint?.address });
    const metadata = { ...options.metadata, 'x-attempt': String(attempt?.index) };
    yield* next(call, { ...options, metadata });
  };
  return { interceptor, seen };
}

describe('interceptors', function () {
  this.timeout(10_000);
  const { serve, connect } = serversAndTransports({ retry: { baseMs: 1, maxMs: 5 } });

  it('see every retry, and what they add reaches the server', async () => {
    const tags: (string | undefined)[] = [];
    const server = await serve({
      getCell: (call, callback) => {
        tags.push(metadataValue(call.metadata, 'x-attempt'));
        if (tags.length < 3) callback(statusError(status.UNAVAILABLE, 'partition 0 is down'));
        else callback(null, { cell: cell('u-1') });
      },
    });
    const { interceptor, seen } = recordingInterceptor();
    const transport = connect([server.address], { hedge: false, interceptors: [interceptor] });
    await transport.unary('getCell', GET_CELL, READ);
    expect(seen.map((attempt) => [attempt.kind, attempt.index])).to.deep.equal([
      ['initial', 0],
      ['retry', 1],
      ['retry', 2],
    ]);
    expect(seen.every((attempt) => attempt.address === server.address)).to.equal(true);
    expect(tags).to.deep.equal(['0', '1', '2']);
  });

  it('see every hedge, on the endpoint it went to', async () => {
    const slow = await serve({
      getCell: (_call, callback) => {
        void pause(2000).then(() => callback(null, { cell: cell('slow') }));
      },
    });
    const fast = await serve({
      getCell: (_call, callback) => callback(null, { cell: cell('fast') }),
    });
    const { interceptor, seen } = recordingInterceptor();
    // The slow server first: round robin sends the first attempt there.
    const transport = connect([slow.address, fast.address], {
      hedge: { delayMs: 20 },
      interceptors: [interceptor],
    });
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('fast');
    expect(seen).to.deep.equal([
      { kind: 'initial', index: 0, address: slow.address },
      { kind: 'hedge', index: 1, address: fast.address },
    ]);
  });

  it('run in the order given, inside the transport', async () => {
    const order: string[] = [];
    const named = (name: string): ClientMiddleware =>
      async function* (call, options, next) {
        order.push(name);
        yield* next(call, options);
      };
    const server = await serve({
      getCell: (_call, callback) => callback(null, { cell: cell('u-1') }),
    });
    const transport = connect([server.address], { interceptors: [named('a'), named('b')] });
    await transport.unary('getCell', GET_CELL, READ);
    expect(order).to.deep.equal(['a', 'b']);
  });
});
