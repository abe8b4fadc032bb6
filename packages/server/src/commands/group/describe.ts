// `shameless group describe MODEL GROUP`: a consumer group's members and, per content shard, its
// owner, cursor, lag and parked cells (DescribeConsumerGroup), as JSON with a row a line.
import type { Command } from 'commander';
import { runClientCommand } from '../clientCommand.js';
import { addConnectionOptions } from '../connection.js';
import { stringifyExactJson } from '../exactJson.js';
import {
  GROUP_FIELDS,
  ROW_DEPTH,
  addGroupArguments,
  groupHint,
  shardToJson,
} from './groupCommand.js';

export function registerGroupDescribe(group: Command): void {
  const command = addConnectionOptions(
    addGroupArguments(
      group
        .command('describe')
        .summary("a group's members and, per shard, its owner, cursor, lag and parked cells")
        .description(
          'Prints consumer group GROUP of MODEL as JSON, a member or a shard a line.\n\n' +
            'members: those connected now, each with memberId, shards (those it owns), joinedAt, ' +
            'expiresAt (when its session ends unless its server hears from it), server (the `serve` ' +
            'process holding its stream, host:pid) and peer (where the stream comes from).\n\n' +
            'shards: every content shard, with owner (a member id; null while the shard waits for ' +
            'one), epoch (bumped by every change of owner), cursor (every cell with an id up to it is ' +
            "handled: acknowledged or parked), maxId (the shard's highest id), lag (cells after the " +
            'cursor, counted up to 1000000; lagCapped when there are more) and parked (its parked ' +
            'cells, which `group parked` lists).\n\n' +
            'NOT_FOUND when no member ever joined the group.\n\n' +
            'Examples:\n' +
            '  shameless group describe rate billing\n' +
            "  shameless group describe rate billing | jq -c '.shards[] | select(.lag > 0)'",
        ),
    ),
  );
  command.action((model: string, groupName: string) =>
    runClientCommand(
      command,
      GROUP_FIELDS,
      async (connection) => {
        const response = await connection.unary(connection.client.describeConsumerGroup, {
          model,
          group: groupName,
        });
        const json = {
          model: response.model,
          group: response.group,
          members: response.members.map((member) => ({
            memberId: member.memberId,
            shards: member.shards,
            joinedAt: member.joinedAt,
            expiresAt: member.expiresAt,
            server: member.server,
            peer: member.peer,
          })),
          shards: response.shards.map(shardToJson),
        };
        console.log(stringifyExactJson(json, 2, ROW_DEPTH));
      },
      groupHint(model, groupName),
    ),
  );
}
