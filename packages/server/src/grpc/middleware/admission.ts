// Admission control: a layer that keeps the calls in progress, the long-lived streams open and
// the bytes they hold under configured bounds. A call beyond them is refused at once with
// RESOURCE_EXHAUSTED and a `grpc-retry-pushback-ms` trailer (the SDK waits that long before
// retrying) rather than queued, so memory is bounded by configuration and not by how many
// clients call at once.
//
// Long-lived streams (Each: a log read to its end, or followed until cancelled) count against
// a budget of their own, not the calls': their clients keep them open as long as they like, so
// in a shared budget enough idle followers would leave every short call refused on a server
// that is doing nothing. A Pipeline stream is not admitted as such: each of its calls is
// admitted as a call, its request and its answer counted until the answer is sent, and an idle
// one holds nothing this layer counts.
//
// What a call will hold is unknown when it arrives, so each call reserves the size of the
// largest message calls of its method answered lately, on average (plus its request's size on
// the wire); the reservation becomes the actual size of each message as it is produced, and is
// released when the call ends. Until a method has answered once, its unary calls go one at a
// time (see responseSizes.ts): the first reserves an even share of the bytes allowed
// (maxInFlightBytes / maxConcurrentCalls) and the others wait for its answer, then reserve what
// it measured. A stream's first call does not make others wait. Besides its latest message, a
// stream holds what its handler buffers, which depends on how the handler buffers rather than
// on what its method answered, and which the call's context states (`bufferBytes`: messages
// not yet sent, and for Each the cells read ahead). A stream reserves that for as long as it is
// open, since a client that stops reading can make it hold all of it at any moment.
import { Metadata, status } from '@grpc/grpc-js';
import type { CallContext } from '../call/callContext.js';
import { type NextHandler, type ServerMiddleware, middlewareLayer } from '../call/middleware.js';
import { messageBytes } from '../call/messageSize.js';
import { requestWireBytes } from '../call/requestDecoding.js';
import { ResponseSizes } from '../call/responseSizes.js';
import { StatusError } from '../call/statusError.js';

export interface AdmissionLimits {
  /** Calls in progress at once: unary calls (a Pipeline's included) and short streams (Where). */
  readonly maxConcurrentCalls: number;
  /** Long-lived streams (see CallContext.longLived) open at once. */
  readonly maxOpenStreams: number;
  /**
   * Bytes that calls and streams may hold at once: requests, responses not yet sent and what
   * streams buffer besides.
   */
  readonly maxInFlightBytes: number;
  /** The delay a refused call is told to wait before retrying. */
  readonly retryPushbackMs: number;
}

/** How much a response message holds in memory; see messageSize.ts. */
export type MessageSizer = (message: unknown) => number;

/**
 * A response is in memory about twice: as the message (and the rows it was made of) and as
 * its encoding on its way to the socket.
 */
const COPIES_HELD = 2;

/** A call counted in: each message it produces, then its end. */
interface HeldCall {
  produced(message: unknown): void;
  release(): void;
}

export class Admission {
  private calls = 0;
  private streams = 0;
  private bytes = 0;
  private readonly sizes = new ResponseSizes();

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly sizeOf: MessageSizer = messageBytes,
  ) {}

  /** Calls in progress, long-lived streams open and the bytes they hold, right now. */
  get inFlight(): { calls: number; streams: number; bytes: number } {
    return { calls: this.calls, streams: this.streams, bytes: this.bytes };
  }

  /** The layer: each call admitted or refused, and counted until it ends. */
  readonly layer: ServerMiddleware = middlewareLayer(
    (request, context, next) => this.admitStream(request, context, next),
    async (request, context, next, deliver) => {
      const held = await this.admit(request, context);
      try {
        return await next(request, context, (response) => {
          held.produced(response);
          return deliver(response);
        });
      } finally {
        held.release();
      }
    },
  );

  private async *admitStream<Req, Res>(
    request: Req,
    context: CallContext,
    next: NextHandler<Req, Res>,
  ): AsyncGenerator<Res> {
    const held = await this.admit(request, context);
    try {
      for await (const message of next(request, context)) {
        held.produced(message);
        yield message;
      }
    } finally {
      held.release();
    }
  }

  /**
   * Counts the call in, or refuses it (RESOURCE_EXHAUSTED): its request from the start, and
   * what its answer is likely to hold, until `release`.
   */
  private async admit(request: unknown, context: CallContext): Promise<HeldCall> {
    const { longLived, bufferBytes } = context;
    if (longLived) this.refuseBeyondStreams();
    else this.refuseBeyondCalls();
    // The request is held from the start, waiting included.
    const requestBytes = requestWireBytes(request);
    let held = requestBytes;
    if (longLived) this.streams += 1;
    else this.calls += 1;
    this.bytes += held;
    let pilot = false;
    let largest: number | undefined;
    const release = () => {
      if (longLived) this.streams -= 1;
      else this.calls -= 1;
      this.bytes -= held;
      this.sizes.record(context.method, largest, pilot);
    };
    try {
      const measure =
        context.kind === 'unary'
          ? await this.sizes.measureOrPilot(context.method, context.cancellation)
          : this.sizes.typicalOf(context.method);
      pilot = measure === 'pilot';
      const reserved =
        bufferBytes +
        (typeof measure === 'number'
          ? measure
          : this.limits.maxInFlightBytes / this.limits.maxConcurrentCalls);
      this.refuseBeyondBytes(context.method, requestBytes, reserved);
      this.bytes += reserved;
      held += reserved;
    } catch (error) {
      release();
      throw error;
    }
    return {
      // The reservation becomes what the message holds, the request and buffers besides.
      produced: (message) => {
        const size = COPIES_HELD * this.sizeOf(message);
        largest = Math.max(largest ?? 0, size);
        const holding = requestBytes + bufferBytes + size;
        this.bytes += holding - held;
        held = holding;
      },
      release,
    };
  }

  private refuseBeyondCalls(): void {
    const { maxConcurrentCalls } = this.limits;
    if (this.calls < maxConcurrentCalls) return;
    this.refuse(
      `${this.calls} calls in progress, the most this server takes (--max-concurrent-calls)`,
    );
  }

  private refuseBeyondStreams(): void {
    const { maxOpenStreams } = this.limits;
    if (this.streams < maxOpenStreams) return;
    this.refuse(
      `${this.streams} long-lived streams open (Each, Consume), the most this server keeps (--max-open-streams)`,
    );
  }

  /** Whether a call already counted, with its request, may reserve `reserved` bytes more. */
  private refuseBeyondBytes(method: string, requestBytes: number, reserved: number): void {
    const { maxInFlightBytes } = this.limits;
    const alone = this.calls + this.streams === 1;
    if (alone || this.bytes + reserved <= maxInFlightBytes) return;
    this.refuse(
      `calls and streams in progress hold ${this.bytes - requestBytes} bytes and ${method} ` +
        `needs about ${requestBytes + reserved} more; the most is ${maxInFlightBytes} ` +
        `(--max-in-flight-bytes)`,
    );
  }

  private refuse(reason: string): never {
    const trailer = new Metadata();
    trailer.set('grpc-retry-pushback-ms', String(this.limits.retryPushbackMs));
    throw new StatusError(
      status.RESOURCE_EXHAUSTED,
      `server busy: ${reason}; retry after ${this.limits.retryPushbackMs} ms`,
      trailer,
    );
  }
}
