// Admission control: a layer that keeps the calls in progress, and the bytes they hold, under
// configured bounds. A call beyond them is refused at once with RESOURCE_EXHAUSTED and a
// `grpc-retry-pushback-ms` trailer (the SDK waits that long before retrying) rather than
// queued, so memory is bounded by configuration and not by how many clients call at once.
//
// What a call will hold is unknown when it arrives, so each call reserves the size of the
// largest message calls of its method answered lately, on average (plus its request's size on
// the wire); the reservation becomes the actual size of each message as it is produced, and is
// released when the call ends. Until a method has answered once, its unary calls go one at a
// time (see responseSizes.ts): the first reserves an even share of the bytes allowed
// (maxInFlightBytes / maxConcurrentCalls) and the others wait for its answer, then reserve what
// it measured. A stream holds a message only until the client has taken it (the handler waits
// for 'drain' before asking for the next), so a stream's first call does not make others wait.
import { Metadata, status } from '@grpc/grpc-js';
import type { CallContext } from './callContext.js';
import type { NextHandler, ServerMiddleware } from './middleware.js';
import { messageBytes } from './messageSize.js';
import { requestWireBytes } from './requestDecoding.js';
import { ResponseSizes } from './responseSizes.js';
import { StatusError } from './statusError.js';

export interface AdmissionLimits {
  /** Calls (unary and streams) in progress at once. */
  readonly maxConcurrentCalls: number;
  /** Bytes of requests and of responses not yet sent that calls may hold at once. */
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

export class Admission {
  private calls = 0;
  private bytes = 0;
  private readonly sizes = new ResponseSizes();

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly sizeOf: MessageSizer = messageBytes,
  ) {}

  /** Calls and bytes held right now. */
  get inFlight(): { calls: number; bytes: number } {
    return { calls: this.calls, bytes: this.bytes };
  }

  readonly layer: ServerMiddleware = <Req, Res>(
    request: Req,
    context: CallContext,
    next: NextHandler<Req, Res>,
  ): AsyncIterable<Res> => this.admit(request, context, next);

  private async *admit<Req, Res>(
    request: Req,
    context: CallContext,
    next: NextHandler<Req, Res>,
  ): AsyncGenerator<Res> {
    this.refuseBeyondCalls();
    // The request is held from the start, waiting included.
    let held = requestWireBytes(request);
    const requestBytes = held;
    this.calls += 1;
    this.bytes += held;
    let pilot = false;
    let largest: number | undefined;
    try {
      const measure =
        context.kind === 'unary'
          ? await this.sizes.measureOrPilot(context.method, context.signal)
          : this.sizes.typicalOf(context.method);
      pilot = measure === 'pilot';
      const reserved =
        typeof measure === 'number'
          ? measure
          : this.limits.maxInFlightBytes / this.limits.maxConcurrentCalls;
      this.refuseBeyondBytes(context.method, requestBytes, reserved);
      this.bytes += reserved;
      held += reserved;
      for await (const message of next(request, context)) {
        const size = COPIES_HELD * this.sizeOf(message);
        largest = Math.max(largest ?? 0, size);
        this.bytes += requestBytes + size - held;
        held = requestBytes + size;
        yield message;
      }
    } finally {
      this.calls -= 1;
      this.bytes -= held;
      this.sizes.record(context.method, largest, pilot);
    }
  }

  private refuseBeyondCalls(): void {
    const { maxConcurrentCalls } = this.limits;
    if (this.calls < maxConcurrentCalls) return;
    this.refuse(
      `${this.calls} calls in progress, the most this server takes (--max-concurrent-calls)`,
    );
  }

  /** Whether a call already counted, with its request, may reserve `reserved` bytes more. */
  private refuseBeyondBytes(method: string, requestBytes: number, reserved: number): void {
    const { maxInFlightBytes } = this.limits;
    if (this.calls === 1 || this.bytes + reserved <= maxInFlightBytes) return;
    this.refuse(
      `calls in progress hold ${this.bytes - requestBytes} bytes and ${method} needs about ` +
        `${requestBytes + reserved} more; the most is ${maxInFlightBytes} (--max-in-flight-bytes)`,
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
