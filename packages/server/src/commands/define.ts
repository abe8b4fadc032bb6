// `shameless define --file model.json`: DefineModel with a model file (as `plan --model` reads).
import { ModelDefinition } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { ModelFileError, readModelDefinition } from './modelFile.js';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { MODEL_FILE_HELP } from './plan.js';
import { UsageError } from './usageError.js';

/** Where each DefineModelRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = { model: '--file' };

export function registerDefine(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('define')
      .summary('define a model from a JSON file (DefineModel)')
      .description(
        'Defines the model in the file: the server creates its tables on every shard. Defining it again is ' +
          'a no-op, adding cells is allowed, changing indices is refused. Prints the stored definition and ' +
          'whether anything changed. `shameless plan --model FILE` shows the tables it would create first.\n\n' +
          MODEL_FILE_HELP,
      )
      .addOption(new Option('--file <model.json>', 'the model file').makeOptionMandatory()),
  );
  command.action((options: { file: string }) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      let definition;
      try {
        definition = readModelDefinition(options.file);
      } catch (error) {
        if (error instanceof ModelFileError) throw new UsageError(error.message);
        throw error;
      }
      const response = await connection.unary(connection.client.defineModel, {
        model: definition,
      });
      // Proto JSON would leave out "changed": false.
      const model = response.model && ModelDefinition.toJSON(response.model);
      console.log(JSON.stringify({ model, changed: response.changed }, null, 2));
    }),
  );
}
