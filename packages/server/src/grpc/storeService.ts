// The Store service: each RPC is a mapping of its request onto one engine call and of the
// result back onto its response. Decisions live in the engine.
import type { EachResponse, StoreServer, WhereResponse } from '@shameless/proto';
import type { Engine } from '../engine/engine.js';
import { InvalidArgumentError } from '../engine/errors.js';
import { exactInteger } from '../engine/exactInteger.js';
import { ANSWER_BYTES_PER_CELL } from '../engine/latestCells.js';
import type { StoredCell } from '../engine/sql/contentRows.js';
import type { FoundRecord } from '../engine/whereQuery.js';
import type { HandlerFactory } from './handlers.js';
import { chunksWithin } from './messageChunks.js';
import {
  fromWireCursors,
  toCell,
  toModelDefinition,
  toModelSpec,
  toPutResult,
  toRecord,
  toWhereInput,
  toWireCursors,
  toWireInteger,
  toWriteCellInput,
  toWriteCellResult,
} from './protoMapping.js';

// Records per streamed Where message: big enough to amortise framing, small enough to start
// delivering early. Messages are also cut by bytes, to fit the largest message the server sends.
const WHERE_RECORDS_PER_MESSAGE = 100;

const cellBytes = (cell: StoredCell) => cell.body.length + ANSWER_BYTES_PER_CELL;
const recordBytes = (record: FoundRecord) =>
  record.cells.reduce((sum, cell) => sum + cellBytes(cell), 0);

export function createStoreService(
  engine: Engine,
  handlers: HandlerFactory,
  maxMessageBytes: number,
): StoreServer {
  return {
    defineModel: handlers.unary('DefineModel', async (request) => {
      const { model, changed } = await engine.defineModel(toModelSpec(request.model));
      return { model: toModelDefinition(model), changed };
    }),

    describeStore: handlers.unary('DescribeStore', async () => {
      const description = await engine.describe();
      return {
        namespace: description.namespace,
        shardsCount: description.shardsCount,
        partitions: description.partitions,
        models: description.models.map(toModelDefinition),
        maxCellBytes: description.maxCellBytes,
      };
    }),

    findShard: handlers.unary('FindShard', async (request) => {
      switch (request.key?.$case) {
        case 'value':
          return engine.findShard({ value: request.key.value });
        case 'uuid':
          return engine.findShard({ uuid: request.key.uuid });
        default:
          throw new InvalidArgumentError('key', 'set value or uuid');
      }
    }),

    put: handlers.unary('Put', async (request) => {
      const result = await engine.put(request.model, request.values, request.requestId);
      return { uuid: result.uuid, base: toCell(result.base), created: result.created };
    }),

    putMany: handlers.unary('PutMany', async (request) => {
      const outcomes = await engine.putMany(request.puts);
      return { results: outcomes.map(toPutResult) };
    }),

    writeCell: handlers.unary('WriteCell', async (request) => {
      const result = await engine.writeCell(toWriteCellInput(request));
      return { cell: toCell(result.cell), replayed: result.replayed };
    }),

    writeCells: handlers.unary('WriteCells', async (request) => {
      const outcomes = await engine.writeCells(
        request.writes.map((write, i) => toWriteCellInput(write, `writes[${i}]`)),
      );
      return { results: outcomes.map(toWriteCellResult) };
    }),

    getCell: handlers.unary('GetCell', async (request) => {
      const cell = await engine.getCell(request.model, request.uuid, request.cell, request.refKey);
      return { cell: toCell(cell) };
    }),

    getCells: handlers.unary('GetCells', async (request) => {
      const cells = await engine.getCells(request.model, request.keys);
      return { results: cells.map((cell) => ({ cell: cell && toCell(cell) })) };
    }),

    previous: handlers.unary('Previous', async (request) => {
      const cell = await engine.previous(request.model, request.uuid, request.cell, request.refKey);
      return cell ? { cell: toCell(cell), none: false } : { cell: undefined, none: true };
    }),

    where: handlers.serverStream('Where', async function* (request): AsyncGenerator<WhereResponse> {
      const page = await engine.where(toWhereInput(request));
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
    }),

    whereMany: handlers.unary('WhereMany', async (request) => {
      const pages = await engine.whereMany(
        request.queries.map((query, i) => toWhereInput(query, `queries[${i}]`)),
      );
      return {
        pages: pages.map((page) => ({
          records: page.records.map(toRecord),
          nextPageToken: page.nextPageToken,
        })),
      };
    }),

    fetchLatestCells: handlers.unary('FetchLatestCells', async (request) => {
      const page = await engine.fetchLatestCells(
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
    }),

    each: handlers.serverStream(
      'Each',
      async function* (request, { signal }): AsyncGenerator<EachResponse> {
        const events = await engine.each(
          request.model,
          {
            shards: request.shards,
            cursors: fromWireCursors(request.cursors),
            follow: request.follow,
            batchSize: request.batchSize,
            heartbeatIntervalMs: request.heartbeatIntervalMs,
          },
          signal,
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
    ),
  };
}
