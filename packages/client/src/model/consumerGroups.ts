// A consumer group from outside (the Store's DescribeConsumerGroup, ListParkedCells,
// ReplayParkedCell, ResetConsumerGroup): requests checked and built, answers as plain typed
// values, ids and cursors as the SDK's other ids (`ExactInteger`), counts as numbers.

import {
  StartFrom,
  type Cell as WireCell,
  type ConsumerGroupShard as WireGroupShard,
  type ListParkedCellsRequest,
  type ParkedCell as WireParkedCell,
  type ResetConsumerGroupRequest,
} from '@shameless/proto';
import { InvalidArgumentError, type Transport } from '../transport/index.js';
import { decodeBody } from './body.js';
import { readCall, writeCall, type CallOptions } from './callOptions.js';
import { type ExactInteger, fromWire, toWireUint32, toWireUint64 } from './integers.js';
import type { Body } from './schema.js';

/** A model, by name or as defined (`Rate`). */
export type ModelRef = string | { readonly name: string };

/** A consumer group as {@link Store.describeConsumerGroup} tells it. */
export interface ConsumerGroupDescription {
  readonly model: string;
  readonly group: string;
  /** The members whose session is live. */
  readonly members: readonly ConsumerGroupMember[];
  /** Every content shard, in order. */
  readonly shards: readonly ConsumerGroupShard[];
}

/** A live member of a consumer group. */
export interface ConsumerGroupMember {
  readonly memberId: string;
  readonly joinedAt: Date | undefined;
  /** When its session ends unless the server holding its stream hears from it. */
  readonly expiresAt: Date | undefined;
  /** The server process holding its stream (`host:pid`), and its peer address there. */
  readonly server: string;
  readonly peer: string;
  /** The shards it owns, in order. */
  readonly shards: readonly number[];
}

/** One shard of a consumer group. */
export interface ConsumerGroupShard {
  readonly shard: number;
  /** The owning member's id; undefined while the shard waits for one. */
  readonly owner: string | undefined;
  /** Bumped by every change of owner. */
  readonly epoch: ExactInteger;
  /** Every cell of the shard with an id at or below it is handled (durably). */
  readonly cursor: ExactInteger;
  /** The shard's highest id when read. */
  readonly maxId: ExactInteger;
  /** Cells after the cursor, counted up to 1,000,000 (`lagCapped` when there are more). */
  readonly lag: number;
  readonly lagCapped: boolean;
  /** Cells of the shard parked in this group. */
  readonly parked: number;
}

/** A parked cell of a consumer group. */
export interface ParkedCell {
  readonly shard: number;
  readonly id: ExactInteger;
  /** Deliveries it had. */
  readonly attempts: number;
  /** Why: the handler's last error, or the reason it was parked with. */
  readonly error: string;
  readonly parkedAt: Date | undefined;
  /** A replay was asked for and has not been acknowledged yet. */
  readonly replayPending: boolean;
  /** The cell as stored; undefined when it is no longer in its table. */
  readonly cell: ParkedCellContent | undefined;
}

/** What a parked cell holds. */
export interface ParkedCellContent {
  readonly uuid: string;
  readonly name: string;
  readonly refKey: number;
  readonly createdAt: Date | undefined;
  /**
   * Decoded when first used; an UnreadableBodyError then for a body the SDK cannot read (often
   * why the cell was parked).
   */
  readonly body: Body;
}

/** Options of {@link Store.parkedCells}. */
export interface ParkedCellsOptions extends CallOptions {
  /** Only this shard's parked cells; every shard's by default. */
  readonly shard?: number;
  /** Cells read per call: 1 to 1000, default 100. */
  readonly pageSize?: number;
}

/** Where {@link Store.resetConsumerGroup} moves a group's cursors. */
export type ResetTarget =
  /** Every shard to its beginning. */
  | 'earliest'
  /** Every shard to its highest id now. */
  | 'latest'
  /** One shard to `cursor`: cells with a greater id are delivered next. */
  | { readonly shard: number; readonly cursor: number | bigint };

/** The model's name from a {@link ModelRef}. */
export function modelName(model: ModelRef, what: string): string {
  const name = typeof model === 'string' ? model : model?.name;
  if (typeof name !== 'string' || name === '') {
    throw new InvalidArgumentError(`${what}: model must be a model or its name`);
  }
  return name;
}

/** The group's name, as a string (the server checks its form). */
export function groupName(group: unknown, what: string): string {
  if (typeof group !== 'string' || group === '') {
    throw new InvalidArgumentError(`${what}: group must be a group's name`);
  }
  return group;
}

export async function describeConsumerGroup(
  transport: Transport,
  model: ModelRef,
  group: string,
  options: CallOptions,
): Promise<ConsumerGroupDescription> {
  const what = 'describeConsumerGroup';
  const response = await transport.unary(
    'describeConsumerGroup',
    { model: modelName(model, what), group: groupName(group, what) },
    readCall(options),
  );
  return {
    model: response.model,
    group: response.group,
    members: response.members.map((member) => ({
      memberId: member.memberId,
      joinedAt: member.joinedAt,
      expiresAt: member.expiresAt,
      server: member.server,
      peer: member.peer,
      shards: [...member.shards].sort((a, b) => a - b),
    })),
    shards: response.shards.map(groupShard),
  };
}

