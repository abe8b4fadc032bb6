// Adapters from grpc-js handler signatures to async functions: each call gets its context, runs
// through the middleware chain, and has its errors mapped once; server streams honour
// backpressure and cancellation.
import {
  Metadata,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
} from '@grpc/grpc-js';
import type { Logger } from '../../engine/base/logger.js';
import type { CallContext, CallKind } from '../call/callContext.js';
import { CallCancellation } from '../call/cancellation.js';
import type { Deliver, MiddlewareChain } from '../call/middleware.js';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import { messageBytes } from '../call/messageSize.js';
import { malformation } from '../call/requestDecoding.js';
import { SERVER_SHUTDOWN, SHUTDOWN_STATUS, abortedByShutdown } from '../call/serverShutdown.js';
import { toServiceError } from '../call/statusMapping.js';

/** Every open server stream, so that shutdown can end them (a follow stream never ends by itself). */
export class OpenStreams {
  private readonly controllers = new Set<AbortController>();

  open(): AbortController {
    const controller = new AbortController();
    this.controllers.add(controller);
    return controller;
  }

  close(controller: AbortController): void {
    this.controllers.delete(controller);
  }

  abortAll(): void {
    for (const controller of this.controllers) controller.abort(SERVER_SHUTDOWN);
  }

  get size(): number {
    return this.controllers.size;
  }
}

/** A unary method's work: its response to a well-formed request, or the error it fails with. */
export type UnaryHandle<Req, Res> = (request: Req, context: CallContext) => Promise<Res>;

/** What a server-streaming method's calls are like, besides what every stream is. */
export interface StreamTraits {
  /** See CallContext.longLived. */
  readonly longLived?: boolean;
  /** Bytes its producer may hold read ahead of the messages it has yielded. */
  readonly readAheadBytes?: number;
}

export interface HandlerFactory {
  /**
   * Runs one call of a unary method through the middleware chain, under its deadline: its
   * response, or the error it failed with (unmapped). A unary RPC and a call over a Pipeline
   * both run this way. `deliver` sends the response from inside the chain, so that its layers
   * count the call (admission its bytes) until the response is sent. By promises when every
   * layer has a unary form (middleware.ts), else as a stream of one message.
   */
  run<Req, Res>(
    method: string,
    handle: UnaryHandle<Req, Res>,
    request: Req,
    context: CallContext,
    deliver: Deliver<Res>,
  ): Promise<Res>;
  unary<Req, Res>(
    method: string,
    handle: UnaryHandle<Req, Res>,
  ): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;
  serverStream<Req, Res>(
    method: string,
    produce: (request: Req, context: CallContext) => AsyncIterable<Res>,
    traits?: StreamTraits,
  ): (call: ServerWritableStream<Req, Res>) => void;
  /**
   * A stream both ways whose first message is its request: the chain sees that one (its
   * layers check and count the call by it), and `produce` reads the messages after it.
   */
  bidiStream<Req, Res>(
    method: string,
    produce: (first: Req, rest: AsyncIterable<Req>, context: CallContext) => AsyncIterable<Res>,
    traits?: StreamTraits,
  ): (call: ServerDuplexStream<Req, Res>) => void;
}

