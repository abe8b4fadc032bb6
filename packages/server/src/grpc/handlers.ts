// Adapters from grpc-js handler signatures to async functions, with errors mapped once and
// server streams that honour backpressure and cancellation.
import type { ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from '../engine/logger.js';
import { toServiceError } from './statusMapping.js';

export function unaryHandler<Req, Res>(
  method: string,
  logger: Logger,
  handle: (request: Req) => Promise<Res>,
) {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    handle(call.request).then(
      (response) => callback(null, response),
      (error: unknown) => callback(toServiceError(error, method, logger)),
    );
  };
}

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
    for (const controller of this.controllers) controller.abort();
  }

  get size(): number {
    return this.controllers.size;
  }
}

export function serverStreamHandler<Req, Res>(
  method: string,
  logger: Logger,
  streams: OpenStreams,
  produce: (request: Req, signal: AbortSignal) => AsyncIterable<Res>,
) {
  return (call: ServerWritableStream<Req, Res>) => {
    const controller = streams.open();
    const onCancelled = () => controller.abort();
    call.on('cancelled', onCancelled);
    void (async () => {
      try {
        for await (const message of produce(call.request, controller.signal)) {
          if (controller.signal.aborted) break;
          if (!call.write(message)) await drained(call, controller.signal);
        }
        if (!call.cancelled) call.end();
      } catch (error) {
        // grpc-js turns an 'error' event into the call's final status.
        if (!call.cancelled) call.emit('error', toServiceError(error, method, logger));
      } finally {
        call.off('cancelled', onCancelled);
        streams.close(controller);
      }
    })();
  };
}

function drained(call: ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
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
