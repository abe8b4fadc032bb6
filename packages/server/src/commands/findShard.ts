// `shameless find-shard`: the shard and partition of a shard_on value or of a record's UUID.
import type { FindShardRequest } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { bigintArgument } from './integerArgument.js';
import { UsageError } from './usageError.js';

/** Where each FindShardRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = { value: '--value', uuid: '--uuid' };

export function registerFindShard(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('find-shard')
      .summary('the shard and partition of an index value or a record UUID')
      .description(
        'Prints {"shard": N, "partition": P} for a value of an index\'s shard_on field (--value: index ' +
          "shard = value mod shards count) or for a record's UUID (--uuid: its content shard). " +
          'P indexes the partitions `shameless describe` lists.',
      )
      .addOption(new Option('--value <integer>', 'a shard_on value (any 64-bit integer)'))
      .addOption(new Option('--uuid <uuid>', "a record's UUID").conflicts('value')),
  );
  command.action((options: { value?: string; uuid?: string }) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      const response = await connection.unary(connection.client.findShard, keyOf(options));
      console.log(JSON.stringify({ shard: response.shard, partition: response.partition }));
    }),
  );
}

function keyOf(options: { value?: string; uuid?: string }): FindShardRequest {
  if (options.uuid !== undefined) return { key: { $case: 'uuid', uuid: options.uuid } };
  if (options.value === undefined) throw new UsageError('give --value <integer> or --uuid <uuid>');
  return { key: { $case: 'value', value: bigintArgument(options.value, '--value') } };
}