export function createHandlerFactory(
  logger: Logger,
  streams: OpenStreams,
  middleware: MiddlewareChain,
  /** Told of every call as it starts (the partition probe rests while there are none). */
  onCall: () => void = () => undefined,
): HandlerFactory {
  const run = <Req, Res>(
    method: string,
    handle: UnaryHandle<Req, Res>,
    request: Req,
    context: CallContext,
    deliver: Deliver<Res>,
  ): Promise<Res> => {
    onCall();
    if (middleware.unary) {
      const handleAndDeliver = async (
        wellFormed: Req,
        innerContext: CallContext,
        innerDeliver: Deliver<Res>,
      ) => {
        requireWellFormed(wellFormed, method);
        const response = await handle(wellFormed, innerContext);
        await innerDeliver(response);
        return response;
      };
      return middleware.unary(request, context, handleAndDeliver, deliver);
    }
    const asStream = async function* (wellFormed: Req, innerContext: CallContext) {
      requireWellFormed(wellFormed, method);
      yield await handle(wellFormed, innerContext);
    };
    return single(middleware.stream(request, context, asStream), deliver);
  };
  return {
    run,

    unary<Req, Res>(method: string, handle: UnaryHandle<Req, Res>) {
      return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
        const cancellation = new CallCancellation();
        const onCancelled = () => cancellation.abort();
        call.once('cancelled', onCancelled);
        const context = callContext(call, method, 'unary', cancellation, {});
        // The response is sent from inside the chain, so that admission holds the call and its
        // bytes until the client has taken them: a client that does not read holds its share
        // of --max-in-flight-bytes, not memory beyond it.
        const deliver = (response: Res) => {
          call.off('cancelled', onCancelled);
          return sent(call, () => callback(null, response, context.trailer));
        };
        run(method, handle, call.request, context, deliver).catch((error: unknown) => {
          call.off('cancelled', onCancelled);
          callback(toServiceError(error, method, logger));
        });
      };
    },

    serverStream<Req, Res>(
      method: string,
      produceWellFormed: (request: Req, context: CallContext) => AsyncIterable<Res>,
      traits: StreamTraits = {},
    ) {
      return (call: ServerWritableStream<Req, Res>) =>
        streamResponses(
          call,
          method,
          'serverStream',
          traits,
          async () => call.request,
          produceWellFormed,
        );
    },

    bidiStream<Req, Res>(
      method: string,
      produce: (first: Req, rest: AsyncIterable<Req>, context: CallContext) => AsyncIterable<Res>,
      traits: StreamTraits = {},
    ) {
      return (call: ServerDuplexStream<Req, Res>) => {
        const incoming = new IncomingMessages<Req>(call);
        return streamResponses(
          call,
          method,
          'bidiStream',
          traits,
          (signal) => incoming.first(signal),
          (first, context) => produce(first, incoming, context),
        );
      };
    },
  };

  /** Runs a stream's producer through the chain and writes its messages, honouring backpressure. */
  function streamResponses<Req, Res>(
    call: ServerWritableStream<Req, Res> | ServerDuplexStream<Req, Res>,
    method: string,
    kind: CallKind,
    traits: StreamTraits,
    request: (signal: AbortSignal) => Promise<Req | undefined>,
    produceWellFormed: (request: Req, context: CallContext) => AsyncIterable<Res>,
  ): void {
    const produce = async function* (wellFormed: Req, context: CallContext) {
      requireWellFormed(wellFormed, method);
      yield* produceWellFormed(wellFormed, context);
    };
    onCall();
    const controller = streams.open();
    const onCancelled = () => controller.abort();
    call.on('cancelled', onCancelled);
    const context = callContext(
      call,
      method,
      kind,
      new CallCancellation(controller.signal),
      traits,
    );
    const buffer = new StreamBuffer(call);
    void (async () => {
      try {
        const first = await request(controller.signal);
        if (first === undefined) {
          if (controller.signal.aborted) return;
          throw new InvalidArgumentError('request', 'the stream ended before its first message');
        }
        for await (const message of middleware.stream(first, context, produce)) {
          if (controller.signal.aborted) break;
          await buffer.write(message, controller.signal);
        }
        if (call.cancelled) return;
        if (abortedByShutdown(controller.signal)) call.emit('error', SHUTDOWN_STATUS);
        else call.end(context.trailer);
      } catch (error) {
        // grpc-js turns an 'error' event into the call's final status. A stream that
        // shutdown cut short ends as such, whatever its work failed with meanwhile (a read
        // its signal left unsent).
        if (call.cancelled) return;
        if (abortedByShutdown(controller.signal)) call.emit('error', SHUTDOWN_STATUS);
        else call.emit('error', toServiceError(error, method, logger));
      } finally {
        call.off('cancelled', onCancelled);
        streams.close(controller);
      }
    })();
  }
}

/** Layers see a malformed request as any other; the handler refuses it. */
function requireWellFormed(request: unknown, method: string): void {
  const problem = malformation(request);
  if (problem !== undefined) {
    throw new InvalidArgumentError(
      'request',
      `is not a valid ${method}Request protobuf message (${problem})`,
    );
  }
}

