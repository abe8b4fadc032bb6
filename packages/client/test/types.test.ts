// Compile-time checks: the schema's field names and types flow into put, where, set and
// update. Each `@ts-expect-error` line must fail to compile; if the types regress and accept
// it, the directive itself becomes an error and `tsc -b` fails. Nothing here runs.

import type { ExactInteger, LogPage, Model, RecordOf, Store } from '../src/index.js';
import { RATE_SCHEMA } from './support/rateModel.js';

type Rate = Model<typeof RATE_SCHEMA>;

export async function putChecks(Rate: Rate): Promise<void> {
  // Right: every index field with its type, plus any content.
  await Rate.put({
    hotel_id: 1,
    room_type: '1 bed',
    check_in_date: '2026-12-01',
    gateway: 'pegasus',
    discount_type: 'geo',
    net_price: 120,
  });
  const rest = { room_type: 'a', check_in_date: 'b', gateway: 'c', discount_type: 'd' };
  await Rate.put({ hotel_id: 1, ...rest });
  // An integer field takes a bigint too (any signed 64-bit integer).
  await Rate.put({ hotel_id: 2n ** 63n - 1n, ...rest });
  // @ts-expect-error hotel_id is an integer field
  await Rate.put({ hotel_id: '1', ...rest });
  // @ts-expect-error a misspelt index field: hotel_id is missing
  await Rate.put({ hotelid: 1, ...rest });
  const { gateway: _gateway, ...withoutGateway } = rest;
  // @ts-expect-error gateway (a secondary index field) is required too
  await Rate.put({ hotel_id: 1, ...withoutGateway });
}

export function whereChecks(Rate: Rate): void {
  // Right: the shard field's value, other fields by value or operator, options.
  Rate.where({ hotel_id: 1, room_type: '1 bed', check_in_date: { gte: '2026-12-01' } });
  Rate.where({ hotel_id: 1, check_in_date: { between: ['2026-12-01', '2026-12-31'] } });
  Rate.where({ hotel_id: 1, room_type: { in: ['a', 'b'] } }, { order: 'desc', limit: 10 });
  Rate.where({ hotel_id: 1 }, { cells: ['base', 'meta'] });
  Rate.index('secondary').where({ hotel_id: 1, gateway: 'pegasus', discount_type: { ne: 'x' } });
  Rate.indices.secondary.where({ hotel_id: 1, discount_type: 'geo' });
  Rate.where({ hotel_id: -(2n ** 63n), room_type: '1 bed' });

  // @ts-expect-error not a field of the primary index
  Rate.where({ hotel_id: 1, gateway: 'pegasus' });
  // @ts-expect-error a misspelt field
  Rate.where({ hotel_id: 1, roomtype: '1 bed' });
  // @ts-expect-error room_type is a string field
  Rate.where({ hotel_id: 1, room_type: 2 });
  // @ts-expect-error ... a bigint is no string either
  Rate.where({ hotel_id: 1, room_type: 2n });
  // @ts-expect-error operands are typed too
  Rate.where({ hotel_id: 1, check_in_date: { gte: 20261201 } });
  // @ts-expect-error unknown operator
  Rate.where({ hotel_id: 1, check_in_date: { after: '2026-12-01' } });
  // @ts-expect-error between takes [low, high]
  Rate.where({ hotel_id: 1, check_in_date: { between: ['2026-12-01'] } });
  // @ts-expect-error the shard field is required
  Rate.where({ room_type: '1 bed' });
  // @ts-expect-error the shard field takes a value
  Rate.where({ hotel_id: '1' });
  // @ts-expect-error check_in_date is not in the secondary index
  Rate.index('secondary').where({ hotel_id: 1, check_in_date: '2026-12-01' });
  // @ts-expect-error no such index
  Rate.index('tertiary');
  // @ts-expect-error no such cell
  Rate.where({ hotel_id: 1 }, { cells: ['ota_rate'] });
}

export async function recordChecks(rate: RecordOf<typeof RATE_SCHEMA>): Promise<void> {
  rate.set('net_price', 130);
  rate.meta.set('hotel_enabled', true);
  rate.cell('meta').get('hotel_enabled');
  await rate.update({ net_price: 1 });
  const key: string = 'anything';
  rate.set(key, 1); // a non-literal key is checked at run time

  // @ts-expect-error index fields are read-only in every cell
  rate.set('hotel_id', 2);
  // @ts-expect-error ... including secondary index fields
  rate.meta.set('gateway', 'x');
  // @ts-expect-error ... and in update
  await rate.update({ discount_type: 'none' });
  // @ts-expect-error no such cell
  rate.cell('ota_rate');
  // @ts-expect-error no named accessor for an undeclared cell
  void rate.ota_rate;
}

export async function integerChecks(Rate: Rate, store: Store): Promise<void> {
  // Ids and cursors come as numbers while safe, as bigints beyond; inputs take either.
  const rate = (await Rate.where({ hotel_id: 1 }).first())!;
  const id: ExactInteger | undefined = rate.base.id;
  // @ts-expect-error an id may be a bigint
  const asNumber: number | undefined = rate.base.id;
  const page: LogPage<typeof RATE_SCHEMA> = await Rate.fetchLatestCells({
    shard: 0,
    cursor: 2n ** 60n,
  });
  // @ts-expect-error a cursor may be a bigint
  const next: number = page.nextCursor;
  await Rate.fetchLatestCells({ shard: 0, cursor: page.nextCursor });
  await Rate.fetchLatestCells({ shard: 0, cursor: id ?? 0 });
  Rate.each({ cursors: { 0: 2n ** 60n, 1: 5 } });
  Rate.each({ cursors: new Map([[0, page.maxId]]) });
  await store.findShard(2n ** 63n - 1n);
  await Rate.findShard(-1n);
  // @ts-expect-error a shard value is an integer
  await store.findShard('1');
  void [asNumber, next];
}

export async function schemaChecks(store: Store): Promise<void> {
  await store.defineModel({
    name: 'ok',
    primary: { fields: { key: 'integer', kind: 'string' }, shardOn: 'key' },
  });
  await store.defineModel({
    name: 'bad_shard',
    // @ts-expect-error shardOn must be an integer field
    primary: { fields: { key: 'integer', kind: 'string' }, shardOn: 'kind' },
  });
  await store.defineModel({
    name: 'bad_type',
    // @ts-expect-error field types are 'integer' or 'string'
    primary: { fields: { key: 'integer', at: 'date' }, shardOn: 'key' },
  });
  await store.defineModel({
    name: 'bad_secondary',
    primary: { fields: { key: 'integer' }, shardOn: 'key' },
    // @ts-expect-error a secondary index's shardOn must be one of its integer fields
    indices: { by_kind: { fields: { key: 'integer', kind: 'string' }, shardOn: 'nope' } },
  });
}
