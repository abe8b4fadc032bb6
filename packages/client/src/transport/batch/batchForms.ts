// The calls the coalescing layer can answer from a batch call, each with its batch form:
// GetCell from GetCells, WriteCell from WriteCells, Put from PutMany, a Where page read whole
// from WhereMany. A form says which calls may share a batch, how much room each takes, and how
// each item's result of the batch becomes the answer (or the typed error) its single call
// would have had.

import {
  type Condition,
  type GetCellRequest,
  type GetCellsRequest,
  type GetCellResponse,
  type PutRequest,
  type PutResponse,
  type WriteCellRequest,
  type WriteCellResponse,
  type WhereRequest,
  type WhereResponse,
} from '@shameless/proto';
import type { BatchBounds, ItemSize } from './batchSplit.js';
import {
  InternalError,
  NotFoundError,
  errorForStatus,
  type ShamelessError,
} from '../call/errors.js';
import type { CallSender } from '../call/transportInterface.js';
import type { UnaryCallOptions } from '../call/transportInterface.js';

/** The outcome of one item of a batch call: its own answer, or its own typed error. */
export type ItemOutcome<Res> = { readonly ok: true; readonly value: Res } | ItemFailure;

/** An item of a batch call that failed on its own. */
export interface ItemFailure {
  readonly ok: false;
  readonly error: ShamelessError;
}

/**
 * The requests of one batch call, as its attempts carry them: a caller answered while the call
 * goes on (its deadline passed, its signal aborted) is left out of every later attempt.
 */
export interface BatchRequests<Req> {
  /** The requests of the callers still waiting, for an attempt that starts now; undefined once none is. */
  waiting(): readonly Req[] | undefined;
  /** The requests that the attempt answered with `count` results carried. */
  answered(count: number): readonly Req[];
}

/** A single call that the coalescing layer can send, with others, as one batch call. */
export interface BatchForm<Req, Res> {
  /** The single call's method (`getCell`): what callers call, and what errors name. */
  readonly method: string;
  /** The batch method sent for several of them (`getCells`). */
  readonly batchMethod: string;
  /** The batch request's field that carries the items, as the server's errors name it (`keys`). */
  readonly itemsField: string;
  readonly bounds: BatchBounds;
  /**
   * What the requests of one batch must share (the model, for GetCells), or undefined for a
   * request the batch form cannot carry (a GetCell of a given version), which is sent as its
   * single call.
   */
  groupOf(request: Req): string | undefined;
  /** The room the request takes in a batch. */
  sizeOf(request: Req): ItemSize;
  /** Sends the request as its single call. */
  sendOne(inner: CallSender, request: Req, options: UnaryCallOptions): Promise<Res>;
  /**
   * Sends the requests as one batch call (the request objects themselves, so each write keeps
   * its requestId on every retry; each attempt carries those still waiting) and resolves with
   * one outcome per request that the attempt answered, in order.
   */
  sendBatch(
    inner: CallSender,
    requests: BatchRequests<Req>,
    options: UnaryCallOptions,
  ): Promise<ItemOutcome<Res>[]>;
}

/**
 * Request bytes per batch at most, about. The channel allows 16 MiB messages; 4 MiB keeps a
 * batch well under that, and leaves room for answers, which are bigger than their requests for
 * reads. (A batch whose answer or request is still over a limit, such as a server's smaller
 * `--max-message-bytes`, is sent again in halves: batchCall.ts.)
 */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** The server's bounds: 10,000 keys or writes; 1,000 puts; 1,000 queries, 10,000 records. */
const MAX_CELL_BATCH = 10_000;
const MAX_PUT_BATCH = 1000;
const MAX_WHERE_BATCH = 1000;
const MAX_WHERE_BATCH_RECORDS = 10_000;
/** The records a Where with `limit` 0 asks for, as WhereMany counts them. */
const DEFAULT_WHERE_LIMIT = 1000;
/** The bytes a message spends on field tags and lengths, about, per item. */
const ITEM_OVERHEAD_BYTES = 16;

