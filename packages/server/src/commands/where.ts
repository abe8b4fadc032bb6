// `shameless where MODEL CONDITION...`: records found through an index, one JSON line each,
// following page tokens until the end or --limit.
import { type IndexDefinition, type Record as FoundRecord, SortOrder } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { cellToJson } from './cellJson.js';
import { runClientCommand } from './clientCommand.js';
import type { StoreConnection } from './connection.js';
import { addConnectionOptions } from './connection.js';
import { stringifyExactJson } from './exactJson.js';
import { UINT32_MAX, integerArgument } from './integerArgument.js';
import { UsageError } from './usageError.js';
import { CONDITION_FORMS, parseConditions } from './whereConditions.js';

interface WhereOptions {
  index: string;
  cell?: string[];
  order: string;
  limit?: string;
  pageSize: string;
}

/** Where each WhereRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  model: '<model>',
  index: '--index',
  conditions: '<condition...>',
  cells: '--cell',
  limit: '--page-size',
};

export function registerWhere(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('where')
      .summary('find records through an index (Where), one JSON line per record')
      .description(
        'Finds the records of MODEL whose index values meet every CONDITION, in index order, and prints ' +
          'each as a JSON line {"uuid", "cells": {NAME: cell}} with the latest version of each cell asked ' +
          "for (each as `get` prints a cell). The index's shard_on field needs exactly one = condition.\n\n" +
          `Conditions: ${CONDITION_FORMS}. Values are typed by the index's fields (from describe).\n\n` +
          "Example: shameless where cli_rate hotel_id=7 'room_type in single,double' --cell base --cell meta",
      )
      .argument('<model>', 'the model name')
      .argument('<condition...>', 'conditions on the index fields, ANDed')
      .addOption(new Option('--index <name>', 'a secondary index').default('primary'))
      // One value per --cell: a variadic option would swallow the conditions after it.
      .addOption(
        new Option(
          '--cell <name>',
          'a cell to print for each record; repeat for more (default: base)',
        ).argParser((name, names: string[] = []) => [...names, name]),
      )
      .addOption(
        new Option('--order <order>', 'asc or desc').choices(['asc', 'desc']).default('asc'),
      )
      .addOption(new Option('--limit <n>', 'stop after this many records (default: all)'))
      .addOption(
        new Option(
          '--page-size <n>',
          "records per request (at most the server's --max-page-records, 10000 by default)",
        ).default('1000'),
      ),
  );
  command.action((model: string, conditionTexts: string[], options: WhereOptions) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      const limit =
        options.limit === undefined
          ? Infinity
          : integerArgument(options.limit, '--limit', 1, Number.MAX_SAFE_INTEGER);
      const pageSize = integerArgument(options.pageSize, '--page-size', 1, UINT32_MAX);
      const index = await indexDefinition(connection, model, options.index);
      const conditions = parseConditions(conditionTexts, index);
      let printed = 0;
      let pageToken = '';
      do {
        const stream = connection.stream(connection.client.where, {
          model,
          index: options.index === 'primary' ? '' : options.index,
          conditions,
          cells: options.cell ?? [],
          order: options.order === 'desc' ? SortOrder.SORT_ORDER_DESC : SortOrder.SORT_ORDER_ASC,
          limit: Math.min(pageSize, limit - printed),
          pageToken,
        });
        pageToken = '';
        for await (const response of stream) {
          for (const record of response.records) {
            if (printed >= limit) break;
            console.log(stringifyExactJson(recordToJson(record)));
            printed += 1;
          }
          if (response.nextPageToken) pageToken = response.nextPageToken;
        }
      } while (pageToken !== '' && printed < limit);
    }),
  );
}

/** The index's definition, from DescribeStore: conditions are typed by its fields. */
async function indexDefinition(
  connection: StoreConnection,
  model: string,
  indexName: string,
): Promise<IndexDefinition> {
  const store = await connection.unary(connection.client.describeStore, {});
  const definition = store.models.find((candidate) => candidate.name === model);
  if (!definition) {
    const defined = store.models.map((candidate) => candidate.name).join(', ') || 'none';
    throw new UsageError(`model ${model} is not defined; defined models: ${defined}`);
  }
  const index =
    indexName === 'primary'
      ? definition.primaryIndex
      : definition.secondaryIndices.find((candidate) => candidate.name === indexName);
  if (!index) {
    const names = ['primary', ...definition.secondaryIndices.map((candidate) => candidate.name)];
    throw new UsageError(
      `--index: model ${model} has no index ${indexName}; its indices: ${names.join(', ')}`,
    );
  }
  return index;
}

function recordToJson(record: FoundRecord): Record<string, unknown> {
  return {
    uuid: record.uuid,
    cells: Object.fromEntries(record.cells.map((cell) => [cell.name, cellToJson(cell)])),
  };
}
