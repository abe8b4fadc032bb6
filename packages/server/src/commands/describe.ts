// `shameless describe`: the store's namespace, shards, partitions and models, as JSON.
import { DescribeStoreResponse } from '@shameless/proto';
import type { Command } from 'commander';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';

export function registerDescribe(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('describe')
      .summary("print the store's shards, partitions and models")
      .description(
        "Prints the store's namespace, shard count, partitions (host, port, database, shard range; never " +
          'credentials) and every defined model, as the proto JSON of DescribeStoreResponse.',
      ),
  );
  command.action(() =>
    runClientCommand(command, async (connection) => {
      const response = await connection.unary(connection.client.describeStore, {});
      console.log(JSON.stringify(DescribeStoreResponse.toJSON(response), null, 2));
    }),
  );
}
