// The server's logger: pino (structured JSON, cheap when a level is off) behind the engine's
// small Logger interface.
import { destination, pino } from 'pino';
import type { Logger } from '../engine/base/logger.js';

export function createLogger(level: string): Logger {
  // Written synchronously: a line is out before the next statement runs, so a crash loses
  // none; and a stderr whose reader went away (EPIPE) only turns logging off. Asynchronous, the
  // lines left at exit were flushed by sonic-boom 4, which retries EPIPE forever: a server
  // started as `shameless serve 2>&1 | head` never exited on SIGTERM.
  const log = pino({ level, base: { service: 'shameless' } }, destination({ dest: 2, sync: true }));
  return {
    debug: (message, fields) => log.debug(fields ?? {}, message),
    info: (message, fields) => log.info(fields ?? {}, message),
    warn: (message, fields) => log.warn(fields ?? {}, message),
    error: (message, fields) => log.error(fields ?? {}, message),
  };
}
