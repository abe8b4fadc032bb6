// The session of docs/contract.md over the raw generated gRPC client: define a model, put,
// where, previous, tail a shard. Run it with `pnpm example` while `pnpm start` serves (another
// address with SHAMELESS_ADDRESS=host:port). Its model, session_rate, is its own, so it runs
// before or after `pnpm example:gem` (whose rate model has another shape) on one store.
import {
  type CallOptions,
  type ClientUnaryCall,
  Metadata,
  type ServiceError,
  credentials,
} from '@grpc/grpc-js';
import {
  FieldType,
  MessagePackFloat,
  Operator,
  SortOrder,
  StoreClient,
  encodeMessagePack,
  readMessagePack,
} from '@shameless/proto';
import { randomUUID } from 'node:crypto';
import { address, requireServer } from './server.js';

// Bodies through @shameless/proto's exact MessagePack, as the SDK's: plain msgpackr writes an
// integer past 32 bits as a float, and reads the float 2.0 as 2 (here a MessagePackFloat).
const readBody = (body: Uint8Array) =>
  readMessagePack(body, { float: (value) => new MessagePackFloat(value) });

await requireServer();
const client = new StoreClient(address, credentials.createInsecure());
type Callback<Res> = (error: ServiceError | null, response: Res) => void;
const rpc =
  <Req, Res>(
    method: (r: Req, m: Metadata, o: Partial<CallOptions>, cb: Callback<Res>) => ClientUnaryCall,
  ) =>
  (request: Req) =>
    new Promise<Res>((resolve, reject) =>
      method.call(client, request, new Metadata(), { deadline: Date.now() + 5000 }, (e, r) =>
        e ? reject(e) : resolve(r),
      ),
    );
const [integer, string] = [FieldType.FIELD_TYPE_INTEGER, FieldType.FIELD_TYPE_STRING];

await rpc(client.defineModel)({
  model: {
    name: 'session_rate',
    primaryIndex: {
      name: 'primary',
      fields: [
        { name: 'hotel_id', type: integer },
        { name: 'room_type', type: string },
        { name: 'check_in_date', type: string },
      ],
      shardOn: 'hotel_id',
    },
    secondaryIndices: [],
    cells: ['meta'],
  },
});
const rate = { hotel_id: 1, room_type: '1 bed', check_in_date: '2026-12-01', net_price: 120 };
const first = await rpc(client.put)({
  model: 'session_rate',
  values: encodeMessagePack(rate),
  requestId: randomUUID(),
});
const second = await rpc(client.put)({
  model: 'session_rate',
  values: encodeMessagePack({ ...rate, net_price: 130 }),
  requestId: randomUUID(),
});
console.log(
  `put ${first.uuid} (created: ${first.created}); put again -> base version ${second.base!.refKey}`,
);

const where = client.where({
  model: 'session_rate',
  index: 'primary',
  conditions: [
    {
      field: 'hotel_id',
      op: Operator.OPERATOR_EQ,
      values: [{ kind: { $case: 'integer', integer: 1n } }],
    },
    {
      field: 'check_in_date',
      op: Operator.OPERATOR_GE,
      values: [{ kind: { $case: 'string', string: '2026-12-01' } }],
    },
  ],
  cells: ['base'],
  order: SortOrder.SORT_ORDER_ASC,
  limit: 10,
  pageToken: '',
});
for await (const page of where) {
  for (const record of page.records)
    console.log('where ->', record.uuid, readBody(record.cells[0]!.body));
}

const previous = await rpc(client.previous)({
  model: 'session_rate',
  uuid: first.uuid,
  cell: 'base',
  refKey: second.base!.refKey,
});
console.log(
  `previous of version ${second.base!.refKey} ->`,
  previous.cell?.refKey,
  readBody(previous.cell!.body),
);

const shard = second.base!.shard;
const log = await rpc(client.fetchLatestCells)({
  model: 'session_rate',
  shard,
  cursor: 0n,
  limit: 5,
});
console.log(
  `shard ${shard} log (max id ${log.maxId}):`,
  log.cells.map((c) => `#${c.id} ${c.uuid.slice(0, 8)} ${c.name}@${c.refKey}`),
);
client.close();