/**
 * A group's parked cells, in shard then id order, read a page at a time as the loop asks for
 * more: iterate it with `for await`, or take them all with {@link ParkedCells.toArray}.
 */
export class ParkedCells implements AsyncIterable<ParkedCell> {
  readonly #transport: Transport;
  readonly #request: ListParkedCellsRequest;
  readonly #options: CallOptions;

  /** @internal Made by {@link Store.parkedCells}. */
  constructor(transport: Transport, model: ModelRef, group: string, options: ParkedCellsOptions) {
    const what = 'parkedCells';
    this.#transport = transport;
    this.#request = {
      model: modelName(model, what),
      group: groupName(group, what),
      shard:
        options.shard === undefined ? undefined : toWireUint32(options.shard, `${what}: shard`),
      limit: options.pageSize === undefined ? 0 : pageSize(options.pageSize),
      pageToken: '',
    };
    this.#options = { deadlineMs: options.deadlineMs, signal: options.signal };
  }

  /** Every parked cell. */
  async toArray(): Promise<ParkedCell[]> {
    const cells: ParkedCell[] = [];
    for await (const cell of this) cells.push(cell);
    return cells;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ParkedCell> {
    let pageToken = '';
    do {
      const page = await this.#transport.unary(
        'listParkedCells',
        { ...this.#request, pageToken },
        readCall(this.#options),
      );
      for (const parked of page.cells) yield parkedCell(this.#request.model, parked);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }
}

export async function replayParkedCell(
  transport: Transport,
  model: ModelRef,
  group: string,
  cell: { readonly shard: number; readonly id: number | bigint },
  options: CallOptions,
): Promise<void> {
  const what = 'replayParkedCell';
  await transport.unary(
    'replayParkedCell',
    {
      model: modelName(model, what),
      group: groupName(group, what),
      shard: toWireUint32(cell?.shard, `${what}: shard`),
      id: toWireUint64(cell?.id, `${what}: id`),
    },
    // IDEMPOTENT: asking again before the replay is acknowledged changes nothing.
    writeCall(options),
  );
}

export async function resetConsumerGroup(
  transport: Transport,
  model: ModelRef,
  group: string,
  to: ResetTarget,
  options: CallOptions,
): Promise<ConsumerGroupShard[]> {
  const what = 'resetConsumerGroup';
  let target: ResetConsumerGroupRequest['to'];
  if (to === 'earliest' || to === 'latest') {
    target = {
      $case: 'position',
      position: to === 'latest' ? StartFrom.START_FROM_LATEST : StartFrom.START_FROM_EARLIEST,
    };
  } else if (typeof to === 'object' && to !== null) {
    target = {
      $case: 'shard',
      shard: {
        shard: toWireUint32(to.shard, `${what}: shard`),
        cursor: toWireUint64(to.cursor, `${what}: cursor`),
      },
    };
  } else {
    throw new InvalidArgumentError(
      `${what}: to must be 'earliest', 'latest' or { shard, cursor }, got ${String(to)}`,
    );
  }
  const response = await transport.unary(
    'resetConsumerGroup',
    { model: modelName(model, what), group: groupName(group, what), to: target },
    writeCall(options),
  );
  return response.shards.map(groupShard);
}

function groupShard(shard: WireGroupShard): ConsumerGroupShard {
  return {
    shard: shard.shard,
    owner: shard.owner === '' ? undefined : shard.owner,
    epoch: fromWire(shard.epoch),
    cursor: fromWire(shard.cursor),
    maxId: fromWire(shard.maxId),
    lag: Number(shard.lag),
    lagCapped: shard.lagCapped,
    parked: shard.parked,
  };
}

function parkedCell(model: string, parked: WireParkedCell): ParkedCell {
  const cell = parked.cell;
  const stored = cell !== undefined && cell.uuid !== '';
  return {
    shard: cell?.shard ?? 0,
    id: fromWire(cell?.id ?? 0n),
    attempts: parked.attempts,
    error: parked.error,
    parkedAt: parked.parkedAt,
    replayPending: parked.replayPending,
    cell: stored ? parkedContent(model, cell) : undefined,
  };
}

/**
 * A parked cell's content, its body decoded when first used: a cell is often parked because
 * its body cannot be read, and that must not fail the listing of the others.
 */
function parkedContent(model: string, cell: WireCell): ParkedCellContent {
  let body: Body | undefined;
  return {
    uuid: cell.uuid,
    name: cell.name,
    refKey: cell.refKey,
    createdAt: cell.createdAt,
    get body(): Body {
      body ??= decodeBody(cell.body, {
        model,
        uuid: cell.uuid,
        cell: cell.name,
        refKey: cell.refKey,
      });
      return body;
    },
  };
}

function pageSize(value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 1000) {
    return value;
  }
  throw new InvalidArgumentError(
    `parkedCells: pageSize must be an integer from 1 to 1000, got ${String(value)}`,
  );
}
