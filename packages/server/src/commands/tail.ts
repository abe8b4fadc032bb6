// `shameless tail MODEL --shard N [--follow]`: a content shard's log (every cell version in id
// order) as JSON lines, from a cursor, optionally following new writes until interrupted.
import { once } from 'node:events';
import { status } from '@grpc/grpc-js';
import { type Command, Option } from 'commander';
import { cellToJson } from './cellJson.js';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { stringifyExactJson } from './exactJson.js';
import { UINT32_MAX, bigintArgument, integerArgument } from './integerArgument.js';

interface TailOptions {
  shard: string;
  cursor: string;
  follow?: boolean;
  batchSize: string;
  progressMs: string;
}

/** Where each EachRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  model: '<model>',
  shards: '--shard',
  cursors: '--cursor',
  batch_size: '--batch-size',
};

export function registerTail(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('tail')
      .summary("print a content shard's cells in id order (Each), optionally following new ones")
      .description(
        'Prints every cell version of MODEL in content shard N with an id past --cursor, in id order, one JSON ' +
          'line each (as `get` prints a cell). With --follow it then waits for new versions until interrupted ' +
          '(Ctrl-C ends it cleanly, with a last progress line); a server that stops ends it with exit 1 and the ' +
          'cursor to resume from. While cells arrive, a progress line goes to stderr ' +
          'every --progress-ms: the cells so far and the cursor to resume from.',
      )
      .argument('<model>', 'the model name')
      .addOption(
        new Option(
          '--shard <n>',
          'the content shard (0 .. shards count - 1)',
        ).makeOptionMandatory(),
      )
      .addOption(new Option('--cursor <id>', 'start after this cell id').default('0'))
      .addOption(new Option('--follow', 'keep printing new versions as they are written'))
      .addOption(
        new Option(
          '--batch-size <n>',
          'cells per message from the server (0: its default)',
        ).default('0'),
      )
      .addOption(
        new Option(
          '--progress-ms <ms>',
          'interval of the progress line on stderr (0: after every batch)',
        ).default('2000'),
      ),
  );
  command.action((model: string, options: TailOptions) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      const shard = integerArgument(options.shard, '--shard', 0, UINT32_MAX);
      const progressMs = integerArgument(
        options.progressMs,
        '--progress-ms',
        0,
        Number.MAX_SAFE_INTEGER,
      );
      let cursor = bigintArgument(options.cursor, '--cursor', 'uint64');
      const stream = connection.stream(connection.client.each, {
        model,
        shards: [shard],
        cursors: { [shard]: cursor },
        follow: Boolean(options.follow),
        batchSize: integerArgument(options.batchSize, '--batch-size', 0, UINT32_MAX),
        heartbeatIntervalMs: 0,
      });
      let interrupted = false;
      const interrupt = () => {
        interrupted = true;
        stream.cancel();
      };
      process.once('SIGINT', interrupt);
      process.once('SIGTERM', interrupt);
      let cells = 0;
      let reported = 0;
      let lastProgress = Date.now();
      const progress = () =>
        process.stderr.write(`tail: shard ${shard}: ${cells} cells, cursor ${cursor}\n`);
      let received = false;
      try {
        for await (const response of stream) {
          received = true;
          const event = response.event;
          if (event?.$case === 'batch') {
            for (const cell of event.batch.cells) {
              if (!process.stdout.write(stringifyExactJson(cellToJson(cell)) + '\n')) {
                await once(process.stdout, 'drain');
              }
            }
            cells += event.batch.cells.length;
            cursor = event.batch.cursor;
          } else if (event?.$case === 'heartbeat') {
            cursor = event.heartbeat.cursors[shard] ?? cursor;
          }
          // Only while cells flow: a quiet follow stream prints nothing.
          if (cells > reported && Date.now() - lastProgress >= progressMs) {
            progress();
            reported = cells;
            lastProgress = Date.now();
          }
        }
        // A follow stream never ends by itself (a server that shuts down ends it UNAVAILABLE;
        // one of an earlier version, OK): a script waiting on `tail --follow` must not take
        // that for the end of the log.
        if (options.follow && !interrupted) {
          throw new Error(`the server at ${connection.address} ended the follow stream`);
        }
      } catch (error) {
        if (interrupted && (error as { code?: number }).code === status.CANCELLED) {
          progress();
          return;
        }
        if (options.follow && received) {
          progress();
          process.stderr.write(`tail: run tail again with --cursor ${cursor} to resume\n`);
        }
        throw error;
      } finally {
        process.off('SIGINT', interrupt);
        process.off('SIGTERM', interrupt);
      }
    }),
  );
}
