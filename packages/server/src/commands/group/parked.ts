// `shameless group parked MODEL GROUP`: a consumer group's parked cells with their attempts and
// last error, one JSON line each, following ListParkedCells' pages until the end or --limit.
import { once } from 'node:events';
import type { ParkedCell } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { cellToJson } from '../cellJson.js';
import { runClientCommand } from '../clientCommand.js';
import { addConnectionOptions } from '../connection.js';
import { stringifyExactJson } from '../exactJson.js';
import { UINT32_MAX, integerArgument } from '../integerArgument.js';
import { GROUP_FIELDS, addGroupArguments, groupHint } from './groupCommand.js';

interface ParkedOptions {
  shard?: string;
  limit?: string;
  pageSize: string;
}

/** Where each ListParkedCellsRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  ...GROUP_FIELDS,
  shard: '--shard',
  limit: '--page-size',
};

export function registerGroupParked(group: Command): void {
  const command = addConnectionOptions(
    addGroupArguments(
      group
        .command('parked')
        .summary("list a group's parked cells with their attempts and last error")
        .description(
          'Prints the parked cells of consumer group GROUP of MODEL, in shard order then id order, one JSON ' +
            'line each: {"shard", "id", "attempts", "error", "parkedAt", "replayPending", "cell"}, the cell as ' +
            '`get` prints one (null when it is no longer in its table). A cell is parked when it was ' +
            "delivered the join's max_deliveries times (5 by default) without being acknowledged, or when " +
            'its member parked it; its shard went on without it. `group replay` delivers one again ' +
            '(replayPending until its member acknowledges it). At the end, the count goes to stderr.\n\n' +
            'Examples:\n' +
            '  shameless group parked rate billing\n' +
            '  shameless group parked rate billing --shard 3 --limit 10\n' +
            "  shameless group parked rate billing | jq -r '[.shard, .id, .error] | @tsv'",
        ),
    )
      .addOption(
        new Option('--shard <n>', "only this content shard's parked cells (default: every shard)"),
      )
      .addOption(new Option('--limit <n>', 'stop after this many cells (default: all)'))
      .addOption(
        new Option('--page-size <n>', 'cells per request (the server takes at most 1000)').default(
          '100',
        ),
      ),
  );
  command.action((model: string, groupName: string, options: ParkedOptions) =>
    runClientCommand(
      command,
      ARGUMENT_OF_FIELD,
      async (connection) => {
        const shard =
          options.shard === undefined
            ? undefined
            : integerArgument(options.shard, '--shard', 0, UINT32_MAX);
        const limit =
          options.limit === undefined
            ? Infinity
            : integerArgument(options.limit, '--limit', 1, Number.MAX_SAFE_INTEGER);
        const pageSize = integerArgument(options.pageSize, '--page-size', 1, UINT32_MAX);
        let printed = 0;
        let pageToken = '';
        do {
          const page = await connection.unary(connection.client.listParkedCells, {
            model,
            group: groupName,
            shard,
            limit: Math.min(pageSize, limit - printed),
            pageToken,
          });
          for (const parked of page.cells) {
            if (!process.stdout.write(stringifyExactJson(parkedToJson(parked)) + '\n')) {
              await once(process.stdout, 'drain');
            }
          }
          printed += page.cells.length;
          pageToken = page.nextPageToken;
        } while (pageToken !== '' && printed < limit);
        const where = shard === undefined ? '' : ` of shard ${shard}`;
        const more = pageToken === '' ? '' : ' (stopped at --limit; there are more)';
        const cells = printed === 1 ? 'cell' : 'cells';
        process.stderr.write(`group parked: ${printed} parked ${cells}${where}${more}\n`);
      },
      groupHint(model, groupName),
    ),
  );
}

function parkedToJson(parked: ParkedCell): Record<string, unknown> {
  const cell = parked.cell!;
  return {
    shard: cell.shard,
    id: cell.id,
    attempts: parked.attempts,
    error: parked.error,
    parkedAt: parked.parkedAt,
    replayPending: parked.replayPending,
    // The server leaves the cell's uuid empty when its row is gone from the table.
    cell: cell.uuid === '' ? null : cellToJson(cell),
  };
}
