// Error mapping, the innermost layer: whatever the attempt threw becomes a typed
// ShamelessError (errors.ts holds the one status -> class table). An attempt this client
// cancelled fails with the reason it was cancelled for (the deadline, an abort, a hedge that
// lost); a CANCELLED that grpc-js reported and this client did not cause is a lost connection.

import { asConnectionLoss, toShamelessError } from '../call/errors.js';
import type { ClientMiddleware } from '../call/compose.js';
import { hookedLayer } from '../call/hookedLayer.js';

export const errorLayer: ClientMiddleware = hookedLayer((_call, options) => ({
  options,
  failed: (raw) => {
    const { cancellation } = options;
    if (cancellation?.aborted) return toShamelessError(cancellation.reason);
    return asConnectionLoss(raw);
  },
}));
