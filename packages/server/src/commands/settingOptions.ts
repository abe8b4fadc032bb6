// The server's settings as options of a command (serve, plan): one option per setting, each
// with its env, config key and default, and the resolved settings of a run.
import { Command, Option } from 'commander';
import { SETTINGS, type Settings, readConfigFile, resolveSettings } from '../serving/settings.js';

export type SettingKey = keyof typeof SETTINGS;
export type SettingOptionValues = Record<string, unknown> & { config?: string };

/** The --config option and one option per setting given, each with its env, key and default. */
export function addSettingOptions(command: Command, keys: readonly SettingKey[]): Command {
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
export function settingsFrom(options: SettingOptionValues): Settings {
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
