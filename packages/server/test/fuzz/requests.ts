// Request messages for every RPC of shameless.v1.Store, as fast-check arbitraries of plain
// objects (ts-proto's partial messages): near-valid ones that reach the engine, with fields out
// of range, unknown enum values, repeated fields past every cap, bodies of every shape, names
// of what does not exist. Records are named by slot and request ids by marker (world.ts), so
// that a seed makes the same requests against any store. A case is a request, its byte
// mutations, and for streams the messages that follow.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { FieldType, Operator, SortOrder, StartFrom, WriteMode } from '@shameless/proto';
import { toOperator } from '../../src/grpc/service/protoMapping.js';
import { type Mutation, mutations } from './mutations.js';
import {
  ALL_INDEX_FIELDS,
  AGAIN_REQUEST_ID,
  CELL_NAMES,
  FRESH_REQUEST_ID,
  GROUP,
  INDEX_NAMES,
  MODELS,
  MODEL_NAMES,
  NEW_CELL_NAMES,
  NEW_MODEL_NAMES,
  RECORDS_PER_MODEL,
  RECORD_SLOT,
  SHARDS_COUNT,
  indexFields,
} from './world.js';
import {
  NESTING_DEPTHS,
  bodyOf,
  deepBody,
  deepValue,
  enumValue,
  int32,
  int64,
  mpKey,
  mpMap,
  mpSmallestInteger,
  mpString,
  mpValue,
  nameOf,
  notIdentifier,
  repeated,
  smallBody,
  text,
  uint32,
  uint64,
} from './values.js';

/** The server's caps as the fuzzer starts it (target.ts), so that cap and cap + 1 are tried. */
export const CAPS = {
  maxWhereConditions: 8,
  maxInValues: 50,
  maxPageRecords: 500,
  maxBatchKeys: 200,
  maxPutBatch: 100,
} as const;

export const UNARY_RPCS = [
  'DefineModel',
  'DescribeStore',
  'FindShard',
  'Put',
  'PutMany',
  'WriteCell',
  'WriteCells',
  'GetCell',
  'GetCells',
  'Previous',
  'WhereMany',
  'FetchLatestCells',
  'DescribeConsumerGroup',
  'ListParkedCells',
  'ReplayParkedCell',
  'ResetConsumerGroup',
] as const;
export type UnaryRpc = (typeof UNARY_RPCS)[number];
export type Rpc = UnaryRpc | 'Where' | 'Each' | 'Consume' | 'Pipeline';
export const RPCS: readonly Rpc[] = [...UNARY_RPCS, 'Where', 'Each', 'Consume', 'Pipeline'];

/** One message to send: a partial message of the RPC's request type, and what to do to its bytes. */
export interface MessageDraft {
  readonly message: Record<string, unknown>;
  readonly mutations: readonly Mutation[];
}

export type FuzzCase =
  | {
      readonly kind: 'unary';
      readonly rpc: UnaryRpc;
      readonly request: MessageDraft;
      /** Sent this many times at once (a retry racing its original). */
      readonly copies: number;
    }
  | { readonly kind: 'where'; readonly rpc: 'Where'; readonly request: MessageDraft }
  | {
      readonly kind: 'each';
      readonly rpc: 'Each';
      readonly request: MessageDraft;
      /** How long a follower is read before it is cancelled. */
      readonly followMs: number;
    }
  | {
      readonly kind: 'consume';
      readonly rpc: 'Consume';
      readonly messages: readonly MessageDraft[];
      /** How long the member waits after its messages before it goes away. */
      readonly lingerMs: number;
    }
  | {
      readonly kind: 'pipeline';
      readonly rpc: 'Pipeline';
      readonly metadata: Readonly<Record<string, string>>;
      readonly messages: readonly MessageDraft[];
    };

// Names and references.

