// Bidirectional calls end to end (`Transport.bidiStream`, the Consume RPC's way): createTransport
// over real grpc-js clients against real grpc-js servers on loopback ports with a scripted
// Consume handler.

import { expect } from 'chai';
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import type { ConsumeRequest, ConsumeResponse } from '@shameless/proto';
import { CancelledError, ConflictError, NotFoundError, UnavailableError } from '../../src/index.js';
import {
  deferred,
  metadataValue,
  serversAndTransports,
  statusError,
  within,
} from './support/servers.js';

type ConsumeCall = ServerDuplexStream<ConsumeRequest, ConsumeResponse>;

const join = (memberId: string): ConsumeRequest => ({
  message: {
    $case: 'join',
    join: {
      model: 'rate',
      group: 'billing',
      memberId,
      from: 0,
      cells: [],
      maxInFlight: 0,
      perShardInFlight: 0,
      maxDeliveries: 0,
      sessionTimeoutMs: 0,
    },
  },
});
const heartbeat: ConsumeRequest = { message: { $case: 'heartbeat', heartbeat: {} } };
const joined = (memberId: string): ConsumeResponse => ({
  message: {
    $case: 'joined',
    joined: { memberId, sessionTimeoutMs: 1000, heartbeatIntervalMs: 250 },
  },
});

/** Requests handed to the transport one at a time, as a member's answers are. */
class Requests implements AsyncIterableIterator<ConsumeRequest> {
  readonly #queue: ConsumeRequest[] = [];
  #wake: ((result: IteratorResult<ConsumeRequest>) => void) | undefined;
  #ended = false;
  returned = false;

  push(request: ConsumeRequest): void {
    const wake = this.#wake;
    this.#wake = undefined;
    if (wake) wake({ value: request, done: false });
    else this.#queue.push(request);
  }

  end(): void {
    this.#ended = true;
    this.#wake?.({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<ConsumeRequest>> {
    const request = this.#queue.shift();
    if (request !== undefined) return Promise.resolve({ value: request, done: false });
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#wake = resolve));
  }

  return(): Promise<IteratorResult<ConsumeRequest>> {
    this.returned = true;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

describe('transport: bidirectional streams', function () {
  const { serve, connect } = serversAndTransports();

  it('writes the requests as they come and hands out the answers; their end half-closes', async () => {
    const received: string[] = [];
    const halfClosed = deferred();
    const server = await serve({
      consume: (call: ConsumeCall) => {
        call.on('data', (request: ConsumeRequest) => {
          received.push(request.message?.$case ?? '?');
          if (request.message?.$case === 'join') call.write(joined(request.message.join.memberId));
        });
        call.on('end', () => {
          halfClosed.resolve();
          call.end();
        });
      },
    });
    const transport = connect([server.address]);
    const requests = new Requests();
    requests.push(join('m-1'));
    const answers = transport.bidiStream('consume', requests, { deadlineMs: Infinity });
    const first = await answers.next();
    expect(first.value?.message).to.deep.include({ $case: 'joined' });
    requests.push(heartbeat);
    requests.end();
    await within(halfClosed.promise, 2000, 'the half-close');
    expect((await answers.next()).done).to.equal(true);
    expect(received).to.deep.equal(['join', 'heartbeat']);
  });

  it('carries the token and sends no deadline when asked for none', async () => {
    const seen = deferred<{ token: string | undefined; deadline: unknown }>();
    const server = await serve({
      consume: (call: ConsumeCall) => {
        seen.resolve({
          token: metadataValue(call.metadata, 'authorization'),
          deadline: call.getDeadline(),
        });
        call.end();
      },
    });
    const transport = connect([server.address], { token: 'reader-token' });
    const requests = new Requests();
    requests.push(join('m-1'));
    for await (const answer of transport.bidiStream('consume', requests, {
      deadlineMs: Infinity,
    })) {
      expect.fail(`no answer expected, got ${answer.message?.$case}`);
    }
    const { token, deadline } = await seen.promise;
    expect(token).to.equal('Bearer reader-token');
    expect(deadline).to.equal(Infinity);
  });

  it('a status ends the iteration with its typed error, after one attempt (never retried)', async () => {
    let calls = 0;
    const server = await serve({
      consume: (call: ConsumeCall) => {
        calls++;
        call.once('data', () => {
          call.write(joined('m-1'));
          call.emit('error', statusError(status.UNAVAILABLE, 'the server is shutting down'));
        });
      },
    });
    const transport = connect([server.address]);
    const requests = new Requests();
    requests.push(join('m-1'));
    const answers: string[] = [];
    let failure: unknown;
    try {
      for await (const answer of transport.bidiStream('consume', requests, {
        deadlineMs: Infinity,
      })) {
        answers.push(answer.message?.$case ?? '?');
      }
    } catch (error) {
      failure = error;
    }
    expect(answers).to.deep.equal(['joined']);
    expect(failure).to.be.instanceOf(UnavailableError);
    expect(calls).to.equal(1);
    // The call is over: the transport gave the request iterator back.
    expect(requests.returned).to.equal(true);

    const refusing = await serve({
      consume: (call: ConsumeCall) => {
        call.once('data', () =>
          call.emit('error', statusError(status.NOT_FOUND, 'model rate is not defined')),
        );
      },
    });
    const again = new Requests();
    again.push(join('m-1'));
    const refusal = await consumeAll(connect([refusing.address]), again);
    expect(refusal).to.be.instanceOf(NotFoundError);
    const ended = await serve({
      consume: (call: ConsumeCall) =>
        call.once('data', () =>
          call.emit('error', statusError(status.ABORTED, 'another stream of this member joined')),
        ),
    });
    const third = new Requests();
    third.push(join('m-1'));
    expect(await consumeAll(connect([ended.address]), third)).to.be.instanceOf(ConflictError);
  });

  it('an abort, or closing the transport, cancels the call on the server', async () => {
    const cancelled: string[] = [];
    const server = await serve({
      consume: (call: ConsumeCall) => {
        call.on('cancelled', () => cancelled.push('cancelled'));
        call.once('data', (request: ConsumeRequest) => {
          if (request.message?.$case === 'join') call.write(joined(request.message.join.memberId));
        });
      },
    });
    const transport = connect([server.address]);
    const controller = new AbortController();
    const requests = new Requests();
    requests.push(join('m-1'));
    const answers = transport.bidiStream('consume', requests, {
      deadlineMs: Infinity,
      signal: controller.signal,
    });
    await answers.next();
    controller.abort();
    const aborted = await answers.next().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(aborted).to.be.instanceOf(CancelledError);

    const other = new Requests();
    other.push(join('m-2'));
    const open = transport.bidiStream('consume', other, { deadlineMs: Infinity });
    await open.next();
    transport.close();
    const closed = await open.next().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(closed).to.be.instanceOf(CancelledError);
    expect((closed as Error).message).to.match(/transport is closed/);
    await within(
      (async () => {
        while (cancelled.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      })(),
      2000,
      'both calls cancelled on the server',
    );
  });
});

async function consumeAll(
  transport: ReturnType<ReturnType<typeof serversAndTransports>['connect']>,
  requests: Requests,
): Promise<unknown> {
  try {
    for await (const answer of transport.bidiStream('consume', requests, {
      deadlineMs: Infinity,
    })) {
      void answer;
    }
  } catch (error) {
    return error;
  }
  return undefined;
}
