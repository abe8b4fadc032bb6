// `shameless group replay MODEL GROUP --shard N --id ID`: a parked cell delivered again to its
// shard's owner (ReplayParkedCell).
import { type Command, Option } from 'commander';
import { runClientCommand } from '../clientCommand.js';
import { addConnectionOptions } from '../connection.js';
import { stringifyExactJson } from '../exactJson.js';
import { UINT32_MAX, bigintArgument, integerArgument } from '../integerArgument.js';
import { GROUP_FIELDS, addGroupArguments, groupHint } from './groupCommand.js';

/** Where each ReplayParkedCellRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = { ...GROUP_FIELDS, shard: '--shard', id: '--id' };

export function registerGroupReplay(group: Command): void {
  const command = addConnectionOptions(
    addGroupArguments(
      group
        .command('replay')
        .summary('deliver a parked cell again')
        .description(
          "Asks for parked cell ID of content shard N to be delivered again to the shard's owner in " +
            'consumer group GROUP of MODEL: now, or when a member next owns the shard. It comes out of ' +
            "the shard's order, marked as a replay; once its member acknowledges it, it is no longer " +
            'parked (if it fails again it is parked again). Asking again before then changes nothing. ' +
            'Prints {"shard", "id", "replayPending": true}. NOT_FOUND when the cell is not parked in the ' +
            'group (`group parked` lists those that are). Needs a token with the writer role when the ' +
            'server wants tokens.\n\n' +
            'Examples:\n' +
            '  shameless group replay rate billing --shard 3 --id 1234\n' +
            '  shameless group parked rate billing --shard 3 | jq -r .id |\n' +
            '    xargs -n1 shameless group replay rate billing --shard 3 --id',
        ),
    )
      .addOption(new Option('--shard <n>', "the parked cell's content shard").makeOptionMandatory())
      .addOption(
        new Option('--id <id>', "the parked cell's id in its shard").makeOptionMandatory(),
      ),
  );
  command.action((model: string, groupName: string, options: { shard: string; id: string }) =>
    runClientCommand(
      command,
      ARGUMENT_OF_FIELD,
      async (connection) => {
        const shard = integerArgument(options.shard, '--shard', 0, UINT32_MAX);
        const id = bigintArgument(options.id, '--id', 'uint64');
        await connection.unary(connection.client.replayParkedCell, {
          model,
          group: groupName,
          shard,
          id,
        });
        console.log(stringifyExactJson({ shard, id, replayPending: true }));
      },
      groupHint(model, groupName),
    ),
  );
}
