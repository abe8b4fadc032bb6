// The unary pipeline end to end: createTransport over real grpc-js clients, against real
// grpc-js servers on loopback ports that implement the generated StoreService with scripted
// behaviour (delays, failures). Timing is only asserted with wide bounds that hold by
// construction; the exact timing logic is covered with a ManualClock in unary-policy.test.ts.

import { expect } from 'chai';
import { Metadata, status, type ServerUnaryCall } from '@grpc/grpc-js';
import type { GetCellRequest, GetCellResponse, PutRequest } from '@shameless/proto';
import {
  CancelledError,
  ConflictError,
  DeadlineExceededError,
  InvalidArgumentError,
  NotFoundError,
  ResourceExhaustedError,
  UnavailableError,
  createTransport,
  type Transport,
  type TransportOptions,
} from '../../src/index.js';
import {
  cell,
  deadAddress,
  deadlineMs,
  deferred,
  metadataValue,
  startServer,
  statusError,
  within,
  type TestServer,
  GET_CELL,
  READ,
} from './support/servers.js';

const WRITE = { idempotent: true, hedgeable: false } as const;

// Request and response types come from the generated code: misuse does not compile.
export function typeChecks(transport: Transport): void {
  // @ts-expect-error a PutRequest is not a GetCellRequest
  void transport.unary('getCell', { model: 'm', values: Buffer.alloc(0), requestId: 'r' }, READ);
  // @ts-expect-error 'where' is a streaming method
  void transport.unary('where', {}, READ);
  // @ts-expect-error 'getCell' is not a streaming method
  void transport.serverStream('getCell', GET_CELL);
  const answer: Promise<GetCellResponse> = transport.unary('getCell', GET_CELL, READ);
  void answer;
}

