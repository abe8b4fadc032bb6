// The calls answered with one message, as one table of async functions keyed as the Pipeline's
// oneof names them: the unary methods, and a Where page read whole. Each maps its request onto
// one engine call and the result back onto its response; decisions live in the engine. A unary
// RPC (storeService.ts) and a call over a Pipeline (pipeline.ts) run the same function.
import {
  GaleraNode_Health,
  type PipelineRequest,
  type PipelineResponse,
  Replica_State,
} from '@shameless/proto';
import type { Engine } from '../../engine/engine.js';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import { exactInteger } from '../../engine/base/exactInteger.js';
import type { CallContext } from '../call/callContext.js';
import {
  describeConsumerGroup,
  listParkedCells,
  replayParkedCell,
  resetConsumerGroup,
} from './consumerGroupService.js';
import {
  toCell,
  toModelDefinition,
  toModelSpec,
  toPutResponse,
  toPutResult,
  toRecord,
  toWhereInput,
  toWireInteger,
  toWriteCellInput,
  toWriteCellResponse,
  toWriteCellResult,
} from './protoMapping.js';

type PipelineCall = NonNullable<PipelineRequest['call']>;
type PipelineResult = NonNullable<PipelineResponse['result']>;

/** The lowerCamel names of the calls: `getCell`, `putMany`, ..., and `where` (a page whole). */
export type UnaryMethod = Exclude<PipelineCall['$case'], 'cancel'>;

/** The request of a unary method (`UnaryRequestOf<'put'>` is `PutRequest`). */
export type UnaryRequestOf<M extends UnaryMethod> =
  Extract<PipelineCall, { $case: M }> extends Record<M, infer Request> ? Request : never;

/** The response of a unary method. */
export type UnaryResponseOf<M extends UnaryMethod> =
  Extract<PipelineResult, { $case: M }> extends Record<M, infer Response> ? Response : never;

export type UnaryCalls = {
  readonly [M in UnaryMethod]: (
    request: UnaryRequestOf<M>,
    context: CallContext,
  ) => Promise<UnaryResponseOf<M>>;
};

/** `getCell` → `GetCell`: the method's name as the proto spells it, for layers and logs. */
export function protoMethodName(method: UnaryMethod): string {
  return method[0]!.toUpperCase() + method.slice(1);
}

const REPLICA_STATES = {
  serving: Replica_State.STATE_SERVING,
  lagging: Replica_State.STATE_LAGGING,
  down: Replica_State.STATE_DOWN,
} as const;

const NODE_HEALTHS = {
  current: GaleraNode_Health.HEALTH_CURRENT,
  standby: GaleraNode_Health.HEALTH_STANDBY,
  down: GaleraNode_Health.HEALTH_DOWN,
} as const;

export function unaryCalls(engine: Engine): UnaryCalls {
  return {
    defineModel: async (request, context) => {
      const { model, changed } = await engine.defineModel(context, toModelSpec(request.model));
      return { model: toModelDefinition(model), changed };
    },

    describeStore: async (_request, context) => {
      const description = await engine.describe(context);
      return {
        namespace: description.namespace,
        shardsCount: description.shardsCount,
        partitionMapVersion: description.partitionMapVersion,
        partitions: description.partitions.map((partition) => ({
          ...partition,
          replicas: partition.replicas.map(({ replica, host, port, state, lagMs }) => ({
            index: replica,
            host,
            port,
            state: REPLICA_STATES[state],
            ...(Number.isFinite(lagMs) ? { lagMs: BigInt(Math.round(lagMs)) } : {}),
          })),
          nodes: partition.nodes.map(({ node, host, port, health, state }) => ({
            index: node,
            host,
            port,
            health: NODE_HEALTHS[health],
            state,
          })),
        })),
        models: description.models.map(toModelDefinition),
        maxCellBytes: description.maxCellBytes,
        maxBodyDepth: description.bodyLimits.maxDepth,
        maxBodyValues: description.bodyLimits.maxValues,
      };
    },

    findShard: async (request) => {
      switch (request.key?.$case) {
        case 'value':
          return engine.findShard({ value: request.key.value });
        case 'uuid':
          return engine.findShard({ uuid: request.key.uuid });
        default:
          throw new InvalidArgumentError('key', 'set value or uuid');
      }
    },

    put: async (request, context) => {
      const result = await engine.put(context, request.model, request.values, request.requestId);
      return toPutResponse(result, request);
    },

    putMany: async (request, context) => {
      const outcomes = await engine.putMany(context, request.puts);
      return { results: outcomes.map((outcome, i) => toPutResult(outcome, request.puts[i]!)) };
    },

    writeCell: async (request, context) => {
      const result = await engine.writeCell(context, toWriteCellInput(request));
      return toWriteCellResponse(result, request);
    },

    writeCells: async (request, context) => {
      const outcomes = await engine.writeCells(
        context,
        request.writes.map((write, i) => toWriteCellInput(write, `writes[${i}]`)),
      );
      return {
        results: outcomes.map((outcome, i) => toWriteCellResult(outcome, request.writes[i]!)),
      };
    },

    getCell: async (request, context) => {
      const cell = await engine.getCell(
        context,
        request.model,
        request.uuid,
        request.cell,
        request.refKey,
      );
      return { cell: toCell(cell) };
    },

    getCells: async (request, context) => {
      const cells = await engine.getCells(context, request.model, request.keys);
      return { results: cells.map((cell) => ({ cell: cell && toCell(cell) })) };
    },

    previous: async (request, context) => {
      const cell = await engine.previous(
        context,
        request.model,
        request.uuid,
        request.cell,
        request.refKey,
      );
      return cell ? { cell: toCell(cell), none: false } : { cell: undefined, none: true };
    },

    where: async (request, context) => {
      // The page whole, as a Where stream sends it over several messages.
      const page = await engine.where(context, toWhereInput(request));
      return { records: page.records.map(toRecord), nextPageToken: page.nextPageToken };
    },

    whereMany: async (request, context) => {
      const pages = await engine.whereMany(
        context,
        request.queries.map((query, i) => toWhereInput(query, `queries[${i}]`)),
      );
      return {
        pages: pages.map((page) => ({
          records: page.records.map(toRecord),
          nextPageToken: page.nextPageToken,
        })),
      };
    },

    fetchLatestCells: async (request, context) => {
      const page = await engine.fetchLatestCells(
        context,
        request.model,
        request.shard,
        exactInteger(request.cursor),
        request.limit,
      );
      return {
        cells: page.cells.map(toCell),
        nextCursor: toWireInteger(page.nextCursor),
        maxId: toWireInteger(page.maxId),
      };
    },

    describeConsumerGroup: (request, context) => describeConsumerGroup(engine, request, context),
    listParkedCells: (request, context) => listParkedCells(engine, request, context),
    replayParkedCell: (request, context) => replayParkedCell(engine, request, context),
    resetConsumerGroup: (request, context) => resetConsumerGroup(engine, request, context),
  };
}
