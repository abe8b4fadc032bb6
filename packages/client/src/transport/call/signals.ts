// An AbortSignal of one's own that also follows another: the call's signal follows the
// caller's, each hedged attempt's follows the call's, so aborting a call reaches every attempt
// and a layer can cancel one attempt alone. And a wait that ends when its signal aborts.

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
 * `promise`, or a rejection with the signal's reason once it aborts first: a wait on something
 * that may never answer (a server, a token function) still ends at the call's deadline.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
