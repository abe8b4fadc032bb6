// `shameless get MODEL UUID`: one version of a cell, as a JSON line.
import { type Command, Option } from 'commander';
import { BODY_FORMS } from './bodyJson.js';
import { cellToJson } from './cellJson.js';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { stringifyExactJson } from './exactJson.js';
import { INT32_MAX, integerArgument } from './integerArgument.js';

/** Where each GetCellRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  model: '<model>',
  uuid: '<uuid>',
  cell: '--cell',
  ref_key: '--ref-key',
};

export function registerGet(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('get')
      .summary('print a version of a cell (the latest base cell by default)')
      .description(
        'Prints one version of a record\'s cell as a JSON line: {"uuid", "cell", "refKey", "id", "shard", ' +
          '"createdAt", "body"}, the body decoded from MessagePack with every value exact (where, tail ' +
          'and put use the same forms). NOT_FOUND when the model, record, cell or version does not ' +
          'exist.\n\nBodies: ' +
          BODY_FORMS,
      )
      .argument('<model>', 'the model name')
      .argument('<uuid>', "the record's UUID")
      .addOption(new Option('--cell <name>', 'the cell').default('base'))
      .addOption(
        new Option('--ref-key <n>', 'the version (0 is the first); the latest when omitted'),
      ),
  );
  command.action((model: string, uuid: string, options: { cell: string; refKey?: string }) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      const refKey =
        options.refKey === undefined
          ? undefined
          : integerArgument(options.refKey, '--ref-key', 0, INT32_MAX);
      const response = await connection.unary(connection.client.getCell, {
        model,
        uuid,
        cell: options.cell,
        refKey,
      });
      console.log(stringifyExactJson(response.cell ? cellToJson(response.cell) : null));
    }),
  );
}
