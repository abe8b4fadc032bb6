// Most layers do their work around a call rather than in it: set something up, watch the
// messages come back or the error, tidy up at the end. Written once as such hooks, a layer gets
// both forms (compose.ts): the async generator every call can go through, and the promise a
// one-message call goes through without one.

import type { ClientCall, ClientCallOptions, ClientMiddleware } from './compose.js';
import { clientLayer } from './compose.js';

/** What a layer does around one call, from when the call reaches it. */
export interface LayerCall {
  /** The options the call goes on with. */
  readonly options: ClientCallOptions;
  /** Each message as it comes back, before the layer passes it on. */
  message?(message: unknown): void;
  /** The call ended without an error, every message passed on. */
  completed?(): void;
  /** What the layer throws for `error`: itself, or what it maps it to (or a promise of that). */
  failed?(error: unknown): unknown;
  /** The call is over here, however it ended; last. */
  ended?(): void;
}

/**
 * A layer from what it does around each call: `begin` is told of the call as it arrives (a
 * throw, or a rejection, fails it before it goes on) and says how the layer follows it.
 */
export function hookedLayer(
  begin: (call: ClientCall, options: ClientCallOptions) => LayerCall | Promise<LayerCall>,
): ClientMiddleware {
  return clientLayer(
    async function* (call, options, next) {
      const around = await begin(call, options);
      try {
        for await (const message of next(call, around.options)) {
          around.message?.(message);
          yield message;
        }
        around.completed?.();
      } catch (error) {
        throw around.failed ? await around.failed(error) : error;
      } finally {
        around.ended?.();
      }
    },
    async (call, options, next) => {
      const begun = begin(call, options);
      const around = begun instanceof Promise ? await begun : begun;
      try {
        const message = await next(call, around.options);
        around.message?.(message);
        around.completed?.();
        return message;
      } catch (error) {
        throw around.failed ? await around.failed(error) : error;
      } finally {
        around.ended?.();
      }
    },
  );
}