const model = nameOf(MODEL_NAMES, ['nope', ...NEW_MODEL_NAMES]);
const cell = nameOf(CELL_NAMES, ['nope', ...NEW_CELL_NAMES]);
const index = nameOf(INDEX_NAMES, ['nope', 'by_nothing']);
const field = nameOf(ALL_INDEX_FIELDS, ['price', 'nope', 'uuid']);
const group = fc.oneof(
  { weight: 6, arbitrary: fc.constant(GROUP) },
  { weight: 1, arbitrary: fc.constantFrom('other', 'g.1-x_', 'x'.repeat(64), 'x'.repeat(65)) },
  { weight: 1, arbitrary: notIdentifier },
);

const RECORD_SLOTS = MODELS.length * RECORDS_PER_MODEL;
/** A record the setup made, by slot. */
const recordSlot = fc.nat({ max: RECORD_SLOTS - 1 }).map((slot) => `${RECORD_SLOT}${slot}`);
/** A record's uuid: one the setup made (by slot) mostly, else any uuid, else no uuid at all. */
const uuid = fc.oneof(
  { weight: 16, arbitrary: recordSlot },
  { weight: 1, arbitrary: fc.uuid() },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constantFrom('', 'not-a-uuid', '00000000-0000-0000-0000-00000000000'),
      fc.uuid().map((id) => id.toUpperCase()),
      fc.uuid().map((id) => `${id}0`),
      text,
    ),
  },
);

/** A fresh request id mostly; one used before (a retry); or one the server must refuse. */
const requestId = fc.oneof(
  { weight: 20, arbitrary: fc.constant(FRESH_REQUEST_ID) },
  { weight: 1, arbitrary: fc.nat({ max: 20 }).map((back) => `${AGAIN_REQUEST_ID}${back}`) },
  { weight: 1, arbitrary: fc.constantFrom('', 'has space', 'x'.repeat(65), 'é', 'a/b') },
);

const optionalBool = fc.constantFrom(undefined, false, true);

// Index values and bodies.

/** A value of an integer index field, encoded; small ones most, so that puts meet records. */
const integerValue = fc.oneof(
  { weight: 8, arbitrary: fc.bigInt(0n, 15n) },
  { weight: 2, arbitrary: int64 },
);
const stringValue = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'seed-1', 'seed-2', '2026-01-01', '') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom(255, 256, 1000).map((length) => 'z'.repeat(length)) },
);

/** A value for an index field: of its type mostly, else of another type or shape. */
function indexFieldValue(type: FieldType): fc.Arbitrary<Buffer> {
  const right =
    type === FieldType.FIELD_TYPE_INTEGER
      ? integerValue.map(mpSmallestInteger)
      : stringValue.map((value) => mpString(Buffer.from(value, 'utf8')));
  return fc.oneof({ weight: 8, arbitrary: right }, { weight: 2, arbitrary: mpValue });
}

/** Put values for a model: its index fields (some left out, some of the wrong type) and others. */
const putValuesOf = (body: fc.Arbitrary<Buffer>) =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(...MODELS).chain((definition) =>
        fc
          .tuple(
            fc.tuple(
              ...indexFields(definition).map((f) =>
                fc
                  .option(indexFieldValue(f.type), { freq: 8, nil: undefined })
                  .map((value) => [f.name, value] as const),
              ),
            ),
            fc.array(fc.tuple(fc.constantFrom('price', 'note', 'nested', 'gateway2'), mpValue), {
              maxLength: 3,
            }),
          )
          .map(([fields, extra]) =>
            mpMap([
              ...fields
                .filter((entry): entry is readonly [string, Buffer] => entry[1] !== undefined)
                .map(([name, value]) => [mpKey(name), value] as const),
              ...extra.map(([name, value]) => [mpKey(name), value] as const),
            ]),
          ),
      ),
    },
    { weight: 2, arbitrary: body },
  );

