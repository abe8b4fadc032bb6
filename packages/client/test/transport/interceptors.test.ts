// connect({ interceptors }): a user's middleware runs for every attempt (retries and hedges
// included), sees which attempt and endpoint it is, and can add metadata the server receives.
// Real grpc-js servers on loopback.

import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { CancelledError, DeadlineExceededError, type ClientMiddleware } from '../../src/index.js';
import {
  cell,
  deferred,
  metadataValue,
  pause,
  serversAndTransports,
  statusError,
  within,
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

  /** A server whose getCell never answers; `cancelled` resolves when it sees the call cancelled. */
  const silentServer = async () => {
    const cancelled = deferred();
    const server = await serve({ getCell: (call) => call.on('cancelled', cancelled.resolve) });
    return { address: server.address, cancelled: cancelled.promise };
  };

  /** The error a call fails with (undefined if it answers). */
  const failureOf = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (failed: unknown) => failed,
    );

  it("see each attempt's AbortSignal, aborted with the call's error when its deadline passes", async () => {
    const server = await silentServer();
    const signals: (AbortSignal | undefined)[] = [];
    const watching: ClientMiddleware = async function* (call, options, next) {
      signals.push(options.signal);
      yield* next(call, options);
    };
    const transport = connect([server.address], { interceptors: [watching] });
    const error = await failureOf(
      transport.unary('getCell', GET_CELL, { ...READ, deadlineMs: 150 }),
    );
    expect(error).to.be.instanceOf(DeadlineExceededError);
    expect(signals).to.have.length(1);
    expect(signals[0]).to.be.instanceOf(AbortSignal);
    expect(signals[0]?.aborted).to.equal(true);
    expect(signals[0]?.reason).to.equal(error);
    await within(server.cancelled, 3000, 'the server to see the call cancelled');
  });

  it('cancel the attempt with a signal of their own passed on in its place', async () => {
    const server = await silentServer();
    const gaveUp = new CancelledError('getCell: the interceptor gave up');
    const impatient: ClientMiddleware = async function* (call, options, next) {
      const own = new AbortController();
      setTimeout(() => own.abort(gaveUp), 100);
      yield* next(call, { ...options, signal: own.signal });
    };
    const transport = connect([server.address], { interceptors: [impatient] });
    const started = performance.now();
    const error = await failureOf(
      transport.unary('getCell', GET_CELL, { ...READ, deadlineMs: 5000 }),
    );
    expect(error).to.equal(gaveUp);
    expect(performance.now() - started).to.be.lessThan(2000);
    await within(server.cancelled, 3000, 'the server to see the call cancelled');
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