describe('transport over real gRPC', function () {
  this.timeout(10_000);
  const servers: TestServer[] = [];
  const transports: Transport[] = [];

  const serve = async (handlers: Parameters<typeof startServer>[0]) => {
    const server = await startServer(handlers);
    servers.push(server);
    return server;
  };
  const connect = (endpoints: string[], options: Partial<TransportOptions> = {}) => {
    const transport = createTransport({
      endpoints,
      retry: { baseMs: 1, maxMs: 5 },
      hedge: false,
      ...options,
    });
    transports.push(transport);
    return transport;
  };

  afterEach(() => {
    for (const transport of transports.splice(0)) transport.close();
    for (const server of servers.splice(0)) server.stop();
  });

  it('answers a read with the generated response type', async () => {
    const server = await serve({
      getCell: (call, callback) => callback(null, { cell: cell(call.request.uuid) }),
    });
    const transport = connect([server.address]);
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('u-1');
    expect(response.cell?.body).to.deep.equal(Buffer.from([0x80]));
    expect(transport.stats()).to.include({ calls: 1, attempts: 1, retries: 0 });
  });

  it('retries UNAVAILABLE and sends the same request (same requestId) every time', async () => {
    const seen: PutRequest[] = [];
    const server = await serve({
      put: (call, callback) => {
        seen.push(call.request);
        if (seen.length < 3) callback(statusError(status.UNAVAILABLE, 'partition 1 is down'));
        else callback(null, { uuid: 'u-9', base: cell('u-9'), created: true, bodyOmitted: false });
      },
    });
    const transport = connect([server.address]);
    const request: PutRequest = {
      model: 'rate',
      values: Buffer.from([0x81, 0xa1, 0x61, 0x01]),
      requestId: 'req-42',
    };
    const response = await transport.unary('put', request, WRITE);
    expect(response).to.include({ uuid: 'u-9', created: true });
    expect(seen).to.have.length(3);
    for (const received of seen) {
      expect(received.requestId).to.equal('req-42');
      expect(received.values).to.deep.equal(request.values);
    }
    expect(transport.stats()).to.include({ attempts: 3, retries: 2, failures: 0 });
  });

  it('does not retry a call that is not idempotent', async () => {
    let calls = 0;
    const server = await serve({
      put: (_call, callback) => {
        calls++;
        callback(statusError(status.UNAVAILABLE, 'partition 1 is down'));
      },
    });
    const transport = connect([server.address]);
    const request: PutRequest = { model: 'rate', values: Buffer.from([0x80]), requestId: '' };
    const error = await transport
      .unary('put', request, { idempotent: false, hedgeable: false })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(UnavailableError);
    expect(calls).to.equal(1);
  });

  const definite = [
    [status.NOT_FOUND, NotFoundError, 'cell "ota" of u-1 has no version'],
    [status.INVALID_ARGUMENT, InvalidArgumentError, 'hotel_id is a field of index primary'],
    [status.ABORTED, ConflictError, 'expected ref_key 2, latest is 3'],
  ] as const;
  for (const [code, ErrorClass, details] of definite) {
    it(`does not retry ${status[code]}: ${ErrorClass.name} with the server's details`, async () => {
      let calls = 0;
      const server = await serve({
        getCell: (_call, callback) => {
          calls++;
          callback(statusError(code, details));
        },
      });
      const transport = connect([server.address]);
      const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ErrorClass);
      expect((error as InstanceType<typeof ErrorClass>).details).to.equal(details);
      expect((error as InstanceType<typeof ErrorClass>).retryable).to.equal(false);
      expect(calls).to.equal(1);
      expect(transport.stats()).to.include({ attempts: 1, retries: 0, failures: 1 });
    });
  }

  it('retries on another endpoint when one is down', async () => {
    const down = await deadAddress();
    const up = await serve({
      getCell: (_call, callback) => callback(null, { cell: cell('from-up') }),
    });
    const transport = connect([down, up.address]);
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('from-up');
    expect(transport.stats()).to.include({ attempts: 2, retries: 1 });
    // The down endpoint is now avoided: the next call goes straight to the live one.
    await transport.unary('getCell', GET_CELL, READ);
    expect(transport.stats()).to.include({ attempts: 3, retries: 1 });
  });

  it('attaches the metadata (an auth token) to every attempt', async () => {
    const tokens: (string | undefined)[] = [];
    const server = await serve({
      getCell: (call, callback) => {
        tokens.push(metadataValue(call.metadata, 'authorization'));
        if (tokens.length === 1) callback(statusError(status.UNAVAILABLE, 'try again'));
        else callback(null, { cell: cell('u-1') });
      },
    });
    const transport = connect([server.address], {
      metadata: { authorization: 'Bearer s3cret' },
    });
    await transport.unary('getCell', GET_CELL, READ);
    expect(tokens).to.deep.equal(['Bearer s3cret', 'Bearer s3cret']);
  });

  describe('deadline', () => {
    it('fails with DeadlineExceededError when the server is slower than the deadline', async () => {
      const cancelled = deferred();
      const server = await serve({
        getCell: (call) => call.on('cancelled', () => cancelled.resolve()),
      });
      const transport = connect([server.address]);
      const started = Date.now();
      const error = await transport
        .unary('getCell', GET_CELL, { ...READ, deadlineMs: 200 })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(DeadlineExceededError);
      expect(Date.now() - started).to.be.below(3000);
      await within(cancelled.promise, 3000, 'the server to see the call end');
    });

    it('gives each retry only the time left of the one overall deadline', async () => {
      const deadlines: number[] = [];
      const server = await serve({
        getCell: (call: ServerUnaryCall<GetCellRequest, GetCellResponse>, callback) => {
          deadlines.push(deadlineMs(call));
          if (deadlines.length === 1) {
            setTimeout(() => callback(statusError(status.UNAVAILABLE, 'slow failure')), 300);
          } else {
            callback(null, { cell: cell('u-1') });
          }
        },
      });
      const transport = connect([server.address]);
      const started = Date.now();
      await transport.unary('getCell', GET_CELL, { ...WRITE, deadlineMs: 2000 });
      expect(deadlines).to.have.length(2);
      // A fresh 2 s deadline for the retry would end >= 2300 ms after the start.
      for (const deadline of deadlines) expect(deadline - started).to.be.at.most(2000 + 100);
    });
  });

  describe('hedging', () => {
    it('hedges to the other server after the delay; the slow attempt is cancelled', async () => {
      const slowCancelled = deferred();
      let fastReceivedAt = 0;
      const slow = await serve({
        getCell: (call, callback) => {
          const timer = setTimeout(() => callback(null, { cell: cell('slow') }), 8000);
          call.on('cancelled', () => {
            clearTimeout(timer);
            slowCancelled.resolve();
          });
        },
      });
      const fast = await serve({
        getCell: (_call, callback) => {
          fastReceivedAt = Date.now();
          callback(null, { cell: cell('fast') });
        },
      });
      // A fresh transport picks the first endpoint first: the slow one.
      const transport = connect([slow.address, fast.address], { hedge: { delayMs: 50 } });
      const started = Date.now();
      const response = await transport.unary('getCell', GET_CELL, READ);
      expect(response.cell?.uuid).to.equal('fast');
      expect(fastReceivedAt - started).to.be.at.least(45); // not before the hedge delay
      await within(slowCancelled.promise, 3000, 'the slow attempt to be cancelled');
      expect(transport.stats()).to.include({ attempts: 2, hedges: 1, hedgesWon: 1 });
    });

    it('sends no hedge when the answer comes in time', async () => {
      let calls = 0;
      const server = await serve({
        getCell: (_call, callback) => {
          calls++;
          callback(null, { cell: cell('u-1') });
        },
      });
      const transport = connect([server.address], { hedge: { delayMs: 2000 } });
      for (let i = 0; i < 5; i++) await transport.unary('getCell', GET_CELL, READ);
      expect(calls).to.equal(5);
      expect(transport.stats()).to.include({ attempts: 5, hedges: 0 });
    });

    it('never hedges writes', async () => {
      const cancelled = deferred();
      let calls = 0;
      const server = await serve({
        put: (call, callback) => {
          calls++;
          const timer = setTimeout(
            () =>
              callback(null, { uuid: 'u', base: cell('u'), created: false, bodyOmitted: false }),
            150,
          );
          call.on('cancelled', () => {
            clearTimeout(timer);
            cancelled.resolve();
          });
        },
      });
      const transport = connect([server.address], { hedge: { delayMs: 10 } });
      const request: PutRequest = { model: 'rate', values: Buffer.from([0x80]), requestId: 'r' };
      await transport.unary('put', request, WRITE);
      expect(calls).to.equal(1);
      expect(transport.stats().hedges).to.equal(0);
    });
  });

  it("honours the server's grpc-retry-pushback-ms trailer on RESOURCE_EXHAUSTED", async () => {
    // The n-th call's pushback hint, or an answer when there is none.
    const hints = ['60000', '30'];
    let calls = 0;
    const server = await serve({
      getCell: (_call, callback) => {
        const hint = hints[calls++];
        if (hint === undefined) {
          callback(null, { cell: cell('u-1') });
          return;
        }
        const trailer = new Metadata();
        trailer.set('grpc-retry-pushback-ms', hint);
        const overloaded = statusError(status.RESOURCE_EXHAUSTED, 'over the in-flight limit');
        callback(Object.assign(overloaded, { metadata: trailer }));
      },
    });
    const transport = connect([server.address]);
    // A hint past the deadline: no retry (the backoff alone, 1 to 5 ms, would have retried).
    const error = await transport
      .unary('getCell', GET_CELL, { ...READ, deadlineMs: 2000 })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ResourceExhaustedError);
    expect(calls).to.equal(1);
    // A hint of 30 ms: retried after it.
    const response = await transport.unary('getCell', GET_CELL, READ);
    expect(response.cell?.uuid).to.equal('u-1');
    expect(calls).to.equal(3);
    expect(transport.stats()).to.include({ attempts: 3, retries: 1 });
  });

  it('does not retry when the pushback hint is negative or malformed: the server asks for none', async () => {
    let calls = 0;
    const server = await serve({
      getCell: (_call, callback) => {
        calls++;
        const trailer = new Metadata();
        trailer.set('grpc-retry-pushback-ms', calls === 1 ? '-1' : 'later');
        const overloaded = statusError(status.RESOURCE_EXHAUSTED, 'shedding load');
        callback(Object.assign(overloaded, { metadata: trailer }));
      },
    });
    const transport = connect([server.address]);
    for (const expected of [1, 2]) {
      const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ResourceExhaustedError);
      expect(calls).to.equal(expected);
    }
    expect(transport.stats()).to.include({ attempts: 2, retries: 0 });
  });

  describe('budget', () => {
    it('stops retrying once the budget is spent: fail fast when every endpoint is down', async () => {
      const transport = connect([await deadAddress(), await deadAddress()], {
        retry: { maxAttempts: 4, baseMs: 1, maxMs: 2 },
        budget: { maxTokens: 10, tokenRatio: 0.1 },
      });
      const first = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(first).to.be.instanceOf(UnavailableError);
      // 4 attempts, 4 transient failures: 10 -> 6 tokens, retries still allowed (6 > 5).
      expect(transport.stats()).to.include({ attempts: 4, retries: 3, budgetTokens: 6 });

      // 6 -> 5: no retry (5 is not > 5). From now on every call is a single attempt.
      for (let i = 0; i < 3; i++) {
        const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(UnavailableError);
      }
      expect(transport.stats()).to.include({
        attempts: 7,
        retries: 3,
        budgetRefusals: 3,
        budgetTokens: 3,
        failures: 4,
      });
    });

    it('a closed server is UNAVAILABLE and retries are bounded by the budget', async () => {
      const server = await serve({
        getCell: (_call, callback) => callback(null, { cell: cell('u-1') }),
      });
      // Failing at once, not waiting for the server to come back (the default): this counts
      // the retries a live-but-failing endpoint gets.
      const transport = connect([server.address], {
        retry: { maxAttempts: 10, baseMs: 1, maxMs: 2 },
        budget: { maxTokens: 10, tokenRatio: 0.1 },
        waitForConnection: false,
      });
      await transport.unary('getCell', GET_CELL, READ);
      server.stop();
      const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(UnavailableError);
      // 10 tokens (full, a success cannot add more): failures 9, 8, 7, 6 are each followed by
      // a retry, 5 is not: 5 attempts for this call although maxAttempts is 10.
      expect(transport.stats()).to.include({ attempts: 6, retries: 4, budgetRefusals: 1 });
    });

    it('hedges are paid from the same budget and stop when it runs low', async () => {
      // Two servers, both slow: every call outlives the hedge delay, and its hedge goes to the
      // other one.
      const slowGetCell: Parameters<typeof startServer>[0] = {
        getCell: (call, callback) => {
          const timer = setTimeout(() => callback(null, { cell: cell('u-1') }), 60);
          call.on('cancelled', () => clearTimeout(timer));
        },
      };
      const servers = [await serve(slowGetCell), await serve(slowGetCell)];
      const transport = connect(
        servers.map((server) => server.address),
        {
          hedge: { delayMs: 5 },
          budget: { maxTokens: 4, tokenRatio: 0.1 },
        },
      );
      for (let i = 0; i < 5; i++) await transport.unary('getCell', GET_CELL, READ);
      // Every call outlives the hedge delay. Hedges cost 1 and each call's answer earns 0.1:
      // 4 -> 3.1 -> 2.2 -> 1.3 (three hedges sent); at 1.3 (not > 2) the rest are refused.
      expect(transport.stats()).to.include({ hedges: 3, budgetRefusals: 2, budgetTokens: 1.5 });
    });
  });

  describe('cancellation', () => {
    it('an AbortSignal cancels the call on the server', async () => {
      const received = deferred();
      const cancelled = deferred();
      const server = await serve({
        getCell: (call) => {
          received.resolve();
          call.on('cancelled', () => cancelled.resolve());
        },
      });
      const transport = connect([server.address]);
      const controller = new AbortController();
      const pending = transport
        .unary('getCell', GET_CELL, { ...READ, signal: controller.signal })
        .catch((e: unknown) => e);
      await within(received.promise, 3000, 'the call to arrive');
      controller.abort();
      expect(await pending).to.be.instanceOf(CancelledError);
      await within(cancelled.promise, 3000, 'the server to see the cancellation');
    });

    it('rejects calls after close()', async () => {
      const server = await serve({});
      const transport = connect([server.address]);
      transport.close();
      const error = await transport.unary('getCell', GET_CELL, READ).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(CancelledError);
    });
  });
});