const indexValue = fc.oneof(
  { weight: 4, arbitrary: int64.map((integer) => ({ kind: { $case: 'integer', integer } })) },
  {
    weight: 4,
    arbitrary: stringValue.map((string) => ({ kind: { $case: 'string', string } })),
  },
  { weight: 1, arbitrary: fc.constant({}) },
);

// What a huge repeated field repeats: short values only, so that 20,000 of them stay small.
const smallIndexValue = fc.oneof(
  fc.bigInt(0n, 15n).map((integer) => ({ kind: { $case: 'integer', integer } })),
  fc.constantFrom('a', 'b').map((string) => ({ kind: { $case: 'string', string } })),
);
const smallCondition = fc.record({
  field: fc.constantFrom(...ALL_INDEX_FIELDS, 'nope'),
  op: fc.constantFrom(Operator.OPERATOR_EQ, Operator.OPERATOR_GT, Operator.OPERATOR_IN),
  values: fc.array(smallIndexValue, { maxLength: 2 }),
});

const condition = (hugeValues: boolean) =>
  fc.record({
    field,
    op: enumValue([
      Operator.OPERATOR_EQ,
      Operator.OPERATOR_EQ,
      Operator.OPERATOR_NE,
      Operator.OPERATOR_LT,
      Operator.OPERATOR_LE,
      Operator.OPERATOR_GT,
      Operator.OPERATOR_GE,
      Operator.OPERATOR_IN,
      Operator.OPERATOR_BETWEEN,
      Operator.OPERATOR_UNSPECIFIED,
    ]),
    values: hugeValues
      ? repeated(indexValue, { caps: [CAPS.maxInValues], item: smallIndexValue })
      : fc.array(indexValue, { maxLength: 3 }),
  });

/**
 * A Where request: its shard field with `=` mostly, so that it reaches MySQL. `top`: the
 * request of its own call, whose repeated fields may be huge; else one of a WhereMany.
 */
const whereQuery = (top: boolean) =>
  fc.record({
    model,
    index,
    conditions: fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .tuple(
            fc.constantFrom('hotel_id', 'stream_id'),
            integerValue,
            fc.array(condition(top), { maxLength: 2 }),
          )
          .map(([shardField, value, more]) => [
            {
              field: shardField,
              op: Operator.OPERATOR_EQ,
              values: [{ kind: { $case: 'integer', integer: value } }],
            },
            ...more,
          ]),
      },
      {
        weight: 2,
        arbitrary: top
          ? repeated(condition(false), { caps: [CAPS.maxWhereConditions], item: smallCondition })
          : fc.array(condition(false), { maxLength: 3 }),
      },
    ),
    cells: top
      ? repeated(cell, { caps: [CAPS.maxBatchKeys], item: fc.constant('base') })
      : fc.array(cell, { maxLength: 3 }),
    order: enumValue([SortOrder.SORT_ORDER_ASC, SortOrder.SORT_ORDER_DESC]),
    limit: uint32(CAPS.maxPageRecords, 1000, 10_000),
    pageToken: fc.oneof(
      { weight: 6, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: text },
      {
        weight: 1,
        arbitrary: fc
          .tuple(
            fc.string({ maxLength: 12 }),
            fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant('9'.repeat(30) + 'n')), {
              maxLength: 5,
            }),
          )
          .map((token) => Buffer.from(JSON.stringify(token)).toString('base64url')),
      },
    ),
  });

/** Values a forged page token may hold in place of an index row's key. */
const tokenValue = fc.oneof(
  fc.constantFrom(
    '99999999999999999999n',
    '-9223372036854775809n',
    '9223372036854775807n',
    '1e400',
    '',
    'z'.repeat(300),
    '00000000-0000-0000-0000-000000000000',
  ),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constantFrom(null, true, [], {}),
);

interface DraftQuery {
  readonly model: string;
  readonly index: string;
  readonly order: number;
  readonly conditions: readonly {
    readonly field: string;
    readonly op: number;
    readonly values: readonly {
      readonly kind?: { readonly $case: string; readonly [value: string]: unknown };
    }[];
  }[];
}

