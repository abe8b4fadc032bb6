// `shameless describe`: the store's namespace, shards, partitions and models, as JSON.
import { ModelDefinition } from '@shameless/proto';
import type { Command } from 'commander';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';

export function registerDescribe(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('describe')
      .summary("print the store's shards, partitions and models")
      .description(
        "Prints the store's namespace, shard count, largest cell (bytes), deepest and largest body written (levels, values), partitions (host, port, database, " +
          'shard range, whether it is down; never credentials) and every defined model (as proto JSON), as JSON.',
      ),
  );
  command.action(() =>
    runClientCommand(command, {}, async (connection) => {
      const response = await connection.unary(connection.client.describeStore, {});
      // Proto JSON leaves out zero values; a partition's index 0 and shard 0 are worth showing.
      const json = {
        namespace: response.namespace,
        shardsCount: response.shardsCount,
        maxCellBytes: response.maxCellBytes,
        maxBodyDepth: response.maxBodyDepth,
        maxBodyValues: response.maxBodyValues,
        partitions: response.partitions,
        models: response.models.map((model) => ModelDefinition.toJSON(model)),
      };
      console.log(JSON.stringify(json, null, 2));
    }),
  );
}
