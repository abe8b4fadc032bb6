// grpc-js writes its own errors to stderr as bare "E ..." lines. In `shameless serve` they go
// through the server's structured logger instead, and the one a failed bind writes is left out:
// the ListenError that follows says the same with the address and what to do.
import { format } from 'node:util';
import { setLogger } from '@grpc/grpc-js';
import type { Logger } from '../engine/base/logger.js';

const REPORTED_AS_LISTEN_ERROR = /^No address added out of total/;

export function routeGrpcJsLogs(logger: Logger): void {
  const write =
    (level: 'info' | 'error') =>
    (message?: unknown, ...rest: unknown[]) => {
      const text = format(message, ...rest);
      if (REPORTED_AS_LISTEN_ERROR.test(text)) return;
      logger[level === 'error' ? 'warn' : 'info']('grpc-js', { message: text });
    };
  // GRPC_VERBOSITY still decides which of them grpc-js writes at all.
  setLogger({ error: write('error'), info: write('info'), debug: write('info') });
}
