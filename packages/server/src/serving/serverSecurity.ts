// What protects a serving process, from its settings: transport credentials (TLS, mutual TLS),
// the token layer of the middleware chain, and the bind rule. Everything is read and checked
// before the store is opened, so a wrong file stops the start at once with a message naming it.
import type { ServerCredentials } from '@grpc/grpc-js';
import { checkBindRule } from './bindRule.js';
import type { Logger } from '../engine/base/logger.js';
import { authorization } from '../grpc/middleware/authorization.js';
import type { ServerMiddleware } from '../grpc/call/middleware.js';
import { serverCredentials, tlsFilesOf } from '../grpc/serverCredentials.js';
import { TokenSet } from '../grpc/middleware/tokens.js';
import type { Settings } from './settings.js';

export interface ServerSecurity {
  readonly credentials: ServerCredentials;
  /** The layers security adds to the chain, outermost first. */
  readonly middleware: readonly ServerMiddleware[];
  /** Logs how the server is protected (one warning line when it is not). */
  logProtection(logger: Logger): void;
  /**
   * Re-reads the tokens file on SIGHUP; a bad file keeps the old tokens and is logged. Without
   * a tokens file SIGHUP is logged and ignored.
   */
  reloadTokensOnHangup(logger: Logger): void;
}

type SecuritySettings = Pick<
  Settings,
  'listen' | 'tlsCert' | 'tlsKey' | 'tlsClientCa' | 'tokensFile' | 'insecure'
>;

export function serverSecurity(settings: SecuritySettings): ServerSecurity {
  const tls = tlsFilesOf(settings);
  const credentials = serverCredentials(tls);
  const tokens = settings.tokensFile ? new TokenSet(settings.tokensFile) : undefined;
  const warning = checkBindRule({
    listen: settings.listen,
    tls: tls !== undefined,
    tokens: tokens !== undefined,
    insecure: settings.insecure,
  });
  return {
    credentials,
    middleware: tokens ? [authorization(tokens)] : [],
    logProtection(logger) {
      if (warning) {
        logger.warn(warning, { listen: settings.listen });
        return;
      }
      logger.info('protected', {
        tls: !tls ? 'off' : tls.clientCaFile ? 'mutual' : 'on',
        tokens: tokens ? tokens.size : 'off',
      });
    },
    reloadTokensOnHangup(logger) {
      process.on('SIGHUP', () => {
        // Node ends the process on an unhandled SIGHUP; a server asked to reload keeps serving.
        if (!tokens) {
          logger.info('SIGHUP: nothing to reload (no --tokens-file)');
          return;
        }
        try {
          tokens.reload();
          logger.info('tokens file reloaded', { file: tokens.path, tokens: tokens.size });
        } catch (error) {
          logger.error('tokens file not reloaded; the previous tokens stay in force', {
            file: tokens.path,
            reason: (error as Error).message,
          });
        }
      });
    },
  };
}
