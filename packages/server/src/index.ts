export * from './engine/index.js';
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  startServer,
  STORE_SERVICE_NAME,
  type RunningServer,
  type ServerOptions,
} from './grpc/server.js';
export { createLogger } from './serving/logging.js';
