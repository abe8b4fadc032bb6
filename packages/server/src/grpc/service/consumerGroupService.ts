// The consumer groups' RPCs: a member's Consume stream, mapped message by message onto its
// engine session (engine/groups/), and the unary calls that describe a group, list and replay
// its parked cells and reset its cursors. Decisions live in the engine; this maps requests and
// events, and cuts deliveries into messages that fit.
import type {
  ConsumeRequest,
  ConsumeResponse,
  ConsumerGroupShard,
  DescribeConsumerGroupRequest,
  DescribeConsumerGroupResponse,
  ListParkedCellsRequest,
  ListParkedCellsResponse,
  ReplayParkedCellRequest,
  ReplayParkedCellResponse,
  ResetConsumerGroupRequest,
  ResetConsumerGroupResponse,
} from '@shameless/proto';
import { StartFrom } from '@shameless/proto';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import { type RowId, exactInteger } from '../../engine/base/exactInteger.js';
import {
  ANSWER_BYTES_PER_CELL,
  type Engine,
  type GroupEvent,
  LAG_COUNT_CAP,
  type MemberSession,
  type ShardDescription,
} from '../../engine/index.js';
import type { CallContext } from '../call/callContext.js';
import { chunksWithin } from './messageChunks.js';
import { toCell, toWireInteger } from './protoMapping.js';

/** A member's stream: its join, then its answers; the session's events back. */
export async function* consume(
  engine: Engine,
  first: ConsumeRequest,
  rest: AsyncIterable<ConsumeRequest>,
  context: CallContext,
  maxMessageBytes: number,
): AsyncGenerator<ConsumeResponse> {
  if (first.message?.$case !== 'join') {
    throw new InvalidArgumentError('message', 'the first message of a Consume stream must be join');
  }
  const join = first.message.join;
  const session = await engine.groups.join(context, {
    model: join.model,
    group: join.group,
    memberId: join.memberId,
    from: join.from === StartFrom.START_FROM_LATEST ? 'latest' : 'earliest',
    cells: join.cells,
    maxInFlight: join.maxInFlight,
    perShardInFlight: join.perShardInFlight,
    maxDeliveries: join.maxDeliveries,
    sessionTimeoutMs: join.sessionTimeoutMs,
    peer: context.peer,
  });
  // The member's answers are read beside the events sent: a failure to apply one (an answer
  // that breaks the protocol) ends the stream with its status.
  const events = session.events(context.cancellation.signal);
  let failure: unknown;
  void readAnswers(session, rest).catch((error: unknown) => {
    failure = error;
    void session.close({ countLost: true, reason: 'closed' });
  });
  try {
    for await (const event of events) {
      if (failure !== undefined) break;
      yield* toResponses(event, maxMessageBytes);
    }
    if (failure !== undefined) throw failure;
  } finally {
    // The stream is over whatever ended it: a member that did not leave is one that went away.
    if (!session.isOver) void session.close({ countLost: true, reason: 'closed' });
  }
}

async function readAnswers(
  session: MemberSession,
  rest: AsyncIterable<ConsumeRequest>,
): Promise<void> {
  for await (const request of rest) {
    session.heard();
    const message = request.message;
    switch (message?.$case) {
      case 'ack':
        for (const { shard, epoch, ids } of message.ack.shards) {
          session.acknowledge(shard, exactInteger(epoch), ids.map(exactInteger));
        }
        break;
      case 'failed': {
        const { shard, epoch, id, error } = message.failed;
        void session.failed(shard, exactInteger(epoch), exactInteger(id), error);
        break;
      }
      case 'park': {
        const { shard, epoch, id, reason } = message.park;
        void session.park(shard, exactInteger(epoch), exactInteger(id), reason);
        break;
      }
      case 'released':
        // Checked now (a release that was not asked for ends the stream); its cursor write is
        // not waited for: the member's next answers are read meanwhile.
        void session.released(message.released.shard, exactInteger(message.released.epoch));
        break;
      case 'leave':
        await session.leave();
        return;
      case 'heartbeat':
        break;
      case 'join':
        throw new InvalidArgumentError(
          'join',
          'a member joins once per stream: open another stream to join again',
        );
      default:
        throw new InvalidArgumentError('message', 'is not a ConsumeRequest this server knows');
    }
  }
  // Half-closed without leaving: the member is gone.
  await session.close({ countLost: true, reason: 'closed' });
}

