// `shameless plan`: the store settings of serve and model files, then the dry run's listing.
import { type Command, Option } from 'commander';
import { ModelFileError, readModelFile } from './modelFile.js';
import { PLAN_EXIT } from '../serving/planExit.js';
import { SETTINGS } from '../serving/settings.js';
import {
  type SettingKey,
  type SettingOptionValues,
  addSettingOptions,
  settingsFrom,
} from './settingOptions.js';

export const MODEL_FILE_HELP =
  'A model file holds the ModelDefinition of a DefineModel request as JSON (proto JSON or snake_case names; ' +
  'field types "integer"/"string" or FIELD_TYPE_*; {"model": {...}} is accepted too), e.g.:\n' +
  '  {"name": "cli_rate", "cells": ["meta"],\n' +
  '   "primaryIndex": {"shardOn": "hotel_id", "fields": [\n' +
  '     {"name": "hotel_id", "type": "integer"},\n' +
  '     {"name": "room_type", "type": "string"}]}}';

export function registerPlan(program: Command): void {
  const storeSettings = (Object.keys(SETTINGS) as SettingKey[]).filter(
    (key) => SETTINGS[key].scope === 'store',
  );
  const command = addSettingOptions(
    program
      .command('plan')
      .summary('a dry run: list what serving the store would change, change nothing')
      .description(
        'A dry run: connects with the store settings of serve and changes nothing (creates no database, table or row). ' +
          'Prints every schema change that serving the store, and defining the models given with --model, would make: ' +
          'SQL with a one-line reason each, partition by partition, after what it checked (the recorded shard layout, ' +
          'the created_at type of existing tables, the stored definitions); then the rows they would write besides ' +
          "(the store's recorded shard layout, a model's definition, its log-lock rows).\n\n" +
          'Settings come from flags, environment and config file as for serve (the serving-only ones are ignored).\n\n' +
          `${MODEL_FILE_HELP}\n\n` +
          `Exit code: ${PLAN_EXIT.nothingToChange} nothing to change; ${PLAN_EXIT.changes} changes listed (schema ` +
          `changes or rows); ` +
          `${PLAN_EXIT.checkFailed} serve or DefineModel would refuse, or a partition is unreachable; ` +
          `${PLAN_EXIT.usage} bad settings or model file.`,
      )
      .addOption(
        new Option(
          '--model <file...>',
          'a JSON file with a model to define (see above); repeatable',
        ),
      ),
    storeSettings,
  );

  command.action(async (options: SettingOptionValues & { model?: string[] }) => {
    const settings = settingsFrom(options);
    let models: { source: string; spec: ReturnType<typeof readModelFile> }[];
    try {
      models = (options.model ?? []).map((file) => ({ source: file, spec: readModelFile(file) }));
    } catch (error) {
      if (!(error instanceof ModelFileError)) throw error;
      console.error(`shameless: ${error.message}`);
      process.exit(PLAN_EXIT.usage);
    }
    // Loaded here, not at the top: the client commands start without the engine and MySQL driver.
    const [{ plan }, { StoreConfigError }] = await Promise.all([
      import('../serving/plan.js'),
      import('../engine/openStore.js'),
    ]);
    try {
      process.exitCode = await plan(settings, models, (line) => console.log(line));
    } catch (error) {
      console.error(`shameless: cannot plan: ${(error as Error).message}`);
      process.exitCode =
        error instanceof StoreConfigError ? PLAN_EXIT.usage : PLAN_EXIT.checkFailed;
    }
  });
}
