// `shameless move-shards`: shards moved to new MySQL servers while the store serves
// (MoveShards). A thin client: the move runs in the server it calls, its state in the store, so
// running the same command again resumes a move whose command was stopped.
import { type ServiceError, status } from '@grpc/grpc-js';
import { MovePhase, type MoveShardsProgress, type MoveShardsRequest } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { stringifyExactJson } from './exactJson.js';
import { UINT32_MAX, integerArgument } from './integerArgument.js';
import { UsageError } from './usageError.js';

interface MoveShardsOptions {
  shards?: string;
  to?: string[];
  split?: boolean;
  finish?: boolean;
  abort?: boolean;
  status?: boolean;
}

/** Where each MoveShardsRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  first_shard: '--shards',
  last_shard: '--shards',
  shards: '--shards',
  to: '--to',
};

export function registerMoveShards(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('move-shards')
      .summary('move shards to other MySQL servers while the store serves')
      .description(
        'Moves shards to another partition while every server keeps serving them: per shard, its tables are ' +
          'created on the target and copied by id, caught up by its log, verified (counts and checksums, table by ' +
          'table), then cut over: its writes are held for tens of milliseconds while the last cells are copied and the ' +
          "store's partition map moves to its next version. The source tables are kept, frozen, until --finish; " +
          '--abort puts everything back (after a cut-over, by moving the shard back). Progress goes to stderr, a line per step; the result ' +
          '(each shard, and the partition list the gem needs after a --split) to stdout as JSON. The state is in ' +
          'the store: run the same command again to resume a move that was stopped. Needs a token with the admin ' +
          'role when the server wants tokens. One of:\n' +
          '  --shards <first>-<last> --to <url>\n' +
          '                 those shards to the partition at <url> (new, or one\n' +
          '                 the store has)\n' +
          '  --split --to <url> …\n' +
          "                 one --to per partition, in the partitions' order: the\n" +
          "                 upper half of each one's shards moves to its new one\n" +
          '  --finish       drop the source tables of the shards cut over\n' +
          '  --abort        put back the moves not finished\n' +
          '  --status       print the moves under way\n' +
          '\nExamples:\n' +
          '  shameless move-shards --shards 8-15 --to mysql://app:secret@db2:3306/shameless\n' +
          '  shameless move-shards --split --to mysql://app:secret@db2:3306/shameless \\\n' +
          '                                --to mysql://app:secret@db3:3306/shameless\n' +
          '  shameless move-shards --finish',
      )
      .addOption(new Option('--shards <range>', 'the shards to move: <first>-<last>, or one shard'))
      .addOption(
        new Option('--to <url>', 'where to (repeat with --split, one per partition)').argParser(
          (value: string, previous: string[] = []) => [...previous, value],
        ),
      )
      .addOption(new Option('--split', 'double the partitions (one --to per partition)'))
      .addOption(new Option('--finish', 'drop the frozen source tables of the shards cut over'))
      .addOption(
        new Option('--abort', 'put back the moves not finished (moving shards back if cut over)'),
      )
      .addOption(new Option('--status', 'print the moves under way')),
  );
  command.action((options: MoveShardsOptions) =>
    runClientCommand(
      command,
      ARGUMENT_OF_FIELD,
      async (connection) => {
        const request = moveRequest(options);
        const stream = connection.stream(connection.client.moveShards, request);
        let interrupted = false;
        const interrupt = () => {
          interrupted = true;
          stream.cancel();
        };
        process.once('SIGINT', interrupt);
        process.once('SIGTERM', interrupt);
        const last = new Map<number, MoveShardsProgress>();
        let done: MoveShardsProgress | undefined;
        try {
          for await (const progress of stream as AsyncIterable<MoveShardsProgress>) {
            if (progress.done) {
              done = progress;
              continue;
            }
            last.set(progress.shard, progress);
            process.stderr.write(`move-shards: ${progressLine(progress)}\n`);
          }
        } catch (error) {
          if (interrupted && (error as { code?: number }).code === status.CANCELLED) {
            process.stderr.write('move-shards: stopped; run the same command again to resume\n');
            process.exitCode = 1;
            return;
          }
          throw error;
        } finally {
          process.off('SIGINT', interrupt);
          process.off('SIGTERM', interrupt);
        }
        const json = {
          mapVersion: done?.mapVersion ?? 0n,
          shards: [...last.values()].map((progress) => ({
            shard: progress.shard,
            phase: phaseName(progress.phase),
            source: progress.sourcePartition,
            target: progress.targetPartition,
            rowsCopied: progress.rowsCopied,
            holdMs: progress.holdMs,
          })),
          ...(done && done.gemPartitionList.length > 0
            ? { partitions: done.gemPartitionList }
            : {}),
        };
        console.log(stringifyExactJson(json, 2, 3));
      },
      moveHint,
    ),
  );
}

/**
 * FAILED_PRECONDITION here is about the moves, not a model's definition: another mover running,
 * or a difference the verify found (the move stays where it is).
 */