/**
 * A page token the server would take as its own for this query (whereQuery.ts fingerprints the
 * model, index, order and conditions), holding `key` as the last row's index values and uuid:
 * what reaches the token's values, which a token of another query never does.
 */
export function forgedPageToken(query: DraftQuery, key: readonly unknown[]): string {
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify([
        query.model,
        query.index || 'primary',
        query.order === SortOrder.SORT_ORDER_DESC,
        query.conditions.map((c) => [
          c.field,
          toOperator(c.op),
          c.values.map((v) => String(v.kind?.[v.kind.$case] ?? '')),
        ]),
      ]),
    )
    .digest('base64url')
    .slice(0, 12);
  return Buffer.from(JSON.stringify([fingerprint, key])).toString('base64url');
}

/** A Where request; a few carry a page token forged for the query itself, with odd values. */
const whereRequest = (top: boolean) =>
  fc
    .tuple(
      whereQuery(top),
      fc.option(fc.array(tokenValue, { minLength: 1, maxLength: 5 }), { freq: 6, nil: undefined }),
    )
    .map(([query, key]) =>
      key === undefined ? query : { ...query, pageToken: forgedPageToken(query, key) },
    );

const fieldDefinition = fc.record({
  name: nameOf(ALL_INDEX_FIELDS, ['f1', 'f2', 'uuid', 'id', 'body']),
  type: enumValue([
    FieldType.FIELD_TYPE_INTEGER,
    FieldType.FIELD_TYPE_STRING,
    FieldType.FIELD_TYPE_UNSPECIFIED,
  ]),
});

const smallFieldDefinition = fc.record({
  name: fc.constantFrom('f1', 'f2', 'hotel_id', 'Bad'),
  type: fc.constantFrom(FieldType.FIELD_TYPE_INTEGER, FieldType.FIELD_TYPE_STRING),
});
const smallIndexDefinition = fc.record({
  name: fc.constantFrom('by_f1', 'by_f2', 'primary'),
  fields: fc.array(smallFieldDefinition, { maxLength: 2 }),
  shardOn: fc.constantFrom('f1', 'hotel_id'),
});

const indexDefinition = (hugeFields: boolean) =>
  fc.record({
    name: nameOf(INDEX_NAMES, ['by_f1', 'x'.repeat(60)]),
    fields: hugeFields
      ? repeated(fieldDefinition, { caps: [64], item: smallFieldDefinition })
      : fc.array(fieldDefinition, { maxLength: 3 }),
    shardOn: nameOf(ALL_INDEX_FIELDS, ['f1', 'nope']),
  });

/** A model definition: a stored one as it is, changed a little, or a new one. */
const modelDefinition = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom(...MODELS), fc.subarray(NEW_CELL_NAMES))
      .map(([stored, added]) => ({ ...stored, cells: [...stored.cells, ...added] })),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      name: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...MODEL_NAMES, ...NEW_MODEL_NAMES) },
        { weight: 1, arbitrary: notIdentifier },
      ),
      primaryIndex: fc.option(indexDefinition(true), { freq: 8, nil: undefined }),
      secondaryIndices: repeated(
        indexDefinition(false),
        { caps: [64], item: smallIndexDefinition },
        2,
      ),
      cells: repeated(
        nameOf(NEW_CELL_NAMES, ['base', 'meta']),
        { caps: [10_000], item: fc.constantFrom(...NEW_CELL_NAMES) },
        3,
      ),
    }),
  },
);

// The unary requests.

const shard = uint32(SHARDS_COUNT, SHARDS_COUNT - 1);

const writeCellOf = (body: fc.Arbitrary<Buffer>) =>
  fc.record({
    model,
    uuid,
    cell,
    body,
    mode: enumValue([WriteMode.WRITE_MODE_REPLACE, WriteMode.WRITE_MODE_MERGE]),
    expectedRefKey: fc.option(int32, { freq: 3, nil: undefined }),
    requestId,
    omitBodyAsSent: optionalBool,
  });

