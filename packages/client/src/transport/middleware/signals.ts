// An AbortSignal of one's own that also follows another: the call's signal follows the
// caller's, each hedged attempt's follows the call's, so aborting a call reaches every attempt
// and a layer can cancel one attempt alone.

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