function moveHint(error: ServiceError): string | undefined {
  if (error.code !== status.FAILED_PRECONDITION) return undefined;
  if (/another mover/.test(error.details)) {
    return 'wait for it to end (`shameless move-shards --status` shows the moves), then run the command again';
  }
  return (
    'the move stays where it is: `shameless move-shards --status` shows it; --abort puts back ' +
    'the moves not cut over yet, or run the same command again once the difference is explained'
  );
}

function moveRequest(options: MoveShardsOptions): MoveShardsRequest {
  const to = options.to ?? [];
  const actions = [
    options.shards !== undefined,
    Boolean(options.split),
    Boolean(options.finish),
    Boolean(options.abort),
    Boolean(options.status),
  ].filter(Boolean).length;
  if (actions !== 1) {
    throw new UsageError(
      'give one of --shards <range> --to <url>, --split --to <url> …, --finish, --abort, --status',
    );
  }
  if (options.split) {
    if (to.length === 0) throw new UsageError('--split: give one --to <url> per partition');
    return { action: { $case: 'split', split: { to: to } } };
  }
  if (options.shards !== undefined) {
    if (to.length !== 1) throw new UsageError('--shards: give exactly one --to <url>');
    const { first, last } = shardRange(options.shards);
    return {
      action: { $case: 'move', move: { firstShard: first, lastShard: last, to: to[0]! } },
    };
  }
  if (to.length > 0) throw new UsageError('--to goes with --shards or --split');
  if (options.finish) return { action: { $case: 'finish', finish: {} } };
  if (options.abort) return { action: { $case: 'abort', abort: {} } };
  return { action: { $case: 'status', status: {} } };
}

function shardRange(text: string): { first: number; last: number } {
  const match = /^\s*([^-\s]+)\s*(?:-\s*([^-\s]+)\s*)?$/.exec(text);
  if (!match)
    throw new UsageError(
      `--shards: expected <first>-<last> or one shard, got ${JSON.stringify(text)}`,
    );
  const first = integerArgument(match[1]!, '--shards', 0, UINT32_MAX);
  const last =
    match[2] === undefined ? first : integerArgument(match[2], '--shards', 0, UINT32_MAX);
  if (last < first) throw new UsageError(`--shards: ${first}-${last} is empty (first after last)`);
  return { first, last };
}

function phaseName(phase: MovePhase): string {
  return MovePhase[phase]?.replace(/^MOVE_PHASE_/, '').toLowerCase() ?? String(phase);
}

function progressLine(progress: MoveShardsProgress): string {
  const parts = [
    `shard ${progress.shard}`,
    `${phaseName(progress.phase)} (${progress.step})`,
    `partition ${progress.sourcePartition} -> ${progress.targetPartition}`,
    `${progress.rowsCopied} rows copied`,
    `lag ${progress.lag}`,
  ];
  if (progress.phase === MovePhase.MOVE_PHASE_CUT_OVER && progress.holdMs > 0) {
    parts.push(`writes held ${progress.holdMs.toFixed(1)} ms`);
  }
  return parts.join(', ');
}