const putOf = (values: fc.Arbitrary<Buffer>) =>
  fc.record({ model, values, requestId, omitBodyAsSent: optionalBool });

// What a huge batch repeats: small, so that the message stays within a few MB.
const smallPut = fc.record({
  model: fc.constantFrom(...MODEL_NAMES),
  values: smallBody,
  requestId: fc.constant(FRESH_REQUEST_ID),
});
const smallWriteCell = fc.record({
  model: fc.constantFrom(...MODEL_NAMES),
  uuid: recordSlot,
  cell: fc.constantFrom(...CELL_NAMES),
  body: smallBody,
  mode: fc.constantFrom(WriteMode.WRITE_MODE_REPLACE, WriteMode.WRITE_MODE_MERGE),
  requestId: fc.constant(FRESH_REQUEST_ID),
});
const smallQuery = fc.record({
  model: fc.constantFrom(...MODEL_NAMES),
  conditions: fc
    .tuple(fc.constantFrom('hotel_id', 'stream_id'), fc.bigInt(0n, 15n))
    .map(([shardField, integer]) => [
      {
        field: shardField,
        op: Operator.OPERATOR_EQ,
        values: [{ kind: { $case: 'integer', integer } }],
      },
    ]),
  limit: fc.constantFrom(0, 1, 10),
});

type UnaryRequests = { readonly [R in UnaryRpc]: fc.Arbitrary<Record<string, unknown>> };

/** The request of each unary RPC, bodies drawn from `body`. */
function unaryRequestsOf(body: fc.Arbitrary<Buffer>): UnaryRequests {
  const put = putOf(putValuesOf(body));
  const writeCell = writeCellOf(body);
  return {
    DefineModel: fc.record({ model: fc.option(modelDefinition, { freq: 10, nil: undefined }) }),
    DescribeStore: fc.constant({}),
    FindShard: fc.oneof(
      fc.record({ key: int64.map((value) => ({ $case: 'value', value })) }),
      fc.record({ key: uuid.map((id) => ({ $case: 'uuid', uuid: id })) }),
      fc.constant({}),
    ),
    Put: put,
    PutMany: fc.record({ puts: repeated(put, { caps: [CAPS.maxPutBatch], item: smallPut }) }),
    WriteCell: writeCell,
    WriteCells: fc.record({
      writes: repeated(writeCell, { caps: [CAPS.maxBatchKeys], item: smallWriteCell }, 5),
    }),
    GetCell: fc.record({ model, uuid, cell, refKey: fc.option(int32, { nil: undefined }) }),
    GetCells: fc.record({
      model,
      keys: repeated(
        fc.record({ uuid, cell }),
        {
          caps: [CAPS.maxBatchKeys],
          item: fc.record({ uuid: recordSlot, cell: fc.constantFrom(...CELL_NAMES) }),
        },
        5,
      ),
    }),
    Previous: fc.record({ model, uuid, cell, refKey: int32 }),
    WhereMany: fc.record({
      queries: repeated(whereRequest(false), { caps: [1000], item: smallQuery }, 3),
    }),
    FetchLatestCells: fc.record({
      model,
      shard,
      cursor: uint64,
      limit: uint32(CAPS.maxPageRecords, 1000),
    }),
    DescribeConsumerGroup: fc.record({ model, group }),
    ListParkedCells: fc.record({
      model,
      group,
      shard: fc.option(shard, { nil: undefined }),
      limit: uint32(1000),
      pageToken: fc.oneof(fc.constant(''), text),
    }),
    ReplayParkedCell: fc.record({ model, group, shard, id: uint64 }),
    ResetConsumerGroup: fc.record({
      model,
      group,
      to: fc.oneof(
        fc.constant(undefined),
        enumValue([
          StartFrom.START_FROM_EARLIEST,
          StartFrom.START_FROM_LATEST,
          StartFrom.START_FROM_UNSPECIFIED,
        ]).map((position) => ({ $case: 'position', position })),
        fc
          .record({ shard, cursor: uint64 })
          .map((position) => ({ $case: 'shard', shard: position })),
      ),
    }),
  };
}

