// The end of the chain: sends one attempt over the grpc-js client of the endpoint the endpoint
// layer picked, with the attempt's metadata and the time left before the call's deadline, and
// cancels it when the attempt is cancelled. Errors leave as grpc-js raised them; the error
// layer above maps them.

import { Metadata, type ClientDuplexStream } from '@grpc/grpc-js';
import type { Clock } from '../call/clock.js';
import type { Endpoint } from '../policy/endpoints.js';
import { CancelledError } from '../call/errors.js';
import {
  grpcDeadline,
  startBidiStream,
  startServerStream,
  startUnaryCall,
  type BidiMethodName,
  type RequestOf,
  type StreamMethodName,
  type UnaryMethodName,
} from '../call/methods.js';
import type { CallNext } from '../call/compose.js';
import { type Cancellation, watchAbort } from '../call/cancellation.js';

/** What the gRPC terminal needs. */
export interface GrpcCallSettings {
  readonly clock: Clock;
  /** Metadata sent with every call, under what the layers add. */
  readonly metadata: Readonly<Record<string, string>>;
  /** True once the transport is closed: nothing more is sent. */
  readonly closed: () => boolean;
}

export function grpcCall({ clock, metadata, closed }: GrpcCallSettings): CallNext {
  return async function* sendAttempt(call, options) {
    const endpoint = options.endpoint as Endpoint | undefined;
    if (endpoint?.client === undefined) {
      throw new TypeError(`${call.method}: no endpoint was chosen for the attempt`);
    }
    if (closed()) throw new CancelledError(`${call.method}: the transport is closed`);
    const { cancellation } = options;
    if (cancellation?.aborted) throw cancellation.reason as Error;
    const sent = new Metadata(options.waitForReady === true ? { waitForReady: true } : undefined);
    for (const [key, value] of Object.entries({ ...metadata, ...options.metadata })) {
      sent.set(key, value);
    }
    const callOptions = {
      deadline: grpcDeadline((options.deadlineAt ?? Number.POSITIVE_INFINITY) - clock.now()),
    };
    const { client } = endpoint;
    const request = call.request as never;
    if (call.shape === 'unary') {
      const handle = startUnaryCall(
        client,
        call.method as UnaryMethodName,
        request,
        sent,
        callOptions,
        options.onTrailers,
      );
      const stopWatching = watchAbort(cancellation, () => handle.cancel());
      try {
        yield await handle.result;
      } finally {
        stopWatching();
      }
      return;
    }
    if (call.shape === 'bidiStream') {
      yield* bidiStream(
        startBidiStream(client, call.method as BidiMethodName, sent, callOptions),
        call.request as AsyncIterable<RequestOf<BidiMethodName>>,
        cancellation,
      );
      return;
    }
    const stream = startServerStream(
      client,
      call.method as StreamMethodName,
      request,
      sent,
      callOptions,
    );
    // Errors reach the consumer through iteration. This listener only keeps a status that
    // arrives after the consumer left (the CANCELLED of our own cancel()) from being an
    // unhandled 'error' event.
    stream.on('error', () => {});
    const stopWatching = watchAbort(cancellation, () => stream.cancel());
    try {
      if (call.shape === 'collect') {
        const messages: unknown[] = [];
        for await (const message of stream) messages.push(message);
        yield messages;
      } else {
        // The stream's own async iteration stops reading from the network while the consumer
        // is slow: backpressure reaches the server.
        yield* stream;
      }
    } finally {
      stopWatching();
      // Ends the server side when the consumer left early; a no-op after the call ended.
      stream.cancel();
    }
  };
}

/**
 * A bidirectional call: the caller's requests written as they come (waiting for 'drain' when
 * grpc-js's buffer is full; their end half-closes the call), the answers yielded as they come.
 * When the answers end, however they end, the call is cancelled (a no-op once it ended) and
 * the request iterator returned, so that neither side waits on the other.
 */
async function* bidiStream<Req>(
  stream: ClientDuplexStream<Req, unknown>,
  requests: AsyncIterable<Req>,
  cancellation: Cancellation | undefined,
): AsyncGenerator<unknown> {
  stream.on('error', () => {});
  const stopWatching = watchAbort(cancellation, () => stream.cancel());
  const source = requests[Symbol.asyncIterator]();
  let over = false;
  const ended = new Promise<void>((resolve) => stream.once('status', () => resolve()));
  const writeAll = async (): Promise<void> => {
    for (;;) {
      const next = await source.next();
      if (over) return;
      if (next.done === true) {
        stream.end();
        return;
      }
      if (!stream.write(next.value)) {
        await Promise.race([new Promise((resolve) => stream.once('drain', resolve)), ended]);
      }
    }
  };
  // A request source that throws ends the call: its answers then end with CANCELLED.
  void writeAll().catch(() => stream.cancel());
  try {
    yield* stream;
  } finally {
    over = true;
    stopWatching();
    stream.cancel();
    void source.return?.();
  }
}
