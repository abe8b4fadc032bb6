// What the `shameless group` commands share: their <model> <group> arguments, the hint for their
// failures, and a group's shard as they print it.
import { type ServiceError, status } from '@grpc/grpc-js';
import type { ConsumerGroupShard } from '@shameless/proto';
import type { Command } from 'commander';
import type { CommandHint } from '../clientCommand.js';

/** Where the request fields every group call has come from, for the hint when one is refused. */
export const GROUP_FIELDS = { model: '<model>', group: '<group>' } as const;

/** Rows of a printed group (its members, its shards) each go on one line: see stringifyExactJson. */
export const ROW_DEPTH = 2;

export function addGroupArguments(command: Command): Command {
  return command
    .argument('<model>', 'the model name')
    .argument('<group>', "the consumer group's name");
}

/**
 * Hints for what the common ones would get wrong here: a NOT_FOUND of a group or of a parked
 * cell (not of a model), and a reset refused because members are connected.
 */
export function groupHint(model: string, group: string): CommandHint {
  const describe = `\`shameless group describe ${shellWord(model)} ${shellWord(group)}\``;
  return (error: ServiceError) => {
    if (error.code === status.NOT_FOUND && /^consumer group /.test(error.details)) {
      return (
        'check the spelling of <model> and <group>: another spelling is another group, one no ' +
        'member joined yet'
      );
    }
    if (error.code === status.NOT_FOUND && / is not parked /.test(error.details)) {
      return (
        `\`shameless group parked ${shellWord(model)} ${shellWord(group)}\` lists the parked ` +
        'cells (a replayed cell stops being parked once its member acknowledges it)'
      );
    }
    if (error.code === status.FAILED_PRECONDITION) {
      return (
        `${describe} lists the members connected and when each session ends (expiresAt); stop ` +
        'them, or wait until then, and reset again'
      );
    }
    return undefined;
  };
}

/** A shard of a group as printed: the owner null while the shard waits for one. */
export function shardToJson(shard: ConsumerGroupShard): Record<string, unknown> {
  return {
    shard: shard.shard,
    owner: shard.owner === '' ? null : shard.owner,
    epoch: shard.epoch,
    cursor: shard.cursor,
    maxId: shard.maxId,
    lag: shard.lag,
    lagCapped: shard.lagCapped,
    parked: shard.parked,
  };
}

/** A name as typed in a shell: quoted when it holds anything but letters, digits and ._- */
function shellWord(word: string): string {
  return /^[A-Za-z0-9._-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