function* toResponses(event: GroupEvent, maxMessageBytes: number): Generator<ConsumeResponse> {
  switch (event.kind) {
    case 'joined':
      yield {
        message: {
          $case: 'joined',
          joined: {
            memberId: event.memberId,
            sessionTimeoutMs: event.sessionTimeoutMs,
            heartbeatIntervalMs: event.heartbeatIntervalMs,
          },
        },
      };
      return;
    case 'assigned':
      yield {
        message: {
          $case: 'assigned',
          assigned: {
            shard: event.shard,
            epoch: toWireInteger(event.epoch),
            cursor: toWireInteger(event.cursor),
          },
        },
      };
      return;
    case 'revoked':
      yield {
        message: {
          $case: 'revoked',
          revoked: { shard: event.shard, epoch: toWireInteger(event.epoch) },
        },
      };
      return;
    case 'lost':
      yield {
        message: {
          $case: 'lost',
          lost: { shard: event.shard, epoch: toWireInteger(event.epoch), reason: event.reason },
        },
      };
      return;
    case 'deliveries':
      for (const deliveries of chunksWithin(
        event.deliveries,
        (delivery) => delivery.cell.body.length + ANSWER_BYTES_PER_CELL,
        maxMessageBytes,
      )) {
        yield {
          message: {
            $case: 'deliveries',
            deliveries: {
              deliveries: deliveries.map((delivery) => ({
                cell: toCell(delivery.cell),
                epoch: toWireInteger(delivery.epoch),
                attempt: delivery.attempt,
                replay: delivery.replay,
              })),
            },
          },
        };
      }
      return;
    case 'committed':
      yield {
        message: {
          $case: 'committed',
          committed: {
            shard: event.shard,
            epoch: toWireInteger(event.epoch),
            cursor: toWireInteger(event.cursor),
            replays: event.replays.map(toWireInteger),
          },
        },
      };
      return;
    case 'parked':
      yield {
        message: {
          $case: 'parked',
          parked: {
            shard: event.shard,
            epoch: toWireInteger(event.epoch),
            id: toWireInteger(event.id),
            attempts: event.attempts,
            error: event.error,
          },
        },
      };
      return;
    case 'heartbeat':
      yield { message: { $case: 'heartbeat', heartbeat: { at: event.at } } };
      return;
    case 'left':
      yield { message: { $case: 'left', left: {} } };
      return;
  }
}

export async function describeConsumerGroup(
  engine: Engine,
  request: DescribeConsumerGroupRequest,
  context: CallContext,
): Promise<DescribeConsumerGroupResponse> {
  const description = await engine.groups.describe(context, request.model, request.group);
  return {
    model: request.model,
    group: request.group,
    members: description.members.map((member) => ({
      memberId: member.memberId,
      joinedAt: member.joinedAt,
      expiresAt: member.expiresAt,
      server: member.server,
      peer: member.peer,
      shards: member.shards,
    })),
    shards: description.shards.map(toGroupShard),
  };
}

/** Page tokens of parked cells: `<shard>:<id>` of the last cell of the page before. */
function parsePageToken(token: string): { shard: number; id: RowId } | undefined {
  if (token === '') return undefined;
  const match = /^(\d{1,10}):(\d{1,20})$/.exec(token);
  if (!match) throw new InvalidArgumentError('page_token', 'is not a token this server gave');
  return { shard: Number(match[1]), id: exactInteger(match[2]!) };
}

export async function listParkedCells(
  engine: Engine,
  request: ListParkedCellsRequest,
  context: CallContext,
): Promise<ListParkedCellsResponse> {
  const page = await engine.groups.parked(
    context,
    request.model,
    request.group,
    request.shard,
    request.limit,
    parsePageToken(request.pageToken),
  );
  return {
    cells: page.cells.map(({ row, cell }) => ({
      cell: cell
        ? toCell(cell)
        : {
            id: toWireInteger(row.id),
            shard: row.shard,
            uuid: '',
            name: '',
            refKey: 0,
            createdAt: undefined,
            body: Buffer.alloc(0),
          },
      attempts: row.attempts,
      error: row.error,
      parkedAt: row.parkedAt,
      replayPending: row.replay,
    })),
    nextPageToken: page.next ? `${page.next.shard}:${page.next.id}` : '',
  };
}

export async function replayParkedCell(
  engine: Engine,
  request: ReplayParkedCellRequest,
  context: CallContext,
): Promise<ReplayParkedCellResponse> {
  await engine.groups.replay(
    context,
    request.model,
    request.group,
    request.shard,
    exactInteger(request.id),
  );
  return {};
}

export async function resetConsumerGroup(
  engine: Engine,
  request: ResetConsumerGroupRequest,
  context: CallContext,
): Promise<ResetConsumerGroupResponse> {
  const to = request.to;
  let target: { position: 'earliest' | 'latest' } | { shard: number; cursor: RowId };
  switch (to?.$case) {
    case 'position':
      if (to.position === StartFrom.START_FROM_EARLIEST) target = { position: 'earliest' };
      else if (to.position === StartFrom.START_FROM_LATEST) target = { position: 'latest' };
      else
        throw new InvalidArgumentError(
          'position',
          'must be START_FROM_EARLIEST or START_FROM_LATEST',
        );
      break;
    case 'shard':
      target = { shard: to.shard.shard, cursor: exactInteger(to.shard.cursor) };
      break;
    default:
      throw new InvalidArgumentError('to', 'set position or shard');
  }
  const shards = await engine.groups.reset(context, request.model, request.group, target);
  return { shards: shards.map(toGroupShard) };
}

function toGroupShard(shard: ShardDescription): ConsumerGroupShard {
  return {
    shard: shard.shard,
    owner: shard.owner ?? '',
    epoch: toWireInteger(shard.epoch),
    cursor: toWireInteger(shard.cursor),
    maxId: toWireInteger(shard.backlog.maxId),
    lag: BigInt(shard.backlog.count),
    lagCapped: shard.backlog.count >= LAG_COUNT_CAP,
    parked: shard.parked,
  };
}