const draft = (message: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<MessageDraft> =>
  fc.record({ message, mutations });

const unaryCaseOf = (unaryRequests: UnaryRequests) =>
  fc.constantFrom(...UNARY_RPCS).chain((rpc) =>
    fc.record({
      kind: fc.constant('unary' as const),
      rpc: fc.constant(rpc),
      request: draft(unaryRequests[rpc]),
      copies: fc.oneof(
        { weight: 9, arbitrary: fc.constant(1) },
        { weight: 1, arbitrary: fc.integer({ min: 2, max: 4 }) },
      ),
    }),
  );

const whereCase = fc.record({
  kind: fc.constant('where' as const),
  rpc: fc.constant('Where' as const),
  request: draft(whereRequest(true)),
});

const eachCase = fc.record({
  kind: fc.constant('each' as const),
  rpc: fc.constant('Each' as const),
  request: draft(
    fc.record({
      model,
      shards: repeated(shard, { caps: [SHARDS_COUNT], item: shard }, 3),
      cursors: fc
        .array(fc.tuple(shard, uint64), { maxLength: 3 })
        .map((entries) => Object.fromEntries(entries.map(([key, value]) => [key, value]))),
      follow: fc.boolean(),
      batchSize: uint32(CAPS.maxPageRecords),
      heartbeatIntervalMs: uint32(1, 100),
    }),
  ),
  followMs: fc.constantFrom(50, 300),
});

// Consume: a join, then what a member may send; epochs and ids are mostly those of the setup.

const epoch = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt(0n, 4n) },
  { weight: 1, arbitrary: uint64 },
);
const cellId = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt(0n, 40n) },
  { weight: 1, arbitrary: uint64 },
);

const shardAcknowledgement = (hugeIds: boolean) =>
  fc.record({
    shard,
    epoch,
    ids: hugeIds
      ? repeated(cellId, { caps: [10_000], item: cellId })
      : fc.array(cellId, { maxLength: 4 }),
  });

const joinMessage = fc.record({
  model,
  group,
  memberId: fc.oneof(fc.constant(''), fc.constantFrom('m1', 'm2'), text),
  from: enumValue([
    StartFrom.START_FROM_UNSPECIFIED,
    StartFrom.START_FROM_EARLIEST,
    StartFrom.START_FROM_LATEST,
  ]),
  cells: repeated(cell, { caps: [1000], item: fc.constant('base') }, 2),
  maxInFlight: uint32(10_000, 10_001),
  perShardInFlight: uint32(10_000),
  maxDeliveries: uint32(100, 101),
  sessionTimeoutMs: fc.oneof(fc.constant(0), uint32(1000, 999, 300_000, 300_001)),
});

const memberMessage = fc.oneof(
  joinMessage.map((join) => ({ message: { $case: 'join', join } })),
  fc
    .record({
      shards: repeated(
        shardAcknowledgement(true),
        { caps: [1000], item: shardAcknowledgement(false) },
        3,
      ),
    })
    .map((ack) => ({ message: { $case: 'ack', ack } })),
  fc
    .record({ shard, epoch, id: cellId, error: text })
    .map((failed) => ({ message: { $case: 'failed', failed } })),
  fc
    .record({ shard, epoch, id: cellId, reason: text })
    .map((park) => ({ message: { $case: 'park', park } })),
  fc.record({ shard, epoch }).map((released) => ({ message: { $case: 'released', released } })),
  fc.constant({ message: { $case: 'leave', leave: {} } }),
  fc.constant({ message: { $case: 'heartbeat', heartbeat: {} } }),
  fc.constant({}),
);