/** GetCell of a cell's latest version, answered from GetCells (one model per call). */
export const GET_CELL: BatchForm<GetCellRequest, GetCellResponse> = {
  method: 'getCell',
  batchMethod: 'getCells',
  itemsField: 'keys',
  bounds: { maxItems: MAX_CELL_BATCH, maxWeight: Infinity, maxBytes: MAX_BATCH_BYTES },
  groupOf: (request) => (request.refKey === undefined ? request.model : undefined),
  sizeOf: (request) => ({
    bytes: utf8Length(request.uuid) + utf8Length(request.cell) + ITEM_OVERHEAD_BYTES,
    weight: 1,
  }),
  sendOne: (inner, request, options) => inner.unary('getCell', request, options),
  async sendBatch(inner, requests, options) {
    const getCells = (sent: readonly GetCellRequest[]): GetCellsRequest => ({
      model: sent[0]?.model ?? '',
      keys: sent.map((request) => ({ uuid: request.uuid, cell: request.cell })),
    });
    const response = await inner.unary('getCells', ...eachAttempt(requests, getCells, options));
    return oneEach('getCells', requests, response.results, (request, result) =>
      result.cell !== undefined
        ? { ok: true, value: { cell: result.cell } }
        : // GetCell's own answer for a cell with no version.
          {
            ok: false,
            error: new NotFoundError(
              `cell ${request.cell || 'base'} of record ${request.uuid} has no version`,
            ),
          },
    );
  },
};

/** WriteCell, answered from WriteCells (each write names its model). */
export const WRITE_CELL: BatchForm<WriteCellRequest, WriteCellResponse> = {
  method: 'writeCell',
  batchMethod: 'writeCells',
  itemsField: 'writes',
  bounds: { maxItems: MAX_CELL_BATCH, maxWeight: Infinity, maxBytes: MAX_BATCH_BYTES },
  groupOf: () => '',
  sizeOf: (request) => ({
    bytes:
      request.body.byteLength +
      utf8Length(request.model) +
      utf8Length(request.uuid) +
      utf8Length(request.cell) +
      utf8Length(request.requestId) +
      ITEM_OVERHEAD_BYTES,
    weight: 1,
  }),
  sendOne: (inner, request, options) => inner.unary('writeCell', request, options),
  async sendBatch(inner, requests, options) {
    const response = await inner.unary(
      'writeCells',
      ...eachAttempt(requests, (writes) => ({ writes: [...writes] }), options),
    );
    return oneEach('writeCells', requests, response.results, (_, result) => {
      const outcome = result.outcome;
      if (outcome?.$case === 'written') return { ok: true, value: outcome.written };
      if (outcome?.$case === 'error') return refused(outcome.error);
      return unanswered('writeCells');
    });
  },
};

/** Put, answered from PutMany (each put names its model). */
export const PUT: BatchForm<PutRequest, PutResponse> = {
  method: 'put',
  batchMethod: 'putMany',
  itemsField: 'puts',
  bounds: { maxItems: MAX_PUT_BATCH, maxWeight: Infinity, maxBytes: MAX_BATCH_BYTES },
  groupOf: () => '',
  sizeOf: (request) => ({
    bytes:
      request.values.byteLength +
      utf8Length(request.model) +
      utf8Length(request.requestId) +
      ITEM_OVERHEAD_BYTES,
    weight: 1,
  }),
  sendOne: (inner, request, options) => inner.unary('put', request, options),
  async sendBatch(inner, requests, options) {
    const response = await inner.unary(
      'putMany',
      ...eachAttempt(requests, (puts) => ({ puts: [...puts] }), options),
    );
    return oneEach('putMany', requests, response.results, (_, result) => {
      const outcome = result.outcome;
      if (outcome?.$case === 'put') return { ok: true, value: outcome.put };
      if (outcome?.$case === 'error') return refused(outcome.error);
      return unanswered('putMany');
    });
  },
};

