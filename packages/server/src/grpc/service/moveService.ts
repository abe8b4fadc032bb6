// MoveShards: the request read into a mover's action, its progress streamed as it goes, and a
// last message with the map the store serves now.
import { MovePhase, type MoveShardsProgress, type MoveShardsRequest } from '@shameless/proto';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import type { Engine, MoveAction, MoveProgress, MoveSummary } from '../../engine/index.js';
import { progressStream } from '../../engine/moves/progressStream.js';
import type { CallContext } from '../call/callContext.js';

const PHASES: Readonly<Record<MoveSummary['phase'], MovePhase>> = {
  copying: MovePhase.MOVE_PHASE_COPYING,
  catching_up: MovePhase.MOVE_PHASE_CATCHING_UP,
  verified: MovePhase.MOVE_PHASE_VERIFIED,
  cut_over: MovePhase.MOVE_PHASE_CUT_OVER,
  finished: MovePhase.MOVE_PHASE_FINISHED,
  aborted: MovePhase.MOVE_PHASE_ABORTED,
};

export async function* moveShards(
  engine: Engine,
  request: MoveShardsRequest,
  { cancellation }: CallContext,
): AsyncGenerator<MoveShardsProgress> {
  const action = moveAction(request);
  const signal = cancellation.signal;
  const events = progressStream((onProgress) => engine.moves.run(action, onProgress, signal));
  for (;;) {
    const next = await events.next();
    if (next.done) {
      const outcome = next.value;
      for (const shard of outcome.shards) yield fromSummary(shard);
      yield {
        ...emptyProgress(),
        done: true,
        mapVersion: BigInt(outcome.mapVersion),
        gemPartitionList: [...(outcome.gemOrder ?? [])],
      };
      return;
    }
    yield fromProgress(next.value);
  }
}

function moveAction(request: MoveShardsRequest): MoveAction {
  const action = request.action;
  switch (action?.$case) {
    case 'move': {
      const { firstShard, lastShard, to } = action.move;
      if (lastShard < firstShard) {
        throw new InvalidArgumentError(
          'move.last_shard',
          `must not be below first_shard (${lastShard} < ${firstShard})`,
        );
      }
      if (to === '') throw new InvalidArgumentError('move.to', 'give the mysql:// URL to move to');
      const shards = Array.from({ length: lastShard - firstShard + 1 }, (_, i) => firstShard + i);
      return { kind: 'move', shards, to };
    }
    case 'split':
      action.split.to.forEach((to, i) => {
        if (to === '') throw new InvalidArgumentError(`split.to[${i}]`, 'is empty');
      });
      return { kind: 'split', to: action.split.to };
    case 'finish':
      return { kind: 'finish' };
    case 'abort':
      return { kind: 'abort' };
    case 'status':
      return { kind: 'status' };
    default:
      throw new InvalidArgumentError('action', 'give one of move, split, finish, abort, status');
  }
}

function emptyProgress(): MoveShardsProgress {
  return {
    shard: 0,
    phase: MovePhase.MOVE_PHASE_UNSPECIFIED,
    step: '',
    rowsCopied: 0n,
    lag: 0n,
    holdMs: 0,
    sourcePartition: 0,
    targetPartition: 0,
    mapVersion: 0n,
    gemPartitionList: [],
    done: false,
  };
}

function fromProgress(progress: MoveProgress): MoveShardsProgress {
  return {
    ...emptyProgress(),
    shard: progress.shard,
    phase: PHASES[progress.phase],
    step: progress.step,
    rowsCopied: BigInt(progress.rowsCopied),
    lag: BigInt(Math.max(0, progress.lag)),
    holdMs: progress.holdMs ?? 0,
    sourcePartition: progress.source,
    targetPartition: progress.target,
  };
}

function fromSummary(summary: MoveSummary): MoveShardsProgress {
  return {
    ...emptyProgress(),
    shard: summary.shard,
    phase: PHASES[summary.phase],
    step: 'summary',
    rowsCopied: BigInt(summary.rowsCopied),
    holdMs: summary.holdMs ?? 0,
    sourcePartition: summary.source,
    targetPartition: summary.target,
  };
}