const consumeCase = fc.record({
  kind: fc.constant('consume' as const),
  rpc: fc.constant('Consume' as const),
  messages: fc
    .tuple(
      fc.oneof(
        {
          weight: 5,
          arbitrary: draft(joinMessage.map((join) => ({ message: { $case: 'join', join } }))),
        },
        { weight: 1, arbitrary: draft(memberMessage) },
      ),
      fc.array(draft(memberMessage), { maxLength: 4 }),
    )
    .map(([first, rest]) => [first, ...rest]),
  lingerMs: fc.constantFrom(0, 100, 400),
});

// Pipeline: calls of the unary methods, cancels, odd ids, timeouts and metadata.

const PIPELINE_CASES: { readonly [R in UnaryRpc]: string } = {
  DefineModel: 'defineModel',
  DescribeStore: 'describeStore',
  FindShard: 'findShard',
  Put: 'put',
  PutMany: 'putMany',
  WriteCell: 'writeCell',
  WriteCells: 'writeCells',
  GetCell: 'getCell',
  GetCells: 'getCells',
  Previous: 'previous',
  WhereMany: 'whereMany',
  FetchLatestCells: 'fetchLatestCells',
  DescribeConsumerGroup: 'describeConsumerGroup',
  ListParkedCells: 'listParkedCells',
  ReplayParkedCell: 'replayParkedCell',
  ResetConsumerGroup: 'resetConsumerGroup',
};

/** The Pipeline oneof case of each unary RPC, and of Where. */
export const pipelineCaseOf = (rpc: UnaryRpc | 'Where'): string =>
  rpc === 'Where' ? 'where' : PIPELINE_CASES[rpc];

const metadataKey = fc.oneof(
  fc.constantFrom('x-trace', 'authorization', 'shameless-max-answer-bytes', 'grpc-timeout', 'te'),
  fc.constantFrom('Upper', 'with space', 'x-bin', 'ünï', ''),
  fc.string({ maxLength: 8 }),
);
const metadataValue = fc.oneof(
  fc.constantFrom('1', '0', 'Bearer x', '-5', '99999999999999999999'),
  fc.constantFrom('line\nbreak', 'tab\tvalue', 'ünïcode', '\u0000'),
  fc.string({ maxLength: 8 }),
);
const metadata = fc
  .array(fc.tuple(metadataKey, metadataValue), { maxLength: 2 })
  .map((entries) => Object.fromEntries(entries));

const pipelineCallOf = (unaryRequests: UnaryRequests) =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc.constantFrom(...UNARY_RPCS).chain((rpc) =>
        unaryRequests[rpc].map((request) => ({
          $case: pipelineCaseOf(rpc),
          [pipelineCaseOf(rpc)]: request,
        })),
      ),
    },
    { weight: 2, arbitrary: whereRequest(true).map((where) => ({ $case: 'where', where })) },
    { weight: 2, arbitrary: fc.constant({ $case: 'cancel', cancel: {} }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const pipelineMessageOf = (unaryRequests: UnaryRequests) =>
  fc.record({
    callId: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }) },
      { weight: 1, arbitrary: uint32() },
    ),
    timeoutMs: fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: uint32(1, 5) },
    ),
    metadata: fc.oneof(
      { weight: 4, arbitrary: fc.constant({}) },
      { weight: 1, arbitrary: metadata },
    ),
    call: pipelineCallOf(unaryRequests),
  });

const pipelineStreamCaseOf = (unaryRequests: UnaryRequests) =>
  fc.record({
    kind: fc.constant('pipeline' as const),
    rpc: fc.constant('Pipeline' as const),
    metadata: fc.oneof(
      { weight: 4, arbitrary: fc.constant({}) },
      { weight: 1, arbitrary: metadata },
    ),
    messages: fc.array(draft(pipelineMessageOf(unaryRequests)), { minLength: 1, maxLength: 4 }),
  });

