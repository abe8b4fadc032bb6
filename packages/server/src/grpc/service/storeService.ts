// The Store service over grpc-js: each unary RPC runs its function of unaryCalls.ts, the two
// server streams are produced here, and the Pipeline carries calls of the unary methods.
import type {
  ConsumeRequest,
  ConsumeResponse,
  EachResponse,
  MoveShardsRequest,
  StoreServer,
  WhereResponse,
} from '@shameless/proto';
import {
  ANSWER_BYTES_PER_CELL,
  EACH_CELLS_HELD_BYTES,
  SESSION_CELLS_HELD_BYTES,
  type Engine,
  type FoundRecord,
  type StoredCell,
} from '../../engine/index.js';
import { consume } from './consumerGroupService.js';
import { moveShards } from './moveService.js';
import type { HandlerFactory } from './handlers.js';
import { chunksWithin } from './messageChunks.js';
import type { PipelineHandler } from './pipeline.js';
import {
  fromWireCursors,
  toCell,
  toRecord,
  toWhereInput,
  toWireCursors,
  toWireInteger,
} from './protoMapping.js';
import { type UnaryCalls, type UnaryMethod, protoMethodName } from './unaryCalls.js';

// Records per streamed Where message: big enough to amortise framing, small enough to start
// delivering early. Messages are also cut by bytes, to fit the largest message the server sends.
const WHERE_RECORDS_PER_MESSAGE = 100;

const cellBytes = (cell: StoredCell) => cell.body.length + ANSWER_BYTES_PER_CELL;
const recordBytes = (record: FoundRecord) =>
  record.cells.reduce((sum, cell) => sum + cellBytes(cell), 0);

export function createStoreService(
  engine: Engine,
  handlers: HandlerFactory,
  calls: UnaryCalls,
  pipeline: PipelineHandler,
  maxMessageBytes: number,
): StoreServer {
  const unary = <M extends UnaryMethod>(method: M) =>
    handlers.unary(protoMethodName(method), calls[method] as UnaryCalls[M]);
  return {
    defineModel: unary('defineModel'),
    describeStore: unary('describeStore'),
    findShard: unary('findShard'),
    put: unary('put'),
    putMany: unary('putMany'),
    writeCell: unary('writeCell'),
    writeCells: unary('writeCells'),
    getCell: unary('getCell'),
    getCells: unary('getCells'),
    previous: unary('previous'),
    whereMany: unary('whereMany'),
    fetchLatestCells: unary('fetchLatestCells'),
    pipeline,
    describeConsumerGroup: unary('describeConsumerGroup'),
    listParkedCells: unary('listParkedCells'),
    replayParkedCell: unary('replayParkedCell'),
    resetConsumerGroup: unary('resetConsumerGroup'),

    // A member lasts as long as its process keeps the stream: admitted as a stream, as Each.
    consume: handlers.bidiStream<ConsumeRequest, ConsumeResponse>(
      'Consume',
      (first, rest, context) => consume(engine, first, rest, context, maxMessageBytes),
      { longLived: true, readAheadBytes: SESSION_CELLS_HELD_BYTES },
    ),

    // A move lasts as long as its copy: admitted as a stream; cancelled, the mover stops where
    // it is (its state is in the store, and the same request resumes it).
    moveShards: handlers.serverStream(
      'MoveShards',
      (request: MoveShardsRequest, context) => moveShards(engine, request, context),
      { longLived: true },
    ),

    where: handlers.serverStream(
      'Where',
      async function* (request, context): AsyncGenerator<WhereResponse> {
        const page = await engine.where(context, toWhereInput(request));
        let sent = 0;
        for (const records of chunksWithin(
          page.records,
          recordBytes,
          maxMessageBytes,
          WHERE_RECORDS_PER_MESSAGE,
        )) {
          sent += records.length;
          yield {
            records: records.map(toRecord),
            nextPageToken: sent === page.records.length ? page.nextPageToken : '',
          };
        }
        if (sent === 0 && page.nextPageToken)
          yield { records: [], nextPageToken: page.nextPageToken };
      },
    ),

    each: handlers.serverStream(
      'Each',
      async function* (request, context): AsyncGenerator<EachResponse> {
        const events = await engine.each(
          context,
          request.model,
          {
            shards: request.shards,
            cursors: fromWireCursors(request.cursors),
            follow: request.follow,
            batchSize: request.batchSize,
            heartbeatIntervalMs: request.heartbeatIntervalMs,
          },
          context.cancellation.signal,
        );
        for await (const event of events) {
          if (event.kind === 'batch') {
            // A batch cut in several goes on as several of the same shard, each its cursor.
            for (const cells of chunksWithin(event.cells, cellBytes, maxMessageBytes)) {
              yield {
                event: {
                  $case: 'batch',
                  batch: {
                    shard: event.shard,
                    cells: cells.map(toCell),
                    cursor: toWireInteger(cells[cells.length - 1]!.id),
                  },
                },
              };
            }
          } else {
            yield {
              event: {
                $case: 'heartbeat',
                heartbeat: { at: event.at, cursors: toWireCursors(event.cursors) },
              },
            };
          }
        }
      },
      // A log read to its end, or followed until cancelled, lasts as long as its client
      // wants: it is admitted as a stream, not as a call.
      { longLived: true, readAheadBytes: EACH_CELLS_HELD_BYTES },
    ),
  };
}
