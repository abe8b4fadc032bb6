#!/usr/bin/env node
// The `shameless` command line: the program and its commands, one file each under commands/.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerDefine } from './commands/define.js';
import { registerDescribe } from './commands/describe.js';
import { registerFindShard } from './commands/findShard.js';
import { registerGet } from './commands/get.js';
import { registerGroup } from './commands/group.js';
import { registerMoveShards } from './commands/moveShards.js';
import { registerPlan } from './commands/plan.js';
import { registerPut } from './commands/put.js';
import { registerServe } from './commands/serve.js';
import { registerTail } from './commands/tail.js';
import { exitAfterCommander } from './commands/usageError.js';
import { registerWhere } from './commands/where.js';

const { version } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string };

const program = new Command('shameless')
  .description(
    'Shameless: a schemaless, sharded, append-only cell store on MySQL, served over gRPC.\n' +
      'Run a server with `shameless serve`; the other commands call one (--address, default 127.0.0.1:50051).',
  )
  .version(version)
  .showHelpAfterError('(run with --help for usage)')
  .addHelpText(
    'after',
    '\nExit codes: 0 done; 1 a call failed (its status, details and a hint on stderr);\n' +
      '2 input refused before any call (an unknown option or command, a missing or malformed\n' +
      'argument). `serve` exits 2 on a bad setting, 1 when it cannot start; `plan --help` has its own.',
  )
  // Set before the commands are added: each inherits it.
  .exitOverride(exitAfterCommander);

registerServe(program);
registerPlan(program);
registerDescribe(program);
registerFindShard(program);
registerDefine(program);
registerGet(program);
registerPut(program);
registerWhere(program);
registerTail(program);
registerGroup(program);
registerMoveShards(program);

// `shameless tail ... | head` closes stdout early: that ends the command, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

// Bare `shameless` asks what there is: the help on stdout, and success.
if (process.argv.length <= 2) program.help();
await program.parseAsync(process.argv);
