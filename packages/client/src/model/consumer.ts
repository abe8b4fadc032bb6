// A model's consumer group member (`Model.consume`): the groups layer's member, with the
// model's typed cells handed to the handler and ids and cursors handed out as the SDK's other
// ids are (`ExactInteger`).

import type { Cell as WireCell } from '@shameless/proto';
import {
  GroupMember,
  memberSettings,
  type Delivery,
  type MemberEvent,
  type MemberEventOf,
  type MemberOptions,
} from '../groups/index.js';
import { InvalidArgumentError } from '../transport/index.js';
import type { Cell } from './cell.js';
import { UnreadableBodyError } from './errors.js';
import { type ExactInteger, fromWire } from './integers.js';
import type { ModelPort } from './modelPort.js';
import type { CellName, ModelSchema } from './schema.js';

/** What a consumer tells `onEvent` as it goes (see each variant). Ids are `ExactInteger`s. */
export type ConsumerEvent = MemberEventOf<ExactInteger>;

/** Options of {@link Model.consume}. */
export interface ConsumeOptions<S extends ModelSchema = ModelSchema> extends MemberOptions {
  /** The cells to deliver; every cell of the model by default. */
  readonly cells?: readonly CellName<S>[];
  /**
   * Told what the consumer goes through: shards assigned, revoked, released and lost, cells
   * that failed or were parked, reconnections, the end. What it throws is ignored.
   */
  readonly onEvent?: (event: ConsumerEvent) => void;
}

/**
 * Handles one cell. Resolving acknowledges the cell; throwing (or rejecting) fails this
 * delivery: the cell comes again after a backoff, or is parked once it was delivered
 * `maxDeliveries` times; `delivery.park(reason)` parks it at once. An UnreadableBodyError of
 * the cell's own body (one the SDK cannot read) parks it at once, its message the reason.
 */
export type ConsumeHandler<S extends ModelSchema = ModelSchema> = (
  cell: Cell<S>,
  delivery: Delivery,
) => unknown;

/**
 * A member of a consumer group of a model, made by {@link Model.consume}: it is handed the
 * cells of the shards it owns, each shard's in id order, and runs the handler on them.
 * Together the members of a group handle every cell of every shard at least once.
 *
 * It joins at once and keeps its membership through failures (a server that goes away, a
 * connection that breaks or falls silent): it joins again, under the same member id, on the
 * next endpoint, after a backoff. It ends with {@link Consumer.close} (gracefully), with its
 * `signal`, or with a failure joining again cannot mend ({@link Consumer.closed} rejects).
 */
export class Consumer<S extends ModelSchema = ModelSchema> {
  readonly #member: GroupMember;

  /** @internal Made by {@link Model.consume}. */
  constructor(context: ModelPort<S>, options: ConsumeOptions<S>, handler: ConsumeHandler<S>) {
    if (typeof handler !== 'function') {
      throw new InvalidArgumentError('consume: the handler must be a function');
    }
    const settings = memberSettings(context.schema.name, options);
    const { onEvent } = options;
    this.#member = new GroupMember({
      transport: context.transport,
      settings,
      signal: options.signal,
      handle: (wire: WireCell, delivery: Delivery) => handled(context, handler, wire, delivery),
      onEvent: onEvent && ((event) => onEvent(publicEvent(event))),
    });
  }

  /** The member id it joins under (given, or made for it), the same after reconnections. */
  get memberId(): string {
    return this.#member.memberId;
  }

  /** The shards it owns now, in order (none while it is reconnecting). */
  get shards(): number[] {
    return this.#member.shards;
  }

  /**
   * Per shard, the group's cursor as the server last confirmed it durable to this member (when
   * it was assigned the shard, and on every commit since): every cell of the shard with an id
   * at or below it is handled, and none of them will be delivered to any member again (unless
   * replayed, or the group is reset).
   */
  get committed(): ReadonlyMap<number, ExactInteger> {
    return new Map([...this.#member.committed].map(([shard, cursor]) => [shard, fromWire(cursor)]));
  }

  /**
   * Settles when the consumer has stopped for good: resolves after {@link close} (or the
   * signal), rejects with a typed error (NotFoundError for an unknown model or cell,
   * PermissionDeniedError, CancelledError once the store is closed, ...) when a failure that
   * joining again cannot mend stopped it. No handler runs any more once it has settled.
   */
  get closed(): Promise<void> {
    return this.#member.closed;
  }

  /**
   * Leaves the group gracefully: no more cells start, those started finish and are
   * acknowledged, then the server commits the cursors and hands the shards to the other
   * members (nothing handled here is delivered again). Resolves once the server said so
   * (GroupLeft), or the stream ended, and no handler runs any more. Never rejects: the `left`
   * event's `handedOver` says which it was.
   */
  close(): Promise<void> {
    return this.#member.close();
  }
}

/**
 * Runs the handler on a cell; a handler that fails because this cell's body cannot be read
 * parks it at once. Bodies never change, so every later delivery would fail the same way and
 * hold the shard through `maxDeliveries` backoffs; parked, it waits for a replay (after an
 * upgrade that reads it, say) and the shard goes on.
 */
async function handled<S extends ModelSchema>(
  context: ModelPort<S>,
  handler: ConsumeHandler<S>,
  wire: WireCell,
  delivery: Delivery,
): Promise<unknown> {
  try {
    return await handler(cellOf(context, wire), delivery);
  } catch (error) {
    const unreadable =
      error instanceof UnreadableBodyError &&
      error.uuid === wire.uuid &&
      error.cell === wire.name &&
      error.refKey === wire.refKey;
    if (!unreadable) throw error;
    delivery.park(error.message);
    return undefined;
  }
}

/** The log cell as a cell of a record handle whose other cells are not read yet. */
function cellOf<S extends ModelSchema>(context: ModelPort<S>, wire: WireCell): Cell<S> {
  return context.newRecord(wire.uuid, new Map([[wire.name, wire]])).cell(wire.name as CellName<S>);
}

function publicEvent(event: MemberEvent): ConsumerEvent {
  switch (event.type) {
    case 'assigned':
      return { ...event, cursor: fromWire(event.cursor) };
    case 'failed':
    case 'parked':
      return { ...event, id: fromWire(event.id) };
    default:
      return event;
  }
}
