// `shameless serve`: every setting as an option, then the server until a signal stops it.
import type { Command } from 'commander';
import { SETTINGS } from '../serving/settings.js';
import {
  type SettingKey,
  type SettingOptionValues,
  addSettingOptions,
  settingsFrom,
} from './settingOptions.js';

export function registerServe(program: Command): void {
  const command = addSettingOptions(
    program
      .command('serve')
      .summary('serve the store over gRPC')
      .description(
        'serve the store over gRPC (shameless.v1.Store, grpc.health.v1.Health and server reflection).\n' +
          'Each setting comes from its flag, else its environment variable, else the config file, else the default.\n' +
          'It creates what the store lacks (database, bookkeeping tables) and logs each change; `shameless plan` lists them beforehand.',
      ),
    Object.keys(SETTINGS) as SettingKey[],
  );

  command.action(async (options: SettingOptionValues) => {
    const settings = settingsFrom(options);
    // Loaded here, not at the top: the client commands start without the engine and MySQL driver.
    const { serve } = await import('../serving/serve.js');
    try {
      await serve(settings);
    } catch (error) {
      // Startup errors are written for the operator (what failed, what to do); no stack.
      console.error(`shameless: cannot start: ${(error as Error).message}`);
      process.exit(1);
    }
  });
}
