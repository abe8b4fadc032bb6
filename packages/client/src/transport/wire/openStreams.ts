// The server streams a transport has open, so that closing the transport ends them. A unary
// call ends by itself within its deadline, so close() lets it finish; a stream may never end
// (Each with `follow` has no deadline), and while its call is open grpc-js keeps the channel,
// and so the process, alive.

import { linkedController } from '../call/signals.js';

export class OpenStreams {
  readonly #open = new Set<AbortController>();
  #closed = false;

  /**
   * Iterates `stream`, giving it a signal that aborts when `callerSignal` does or when
   * {@link closeAll} is called. A stream ended by closeAll fails with `closedError()`, not with
   * the error of an abort the caller did not ask for.
   */
  async *run<T>(
    callerSignal: AbortSignal | undefined,
    closedError: () => Error,
    stream: (signal: AbortSignal) => AsyncIterable<T>,
  ): AsyncGenerator<T, void, undefined> {
    const link = linkedController(callerSignal);
    this.#open.add(link.controller);
    try {
      yield* stream(link.signal);
    } catch (error) {
      throw this.#closed && callerSignal?.aborted !== true ? closedError() : error;
    } finally {
      link.unlink();
      this.#open.delete(link.controller);
    }
  }

  /** Aborts every stream open now; each fails with its `closedError()`. */
  closeAll(): void {
    this.#closed = true;
    for (const controller of this.#open) controller.abort();
  }
}
