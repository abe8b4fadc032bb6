// `shameless group reset MODEL GROUP --to earliest|latest|<shard>:<id>`: a consumer group's
// cursors moved while none of its members is connected (ResetConsumerGroup).
import { type ResetConsumerGroupRequest, StartFrom } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { runClientCommand } from '../clientCommand.js';
import { addConnectionOptions } from '../connection.js';
import { stringifyExactJson } from '../exactJson.js';
import { UINT32_MAX, bigintArgument, integerArgument } from '../integerArgument.js';
import { UsageError } from '../usageError.js';
import {
  GROUP_FIELDS,
  ROW_DEPTH,
  addGroupArguments,
  groupHint,
  shardToJson,
} from './groupCommand.js';

/** Where each ResetConsumerGroupRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = { ...GROUP_FIELDS, to: '--to', position: '--to', shard: '--to' };

export function registerGroupReset(group: Command): void {
  const command = addConnectionOptions(
    addGroupArguments(
      group
        .command('reset')
        .summary("move a group's cursors (only while none of its members is connected)")
        .description(
          'Moves the cursors of consumer group GROUP of MODEL: where each content shard is handled up ' +
            'to, and so where its members go on from. --to is one of:\n' +
            '  earliest      every shard from its beginning: every cell is delivered again\n' +
            '  latest        every shard from its highest id now: the cells written so far\n' +
            '                are skipped\n' +
            '  <shard>:<id>  that content shard alone, to cursor <id>: its cells with an id\n' +
            '                greater than <id> are delivered next (3:0 is all of shard 3\n' +
            '                again; ids as `group parked` and `tail` print them)\n' +
            '\nOnly while no member of the group is connected: otherwise the server refuses with ' +
            'FAILED_PRECONDITION naming the members connected; stop them, or wait for their sessions to end ' +
            '(`group describe` shows when). Counts of failed deliveries are cleared; parked cells stay ' +
            'parked (`group replay` delivers one again). Prints the shards as `group describe` does. Needs ' +
            'a token with the admin role when the server wants tokens.\n\n' +
            'Examples:\n' +
            '  shameless group reset rate billing --to latest\n' +
            '  shameless group reset rate billing --to 3:1234',
        ),
    ).addOption(
      new Option(
        '--to <position>',
        'earliest, latest, or <shard>:<id> (see above)',
      ).makeOptionMandatory(),
    ),
  );
  command.action((model: string, groupName: string, options: { to: string }) =>
    runClientCommand(
      command,
      ARGUMENT_OF_FIELD,
      async (connection) => {
        const to = resetTarget(options.to);
        const response = await connection.unary(connection.client.resetConsumerGroup, {
          model,
          group: groupName,
          to,
        });
        const json = { model, group: groupName, shards: response.shards.map(shardToJson) };
        console.log(stringifyExactJson(json, 2, ROW_DEPTH));
      },
      groupHint(model, groupName),
    ),
  );
}

function resetTarget(text: string): NonNullable<ResetConsumerGroupRequest['to']> {
  const to = text.trim();
  if (to === 'earliest') {
    return { $case: 'position', position: StartFrom.START_FROM_EARLIEST };
  }
  if (to === 'latest') return { $case: 'position', position: StartFrom.START_FROM_LATEST };
  const match = /^([^:]*):([^:]*)$/.exec(to);
  if (!match) {
    throw new UsageError(
      `--to: expected earliest, latest or <shard>:<id> (e.g. 3:1234), got ${JSON.stringify(text)}`,
    );
  }
  return {
    $case: 'shard',
    shard: {
      shard: integerArgument(match[1]!, '--to <shard>', 0, UINT32_MAX),
      cursor: bigintArgument(match[2]!, '--to <id>', 'uint64'),
    },
  };
}
