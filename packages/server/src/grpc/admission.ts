// Admission control: a layer that keeps the calls in progress, and the bytes they hold, under
// configured bounds. A call beyond them is refused at once with RESOURCE_EXHAUSTED and a
// `grpc-retry-pushback-ms` trailer (the SDK waits that long before retrying) rather than
// queued, so memory is bounded by configuration and not by how many clients call at once.
//
// What a call will hold is unknown when it arrives, so each call reserves the size of the
// largest message calls of its method answered lately, on average (plus its request's size on
// the wire); the reservation becomes the actual size of each message as it is produced, and is
// released when the call ends. Until a method has answered once, its calls reserve an even
// share of the bytes allowed (maxInFlightBytes / maxConcurrentCalls), so that a first burst of
// small calls is not refused for want of a measure. A stream holds a message only until the client has taken it (the handler waits for
// 'drain' before asking for the next).
import { Metadata, status } from '@grpc/grpc-js';
import type { CallContext } from './callContext.js';
import type { NextHandler, ServerMiddleware } from './middleware.js';
import { messageBytes } from './messageSize.js';
import { requestWireBytes } from './requestDecoding.js';
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

/** Weight of the newest call in a method's running average of its largest message. */
const AVERAGE_WEIGHT = 0.2;
/**
 * A response is in memory about twice: as the message (and the rows it was made of) and as
 * its encoding on its way to the socket.
 */
const COPIES_HELD = 2;

export class Admission {
  private calls = 0;
  private bytes = 0;
  private readonly typicalBytes = new Map<string, number>();

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
    const requestBytes = requestWireBytes(request);
    const typical =
      this.typicalBytes.get(context.method) ??
      this.limits.maxInFlightBytes / this.limits.maxConcurrentCalls;
    let held = requestBytes + typical;
    this.refuseBeyondLimits(context.method, held);
    this.calls += 1;
    this.bytes += held;
    let largest = 0;
    try {
      for await (const message of next(request, context)) {
        const size = COPIES_HELD * this.sizeOf(message);
        largest = Math.max(largest, size);
        this.bytes += requestBytes + size - held;
        held = requestBytes + size;
        yield message;
      }
    } finally {
      this.calls -= 1;
      this.bytes -= held;
      const typical = this.typicalBytes.get(context.method);
      this.typicalBytes.set(
        context.method,
        typical === undefined ? largest : typical + AVERAGE_WEIGHT * (largest - typical),
      );
    }
  }

  private refuseBeyondLimits(method: string, bytes: number): void {
    const { maxConcurrentCalls, maxInFlightBytes } = this.limits;
    let reason: string | undefined;
    if (this.calls >= maxConcurrentCalls) {
      reason = `${this.calls} calls in progress, the most this server takes (--max-concurrent-calls)`;
    } else if (this.calls > 0 && this.bytes + bytes > maxInFlightBytes) {
      reason =
        `calls in progress hold ${this.bytes} bytes and ${method} needs about ${bytes} more; ` +
        `the most is ${maxInFlightBytes} (--max-in-flight-bytes)`;
    }
    if (reason === undefined) return;
    const trailer = new Metadata();
    trailer.set('grpc-retry-pushback-ms', String(this.limits.retryPushbackMs));
    throw new StatusError(
      status.RESOURCE_EXHAUSTED,
      `server busy: ${reason}; retry after ${this.limits.retryPushbackMs} ms`,
      trailer,
    );
  }
}
