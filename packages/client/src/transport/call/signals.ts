// An AbortSignal of one's own that also follows another: a stream's follows its caller's, and
// closing the transport aborts it too (openStreams.ts). And a wait that ends when a signal or a
// cancellation aborts.

import { type Abortable, watchAbort } from './cancellation.js';

/** A controller whose signal aborts when `parent` does (with its reason); `unlink` ends that. */
export interface LinkedController {
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  unlink(): void;
}

export function linkedController(parent: AbortSignal | undefined): LinkedController {
  const controller = new AbortController();
  if (parent === undefined) return { controller, signal: controller.signal, unlink: () => {} };
  const follow = (): void => controller.abort(parent.reason);
  if (parent.aborted) follow();
  else parent.addEventListener('abort', follow, { once: true });
  return {
    controller,
    signal: controller.signal,
    unlink: () => parent.removeEventListener('abort', follow),
  };
}

/**
 * `promise`, or a rejection with the reason of `source`'s abort once it aborts first: a wait on
 * something that may never answer (a server, a token function) still ends at the call's
 * deadline.
 */
export function untilAborted<T>(promise: Promise<T>, source: Abortable | undefined): Promise<T> {
  if (source === undefined) return promise;
  if (source.aborted) return Promise.reject(source.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const stopWatching = watchAbort(source, () => reject(source.reason as Error));
    promise.then(
      (value) => {
        stopWatching();
        resolve(value);
      },
      (error: unknown) => {
        stopWatching();
        reject(error);
      },
    );
  });
}