export interface Generation {
  /** The deepest nesting of a body drawn (one of NESTING_DEPTHS at most this). */
  readonly maxDepth: number;
  /** Draw only writes of deeply nested bodies: what a limit on nesting must refuse. */
  readonly deepBodiesOnly?: boolean;
}

/** Any case, the unary RPCs as often as all the streams together. */
export function fuzzCases(generation: Generation): fc.Arbitrary<FuzzCase> {
  const depths = NESTING_DEPTHS.filter((depth) => depth <= generation.maxDepth);
  if (generation.deepBodiesOnly) return deepBodyWrites(depths);
  const unaryRequests = unaryRequestsOf(bodyOf(ALL_INDEX_FIELDS, depths));
  return fc.oneof(
    { weight: 12, arbitrary: unaryCaseOf(unaryRequests) },
    { weight: 2, arbitrary: whereCase },
    { weight: 2, arbitrary: eachCase },
    { weight: 2, arbitrary: consumeCase },
    { weight: 3, arbitrary: pipelineStreamCaseOf(unaryRequests) },
  ) as fc.Arbitrary<FuzzCase>;
}

/**
 * Writes that reach the server's body checks with a body nested one of `depths` deep: every way a
 * body enters (replace, merge, create, each batch, a Pipeline call), each otherwise valid, so
 * that only a limit on nesting refuses them.
 */
function deepBodyWrites(depths: readonly number[]): fc.Arbitrary<FuzzCase> {
  const deepest = depths.length > 0 ? depths : [1];
  const deep = deepBody(deepest);
  const target = fc
    .tuple(fc.constantFrom(...MODELS.keys()), fc.nat({ max: RECORDS_PER_MODEL - 1 }))
    .map(([model, n]) => ({
      model: MODELS[model]!.name,
      uuid: `${RECORD_SLOT}${model * RECORDS_PER_MODEL + n}`,
    }));
  const writeCell = fc
    .record({
      target,
      cell: fc.constantFrom('base', ''),
      body: deep,
      mode: fc.constantFrom(WriteMode.WRITE_MODE_REPLACE, WriteMode.WRITE_MODE_MERGE),
    })
    .map(({ target: { model, uuid }, cell, body, mode }) => ({
      model,
      uuid,
      cell,
      body,
      mode,
      requestId: FRESH_REQUEST_ID,
    }));
  const put = fc.tuple(fc.bigInt(0n, 15n), deepValue(deepest)).map(([hotel, value]) => ({
    model: 'rate',
    values: mpMap([
      [mpKey('hotel_id'), mpSmallestInteger(hotel)],
      [mpKey('room_type'), mpKey('deep')],
      [mpKey('check_in_date'), mpKey('2026-01-01')],
      [mpKey('gateway'), mpKey('g')],
      [mpKey('deep'), value],
    ]),
    requestId: FRESH_REQUEST_ID,
  }));
  const unary = (rpc: UnaryRpc, message: fc.Arbitrary<Record<string, unknown>>) =>
    fc.record({
      kind: fc.constant('unary' as const),
      rpc: fc.constant(rpc),
      request: fc.record({ message, mutations: fc.constant([]) }),
      copies: fc.constant(1),
    });
  return fc.oneof(
    unary('WriteCell', writeCell),
    unary('Put', put),
    unary(
      'WriteCells',
      writeCell.map((write) => ({ writes: [write] })),
    ),
    unary(
      'PutMany',
      put.map((one) => ({ puts: [one] })),
    ),
    fc.record({
      kind: fc.constant('pipeline' as const),
      rpc: fc.constant('Pipeline' as const),
      metadata: fc.constant({}),
      messages: writeCell.map((write) => [
        {
          message: {
            callId: 1,
            timeoutMs: 0,
            metadata: {},
            call: { $case: 'writeCell', writeCell: write },
          },
          mutations: [],
        },
      ]),
    }),
  );
}