/**
 * A Where page read whole (`collect('where', ...)`), answered from WhereMany (each query names
 * its model). The page comes as one message: the records of all the messages a Where stream
 * would have sent, and its next page token.
 */
export const WHERE_PAGE: BatchForm<WhereRequest, WhereResponse[]> = {
  method: 'where',
  batchMethod: 'whereMany',
  itemsField: 'queries',
  bounds: {
    maxItems: MAX_WHERE_BATCH,
    maxWeight: MAX_WHERE_BATCH_RECORDS,
    maxBytes: MAX_BATCH_BYTES,
  },
  groupOf: () => '',
  sizeOf: (request) => ({
    bytes: whereRequestBytes(request),
    weight: request.limit || DEFAULT_WHERE_LIMIT,
  }),
  sendOne: (inner, request, options) => inner.collect('where', request, options),
  async sendBatch(inner, requests, options) {
    const response = await inner.unary(
      'whereMany',
      ...eachAttempt(requests, (queries) => ({ queries: [...queries] }), options),
    );
    return oneEach('whereMany', requests, response.pages, (_, page) => ({
      ok: true,
      value: [{ records: page.records, nextPageToken: page.nextPageToken }],
    }));
  },
};

/**
 * The batch call's request for its first attempt, and options that build the request of each
 * later attempt from the requests still waiting then.
 */
function eachAttempt<Req, BatchReq>(
  requests: BatchRequests<Req>,
  batchOf: (sent: readonly Req[]) => BatchReq,
  options: UnaryCallOptions,
): [BatchReq, UnaryCallOptions] {
  const requestForAttempt = () => {
    const sent = requests.waiting();
    return sent === undefined ? undefined : batchOf(sent);
  };
  return [batchOf(requests.waiting() ?? []), { ...options, requestForAttempt }];
}

/**
 * Pairs each request the answering attempt carried with its result; a batch answered with too
 * few or too many is a bug.
 */
function oneEach<Req, Res, Result>(
  batchMethod: string,
  requests: BatchRequests<Req>,
  results: readonly Result[],
  outcomeOf: (request: Req, result: Result) => ItemOutcome<Res>,
): ItemOutcome<Res>[] {
  const answered = requests.answered(results.length);
  if (results.length !== answered.length) {
    throw new InternalError(
      `${batchMethod} answered ${results.length} results for ${answered.length} requests`,
    );
  }
  return answered.map((request, i) => outcomeOf(request, results[i]!));
}

/** An item the server refused on its own: the typed error its single call would have had. */
function refused(error: { code: number; message: string }): ItemFailure {
  return { ok: false, error: errorForStatus(error.code, error.message) };
}

function unanswered(batchMethod: string): ItemFailure {
  return {
    ok: false,
    error: new InternalError(`${batchMethod} answered an item with neither a result nor an error`),
  };
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * About the bytes a Where request takes in a WhereMany, counted rather than encoded (every
 * queued query would otherwise be encoded twice): its strings, and a generous allowance for
 * tags, lengths, integers and enums.
 */
function whereRequestBytes(request: WhereRequest): number {
  const strings = (texts: readonly string[]) =>
    texts.reduce((sum, text) => sum + utf8Length(text) + ITEM_OVERHEAD_BYTES, 0);
  const condition = (c: Condition) =>
    utf8Length(c.field) +
    ITEM_OVERHEAD_BYTES +
    c.values.reduce(
      (sum, value) =>
        sum +
        ITEM_OVERHEAD_BYTES +
        (value.kind?.$case === 'string' ? utf8Length(value.kind.string) : 0),
      0,
    );
  return (
    strings([request.model, request.index, request.pageToken, ...request.cells]) +
    request.conditions.reduce((sum, c) => sum + condition(c), 0) +
    ITEM_OVERHEAD_BYTES
  );
}