function callContext(
  call:
    | ServerUnaryCall<unknown, unknown>
    | ServerWritableStream<unknown, unknown>
    | ServerDuplexStream<unknown, unknown>,
  method: string,
  kind: CallKind,
  cancellation: CallCancellation,
  traits: StreamTraits,
): CallContext {
  const deadline = call.getDeadline();
  return {
    method,
    kind,
    metadata: call.metadata,
    peer: call.getPeer(),
    deadline: typeof deadline === 'number' ? deadline : deadline.getTime(),
    cancellation,
    longLived: traits.longLived ?? false,
    bufferBytes: kind === 'unary' ? 0 : STREAM_BUFFER_BYTES + (traits.readAheadBytes ?? 0),
    trailer: new Metadata(),
  };
}

/**
 * The one message of a unary call's chain, handed to `deliver` while the chain still holds it;
 * a chain that yields none or more is a bug.
 */
async function single<Res>(messages: AsyncIterable<Res>, deliver: Deliver<Res>): Promise<Res> {
  let response: { value: Res } | undefined;
  for await (const message of messages) {
    if (response) throw new Error('a unary handler answered more than once');
    response = { value: message };
    await deliver(message);
  }
  if (!response) throw new Error('a unary handler answered nothing');
  return response.value;
}

/**
 * Sends a unary call's response and resolves once it is gone: taken by the client (grpc-js
 * sends the status only after the message's write completes, which waits for the client's
 * flow-control window), or the call ended otherwise. grpc-js emits 'cancelled' on a unary
 * call once its status is out, and on a real cancel, so the one event covers both.
 */
function sent(call: ServerUnaryCall<unknown, unknown>, send: () => void): Promise<void> {
  if (call.cancelled) {
    send();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    call.once('cancelled', () => resolve());
    send();
  });
}

/**
 * Bytes of a stream's messages that grpc-js may hold unsent, besides the one being written,
 * before the handler stops producing more. grpc-js's own bound counts messages (16, its
 * object-mode Writable's highWaterMark), not bytes: 16 large messages per stream that a client
 * does not read would be held. A message is unsent until HTTP/2 has handed it to the socket,
 * which waits for the client's flow-control window. Admission reserves this much for every
 * server stream, for as long as it is open: what a client that does not read makes it hold.
 */
const STREAM_BUFFER_BYTES = 512 * 1024;

/** Writes a stream's messages, waiting while the client has not taken enough of them. */
class StreamBuffer {
  private unsentBytes = 0;
  private flushed: (() => void) | undefined;

  constructor(
    private readonly call:
      ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  ) {}

  async write(message: unknown, signal: AbortSignal): Promise<void> {
    const size = messageBytes(message);
    this.unsentBytes += size;
    const accepted = this.call.write(message, () => {
      this.unsentBytes -= size;
      this.flushed?.();
    });
    if (!accepted) await drained(this.call, signal);
    while (this.unsentBytes > STREAM_BUFFER_BYTES && !signal.aborted && !this.call.cancelled) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.flushed = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.flushed = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

function drained(
  call: ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Messages a client queues before the stream stops reading it (its flow control then holds it). */
const INCOMING_HIGH_WATER = 256;

/**
 * A stream's messages from the client, in order, read as they come: its first (the request),
 * then the rest as an async iterable that ends when the client half-closes or the call ends.
 */
class IncomingMessages<Req> implements AsyncIterable<Req> {
  private readonly queue: Req[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  constructor(private readonly call: ServerDuplexStream<Req, unknown>) {
    call.on('data', (message: Req) => {
      this.queue.push(message);
      if (this.queue.length >= INCOMING_HIGH_WATER) call.pause();
      this.wake?.();
    });
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    call.on('end', end);
    call.on('error', end);
    call.on('cancelled', end);
  }

  /** The first message, or undefined when the stream ended (or `signal` fired) before one. */
  async first(signal: AbortSignal): Promise<Req | undefined> {
    const next = await this.next(signal);
    return next.done ? undefined : next.value;
  }

  [Symbol.asyncIterator](): AsyncIterator<Req> {
    return { next: () => this.next() };
  }

  private async next(signal?: AbortSignal): Promise<IteratorResult<Req>> {
    for (;;) {
      const message = this.queue.shift();
      if (message !== undefined) {
        if (this.queue.length < INCOMING_HIGH_WATER / 2 && this.call.isPaused()) this.call.resume();
        return { value: message, done: false };
      }
      if (this.ended || signal?.aborted) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wake = undefined;
          signal?.removeEventListener('abort', done);
          resolve();
        };
        this.wake = done;
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }
}
