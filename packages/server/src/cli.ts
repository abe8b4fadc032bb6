#!/usr/bin/env node
// The `shameless` command line.
import { Command, Option } from 'commander';
import { StoreConfigError } from './engine/openStore.js';
import { serve } from './serve.js';
import { SETTINGS, type Settings, readConfigFile, resolveSettings } from './settings.js';

const program = new Command('shameless')
  .description(
    'Shameless: a schemaless, sharded, append-only cell store on MySQL, served over gRPC',
  )
  .showHelpAfterError('(run with --help for usage)');

const serveCommand = program
  .command('serve', { isDefault: true })
  .description(
    'serve the store over gRPC (shameless.v1.Store and grpc.health.v1.Health).\n' +
      'Each setting comes from its flag, else its environment variable, else the config file, else the default.',
  )
  .addOption(
    new Option('--config <file>', 'JSON config file whose keys are the setting names below').env(
      'SHAMELESS_CONFIG',
    ),
  );

for (const [key, setting] of Object.entries(SETTINGS)) {
  const defaultText = Array.isArray(setting.defaultValue)
    ? setting.defaultValue.join(',')
    : JSON.stringify(setting.defaultValue);
  serveCommand.addOption(
    new Option(
      setting.flag,
      `${setting.description}\n[env ${setting.env}, config key "${key}", default ${defaultText}]`,
    ),
  );
}

serveCommand.action(async (options: Record<string, unknown> & { config?: string }) => {
  // Commander names each value after its flag (--partition -> partition); settings have their own keys.
  const flags = Object.fromEntries(
    Object.entries(SETTINGS).map(([key, setting]) => [
      key,
      options[new Option(setting.flag).attributeName()],
    ]),
  ) as Partial<Record<keyof Settings, unknown>>;
  let settings: Settings;
  try {
    settings = resolveSettings(
      flags,
      process.env,
      options.config ? readConfigFile(options.config) : {},
    );
  } catch (error) {
    console.error(`shameless: ${(error as Error).message}`);
    process.exit(2);
  }
  try {
    await serve(settings);
  } catch (error) {
    if (error instanceof StoreConfigError) {
      console.error(`shameless: cannot start: ${error.message}`);
    } else {
      console.error(`shameless: cannot start: ${(error as Error).message}`);
    }
    process.exit(1);
  }
});

await program.parseAsync(process.argv);
