#!/usr/bin/env node
// `pnpm fuzz`: the contract fuzzer for as long as asked (30 minutes by default), against a real
// `shameless serve` over a throwaway database of the test MySQL. The seed comes first in its
// output, so that any run replays; a failure prints its shrunk case and the command that
// replays it alone.
import { randomInt } from 'node:crypto';
import { testMysqlUrl } from '@shameless/testkit';
import { Command, type CommanderError, InvalidArgumentError } from 'commander';
import { ROUND_RUNS, formatFigures, runCampaign } from './campaign.js';
import { RSS_CEILING_BYTES, SERVER_BOUNDS } from './target.js';

const wholeNumber = (what: string) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) {
    throw new InvalidArgumentError(`expected ${what}`);
  }
  return parsed;
};

const program = new Command('pnpm fuzz')
  .description(
    'Fuzz the gRPC contract: mutated and random requests for every RPC of shameless.v1.Store ' +
      '(Pipeline and Consume included) against a `shameless serve` process over a throwaway ' +
      'database of the test MySQL (MYSQL_URL, else 127.0.0.1:3306). After every request: the ' +
      'process lives and answers DescribeStore, no status is INTERNAL, UNKNOWN or outside the ' +
      "contract's table, INVALID_ARGUMENT names its field, no message holds a stack trace, SQL or " +
      'a credential, a refused write left no row and an acknowledged one is stored, every body ' +
      "answered reads with the SDK's decoder, and the server's peak RSS stays under its ceiling. " +
      'Every few requests the store is swept: versions without gaps, one index row per record, ' +
      'no index row without its record, every stored body readable. docs/development.md has more.',
  )
  .option(
    '--minutes <n>',
    'how long to fuzz, in minutes (whole rounds of 100 requests)',
    wholeNumber('a whole number of minutes'),
    30,
  )
  .option(
    '--seed <n>',
    'the seed of the requests (random when absent; printed first)',
    wholeNumber('a whole number'),
  )
  .option(
    '--cases <n>',
    'stop after this many requests instead of after --minutes',
    wholeNumber('a whole number'),
  )
  .option(
    '--round <n>',
    'with --path: the round of the failure to replay',
    wholeNumber('a whole number'),
  )
  .option('--path <path>', "replay one failure: its fast-check path, from the failure's report")
  .option(
    '--max-depth <n>',
    'the deepest nesting of a body drawn (16 to 200000 levels are tried; the server refuses any past its --max-body-depth)',
    wholeNumber('a whole number of levels'),
    200_000,
  )
  .option(
    '--deep-bodies-only',
    'only writes (every RPC that takes a body) of bodies nested 16 to --max-depth levels deep, each otherwise valid',
  )
  .option(
    '--audit-every <n>',
    'sweep the store every this many requests',
    wholeNumber('a whole number'),
    25,
  )
  .option(
    '--progress-seconds <n>',
    'seconds between progress lines',
    wholeNumber('a whole number'),
    5,
  )
  .addHelpText(
    'after',
    `
Every request is one case drawn by fast-check from the seed; cases come in rounds
of ${ROUND_RUNS}, each with a seed made from --seed and the round's number. A failing case
is shrunk, then printed with its RPC, its bytes in hex, their decoded view, the
statuses, and the command that replays it alone: pnpm fuzz --seed N --round R
--path P. pnpm fuzz --seed N sends the same requests again from the start.

The server runs with --max-message-bytes ${SERVER_BOUNDS.maxMessageBytes}, --max-in-flight-bytes
${SERVER_BOUNDS.maxInFlightBytes} and the other bounds in packages/server/test/fuzz/target.ts;
its peak RSS (VmHWM) must stay under ${RSS_CEILING_BYTES / 1024 / 1024} MiB.

Exits 0 when every request kept every invariant, 1 on a failure, 2 on a bad
flag, 130 when stopped with Ctrl-C.`,
  )
  .showHelpAfterError('(pnpm fuzz --help lists every flag)')
  .exitOverride();

async function main(): Promise<number> {
  try {
    program.parse();
  } catch (error) {
    // --help (exit code 0), or a flag commander refused, having said why.
    return (error as CommanderError).exitCode === 0 ? 0 : 2;
  }
  const options = program.opts<{
    minutes: number;
    seed?: number;
    cases?: number;
    round?: number;
    path?: string;
    auditEvery: number;
    maxDepth: number;
    deepBodiesOnly?: boolean;
    progressSeconds: number;
  }>();
  if (options.path !== undefined && options.round === undefined) {
    console.error('error: --path needs the --round it came from (both are in the failure report)');
    return 2;
  }
  const seed = options.seed ?? randomInt(2 ** 31);
  console.log(`fuzz: seed ${seed} (pnpm fuzz --seed ${seed} runs these requests again)`);
  const limit =
    options.path !== undefined
      ? 'replaying one case'
      : options.cases !== undefined
        ? `${options.cases} requests`
        : `${options.minutes} minutes`;
  console.log(
    `fuzz: ${limit} against MySQL ${await testMysqlUrl()}; progress every ${options.progressSeconds} s`,
  );
  let stop = false;
  const onSignal = () => {
    if (stop) process.exit(130);
    stop = true;
    console.log('fuzz: stopping after this request (again to stop at once, leaving the database)');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const result = await runCampaign({
    seed,
    ...(options.cases !== undefined
      ? { cases: options.cases }
      : { durationMs: options.minutes * 60_000 }),
    ...(options.path !== undefined ? { round: options.round, path: options.path } : {}),
    auditEvery: Math.max(1, options.auditEvery),
    maxDepth: options.maxDepth,
    deepBodiesOnly: options.deepBodiesOnly ?? false,
    progress: (figures) => console.log(formatFigures(figures)),
    progressEveryMs: Math.max(1, options.progressSeconds) * 1000,
    stopRequested: () => stop,
  });
  console.log(formatFigures(result.figures));
  if (result.failure) {
    console.log(`\n${result.failure}`);
    console.log(`\nfuzz: FAILED (seed ${seed})`);
    return 1;
  }
  if (stop) {
    console.log(
      `fuzz: stopped: seed ${seed}, ${result.figures.cases} requests, no invariant broken`,
    );
    return 130;
  }
  console.log(
    `fuzz: passed: seed ${seed}, ${result.figures.cases} requests in ${result.rounds} rounds, no invariant broken`,
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`fuzz: could not run: ${error instanceof Error ? error.message : String(error)}`);
    console.error('Is MySQL up (MYSQL_URL, else root@127.0.0.1:3306), and was `pnpm build` run?');
    process.exit(1);
  },
);
