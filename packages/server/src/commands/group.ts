// `shameless group`: the commands that look after a model's consumer groups (groups.proto). A
// group's members are processes speaking the Consume stream; these commands inspect the group,
// its parked cells and its cursors.
import type { Command } from 'commander';
import { registerGroupDescribe } from './group/describe.js';
import { registerGroupParked } from './group/parked.js';
import { registerGroupReplay } from './group/replay.js';
import { registerGroupReset } from './group/reset.js';

export function registerGroup(program: Command): void {
  const group = program
    .command('group')
    .summary('a consumer group: its members, shards, parked cells and cursors')
    .description(
      'A consumer group is a durable name under a model whose members (processes with a Consume ' +
        'stream) together handle every cell of every content shard at least once: each shard is ' +
        "owned by one member at a time, and the group's cursor per shard says up to where its cells " +
        'are handled. A cell that keeps failing is parked and its shard goes on. These commands ' +
        'inspect a group and repair it; its members are your own processes, clients of the ' +
        'Consume stream (examples/python/group_member.py is one).\n\n' +
        'Examples:\n' +
        '  shameless group describe rate billing\n' +
        '  shameless group parked rate billing\n' +
        '  shameless group replay rate billing --shard 3 --id 1234\n' +
        '  shameless group reset rate billing --to latest',
    );
  // Bare `shameless group` asks what there is, as bare `shameless` does: help on stdout, success.
  // Anything else that is not one of its commands is refused as commander refuses it elsewhere.
  group.allowExcessArguments().action(() => {
    const [word] = group.args;
    if (word === undefined) group.help();
    group.error(`error: unknown command '${word}'`);
  });
  registerGroupDescribe(group);
  registerGroupParked(group);
  registerGroupReplay(group);
  registerGroupReset(group);
}
