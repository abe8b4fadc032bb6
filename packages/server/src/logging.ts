// The server's logger: pino (structured JSON, cheap when a level is off) behind the engine's
// small Logger interface.
import { destination, pino } from 'pino';
import type { Logger } from './engine/logger.js';

export function createLogger(level: string): Logger {
  const log = pino({ level, base: { service: 'shameless' } }, destination(2));
  return {
    debug: (message, fields) => log.debug(fields ?? {}, message),
    info: (message, fields) => log.info(fields ?? {}, message),
    warn: (message, fields) => log.warn(fields ?? {}, message),
    error: (message, fields) => log.error(fields ?? {}, message),
  };
}
