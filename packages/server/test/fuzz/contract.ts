// The contract as the fuzzer sees it: for each RPC its path and the generated codecs of its
// request and response, and how a draft becomes the bytes sent (its slots resolved, encoded,
// mutated) and bytes become a view a person can read.
import {
  ConsumeRequest,
  ConsumeResponse,
  DefineModelRequest,
  DefineModelResponse,
  DescribeConsumerGroupRequest,
  DescribeConsumerGroupResponse,
  DescribeStoreRequest,
  DescribeStoreResponse,
  EachRequest,
  EachResponse,
  FetchLatestCellsRequest,
  FetchLatestCellsResponse,
  FindShardRequest,
  FindShardResponse,
  GetCellRequest,
  GetCellResponse,
  GetCellsRequest,
  GetCellsResponse,
  ListParkedCellsRequest,
  ListParkedCellsResponse,
  PipelineRequest,
  PipelineResponse,
  PreviousRequest,
  PreviousResponse,
  PutManyRequest,
  PutManyResponse,
  PutRequest,
  PutResponse,
  ReplayParkedCellRequest,
  ReplayParkedCellResponse,
  ResetConsumerGroupRequest,
  ResetConsumerGroupResponse,
  WhereManyRequest,
  WhereManyResponse,
  WhereRequest,
  WhereResponse,
  WriteCellRequest,
  WriteCellResponse,
  WriteCellsRequest,
  WriteCellsResponse,
} from '@shameless/proto';
import type { BinaryWriter } from '@bufbuild/protobuf/wire';
import { type MessageDraft, type Rpc } from './requests.js';
import { mutate } from './mutations.js';

/** What the fuzzer needs of a generated message type. */
export interface Codec {
  encode(message: never, writer?: BinaryWriter): BinaryWriter;
  decode(input: Uint8Array): unknown;
  fromPartial(object: never): unknown;
  toJSON(message: never): unknown;
}

export interface RpcContract {
  readonly path: string;
  readonly request: Codec;
  readonly response: Codec;
}

const STORE = '/shameless.v1.Store/';

const contract = (name: Rpc, request: Codec, response: Codec): [Rpc, RpcContract] => [
  name,
  { path: `${STORE}${name}`, request, response },
];

export const CONTRACT: ReadonlyMap<Rpc, RpcContract> = new Map([
  contract('DefineModel', DefineModelRequest, DefineModelResponse),
  contract('DescribeStore', DescribeStoreRequest, DescribeStoreResponse),
  contract('FindShard', FindShardRequest, FindShardResponse),
  contract('Put', PutRequest, PutResponse),
  contract('PutMany', PutManyRequest, PutManyResponse),
  contract('WriteCell', WriteCellRequest, WriteCellResponse),
  contract('WriteCells', WriteCellsRequest, WriteCellsResponse),
  contract('GetCell', GetCellRequest, GetCellResponse),
  contract('GetCells', GetCellsRequest, GetCellsResponse),
  contract('Previous', PreviousRequest, PreviousResponse),
  contract('WhereMany', WhereManyRequest, WhereManyResponse),
  contract('FetchLatestCells', FetchLatestCellsRequest, FetchLatestCellsResponse),
  contract('DescribeConsumerGroup', DescribeConsumerGroupRequest, DescribeConsumerGroupResponse),
  contract('ListParkedCells', ListParkedCellsRequest, ListParkedCellsResponse),
  contract('ReplayParkedCell', ReplayParkedCellRequest, ReplayParkedCellResponse),
  contract('ResetConsumerGroup', ResetConsumerGroupRequest, ResetConsumerGroupResponse),
  contract('Where', WhereRequest, WhereResponse),
  contract('Each', EachRequest, EachResponse),
  contract('Consume', ConsumeRequest, ConsumeResponse),
  contract('Pipeline', PipelineRequest, PipelineResponse),
]);

export function contractOf(rpc: Rpc): RpcContract {
  return CONTRACT.get(rpc)!;
}

/** A draft's strings with its markers replaced (record slots, request ids). */
export function resolveMarkers(value: unknown, replace: (text: string) => string): unknown {
  if (typeof value === 'string') return replace(value);
  if (Array.isArray(value)) return value.map((item) => resolveMarkers(item, replace));
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, resolveMarkers(item, replace)]),
  );
}

/** The bytes of one message of `codec`: the draft, its markers replaced, encoded and mutated. */
export function encodeDraft(
  codec: Codec,
  draft: MessageDraft,
  replace: (text: string) => string,
): Buffer {
  const message = codec.fromPartial(resolveMarkers(draft.message, replace) as never);
  const encoded = Buffer.from(codec.encode(message as never).finish());
  return mutate(encoded, draft.mutations);
}

/** `bytes` decoded as `codec`'s message, or undefined when they are not one. */
export function tryDecode(codec: Codec, bytes: Uint8Array): unknown {
  try {
    return codec.decode(bytes);
  } catch {
    return undefined;
  }
}

const MAX_SHOWN = 4000;

/** A readable view of bytes sent as `codec`'s message: its JSON, or why they do not decode. */
export function decodedView(codec: Codec, bytes: Uint8Array): string {
  let json: string;
  try {
    json = JSON.stringify(codec.toJSON(codec.decode(bytes) as never), (_key, value: unknown) =>
      typeof value === 'string' && value.length > 200
        ? `${value.slice(0, 200)}… (${value.length} chars)`
        : Array.isArray(value) && value.length > 12
          ? [...value.slice(0, 12), `… (${value.length - 12} more)`]
          : value,
    );
  } catch (error) {
    return `(does not decode: ${error instanceof Error ? error.message : String(error)})`;
  }
  return json.length > MAX_SHOWN ? `${json.slice(0, MAX_SHOWN)}… (${json.length} chars)` : json;
}

/** Hex of bytes, the middle left out past `max` bytes. */
export function hexView(bytes: Uint8Array, max = 2048): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length <= max) return buffer.toString('hex');
  const half = max / 2;
  return `${buffer.subarray(0, half).toString('hex')}… (${buffer.length - max} bytes left out) …${buffer.subarray(buffer.length - half).toString('hex')}`;
}
