// The access log: one debug line per Store call with its method, status, duration and peer.
// Metadata is never logged: it may carry credentials.
import { status } from '@grpc/grpc-js';
import type { Logger } from '../../engine/base/logger.js';
import { outcomeLayer } from './callOutcome.js';
import type { ServerMiddleware } from '../call/middleware.js';

export function accessLogLayer(logger: Logger): ServerMiddleware {
  return outcomeLayer((code, milliseconds, context) =>
    logger.debug('call', {
      method: context.method,
      code: status[code],
      ms: Math.round(milliseconds * 10) / 10,
      peer: context.peer,
    }),
  );
}
