export * from './engine/index.js';
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  startServer,
  STORE_SERVICE_NAME,
  type RunningServer,
  type ServerOptions,
} from './grpc/server.js';
export { createLogger } from './serving/logging.js';
// The readers of the files a person writes for the server, as `serve`, `plan` and `define` read
// them: packages/docs checks the guides' sample files with these.
export { SETTINGS, readConfigFile, resolveSettings, type Settings } from './serving/settings.js';
export { readTokensFile } from './grpc/middleware/tokens.js';
export { readModelDefinition } from './commands/modelFile.js';
