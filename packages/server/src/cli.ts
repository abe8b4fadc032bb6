#!/usr/bin/env node
// The `shameless` command line.
import { Command, Option } from 'commander';
import { StoreConfigError } from './engine/openStore.js';
import { ModelFileError, readModelFile } from './modelFile.js';
import { PLAN_EXIT, plan } from './plan.js';
import { serve } from './serve.js';
import { SETTINGS, type Settings, readConfigFile, resolveSettings } from './settings.js';

type SettingKey = keyof typeof SETTINGS;
type CommandOptions = Record<string, unknown> & { config?: string };

const program = new Command('shameless')
  .description(
    'Shameless: a schemaless, sharded, append-only cell store on MySQL, served over gRPC',
  )
  .showHelpAfterError('(run with --help for usage)');

/** The --config option and one option per setting given, each with its env, key and default. */
function addSettingOptions(command: Command, keys: readonly SettingKey[]): Command {
  command.addOption(
    new Option('--config <file>', 'JSON config file whose keys are the setting names below').env(
      'SHAMELESS_CONFIG',
    ),
  );
  for (const key of keys) {
    const setting = SETTINGS[key];
    const defaultText = Array.isArray(setting.defaultValue)
      ? setting.defaultValue.join(',')
      : JSON.stringify(setting.defaultValue);
    command.addOption(
      new Option(
        setting.flag,
        `${setting.description}\n[env ${setting.env}, config key "${key}", default ${defaultText}]`,
      ),
    );
  }
  return command;
}

/** Every setting from the command's flags, the environment and the config file; exits on error. */
function settingsFrom(options: CommandOptions): Settings {
  // Commander names each value after its flag (--partition -> partition); settings have their own keys.
  const flags = Object.fromEntries(
    Object.entries(SETTINGS).map(([key, setting]) => [
      key,
      options[new Option(setting.flag).attributeName()],
    ]),
  ) as Partial<Record<keyof Settings, unknown>>;
  try {
    return resolveSettings(
      flags,
      process.env,
      options.config ? readConfigFile(options.config) : {},
    );
  } catch (error) {
    console.error(`shameless: ${(error as Error).message}`);
    process.exit(2);
  }
}

const serveCommand = addSettingOptions(
  program
    .command('serve', { isDefault: true })
    .summary('serve the store over gRPC (the default command)')
    .description(
      'serve the store over gRPC (shameless.v1.Store and grpc.health.v1.Health).\n' +
        'Each setting comes from its flag, else its environment variable, else the config file, else the default.\n' +
        'It creates what the store lacks (database, bookkeeping tables) and logs each change; `shameless plan` lists them beforehand.',
    ),
  Object.keys(SETTINGS) as SettingKey[],
);

serveCommand.action(async (options: CommandOptions) => {
  const settings = settingsFrom(options);
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

const storeSettings = (Object.keys(SETTINGS) as SettingKey[]).filter(
  (key) => SETTINGS[key].scope === 'store',
);

const planCommand = addSettingOptions(
  program
    .command('plan')
    .summary('a dry run: list the schema changes serving the store would make, change nothing')
    .description(
      'A dry run: connects with the store settings of serve and changes nothing (creates no database, table or row). ' +
        'Prints every schema change that serving the store, and defining the models given with --model, would make: ' +
        'SQL with a one-line reason each, partition by partition, after what it checked (the recorded shard layout, ' +
        'the created_at type of existing tables, the stored definitions).\n\n' +
        'Settings come from flags, environment and config file as for serve (the serving-only ones are ignored).\n\n' +
        'A model file holds the ModelDefinition of a DefineModel request as JSON (proto JSON or snake_case names; ' +
        'field types "integer"/"string" or FIELD_TYPE_*; {"model": {...}} is accepted too), e.g.:\n' +
        '  {"name": "rate", "cells": ["meta"],\n' +
        '   "primaryIndex": {"shardOn": "hotel_id", "fields": [\n' +
        '     {"name": "hotel_id", "type": "integer"},\n' +
        '     {"name": "room_type", "type": "string"}]}}\n\n' +
        `Exit code: ${PLAN_EXIT.nothingToChange} nothing to change; ${PLAN_EXIT.changes} changes listed; ` +
        `${PLAN_EXIT.checkFailed} serve or DefineModel would refuse, or a partition is unreachable; ` +
        `${PLAN_EXIT.usage} bad settings or model file.`,
    )
    .addOption(
      new Option('--model <file...>', 'a JSON file with a model to define (see above); repeatable'),
    ),
  storeSettings,
);

planCommand.action(async (options: CommandOptions & { model?: string[] }) => {
  const settings = settingsFrom(options);
  let models: { source: string; spec: ReturnType<typeof readModelFile> }[];
  try {
    models = (options.model ?? []).map((file) => ({ source: file, spec: readModelFile(file) }));
  } catch (error) {
    if (!(error instanceof ModelFileError)) throw error;
    console.error(`shameless: ${error.message}`);
    process.exit(PLAN_EXIT.usage);
  }
  try {
    process.exitCode = await plan(settings, models, (line) => console.log(line));
  } catch (error) {
    console.error(`shameless: cannot plan: ${(error as Error).message}`);
    process.exitCode = error instanceof StoreConfigError ? PLAN_EXIT.usage : PLAN_EXIT.checkFailed;
  }
});

await program.parseAsync(process.argv);
