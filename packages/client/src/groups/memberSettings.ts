// A member's options, checked before anything is sent (each bad one is an InvalidArgumentError
// naming it, with the bounds the server sets), and the JoinGroup that says them to the server.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { StartFrom, type JoinGroup } from '@shameless/proto';
import { InvalidArgumentError, type BackoffOptions } from '../transport/index.js';

/** Options of a consumer group member (the model layer adds `onEvent` and types `cells`). */
export interface MemberOptions {
  /** Required: the group's name, 1 to 64 of `[A-Za-z0-9._-]`. It comes to exist with its first member. */
  readonly group: string;
  /**
   * Where a group that does not exist yet starts each shard: `'earliest'` (every cell already
   * written, then the new ones; the default) or `'latest'` (only cells written after the group
   * came to exist). A group that exists goes on from its cursors.
   */
  readonly from?: 'earliest' | 'latest';
  /**
   * The cells to deliver (names of the model's cells); every cell by default. Cells of other
   * names are passed over: the shard's cursor moves past them unseen.
   */
  readonly cells?: readonly string[];
  /**
   * Cells delivered to this member and not yet answered, over all its shards, at most: 1 to
   * 10000, default 256. No shard takes more than its share while others have cells waiting.
   */
  readonly maxInFlight?: number;
  /**
   * Cells of one shard the handler runs at once: 1 (the default: strict id order) up to
   * `maxInFlight`. It is also how many cells of each shard count as delivered once more when
   * the member dies holding them.
   */
  readonly perShardInFlight?: number;
  /** Deliveries of a cell before it is parked: 1 to 100, default 5. */
  readonly maxDeliveries?: number;
  /**
   * How long the server waits without a message from the member before its shards go to
   * others, and how long the member waits without a message from the server before it takes
   * the stream for dead and joins again: 1000 to 300000 ms, default 10000.
   */
  readonly sessionTimeoutMs?: number;
  /**
   * Names the member across its streams, 1 to 64 of `[A-Za-z0-9._-]`: after a reconnection it
   * joins again under this id and takes its shards back. Default: one made per consumer from
   * the host name, the process id and random bits, kept across its reconnections.
   */
  readonly memberId?: string;
  /** Aborting it closes the consumer, as `close()` does (gracefully). */
  readonly signal?: AbortSignal;
  /**
   * The backoff between joins after a stream fails: full jitter, the ceiling starting at
   * `baseMs` (default 100) and doubling up to `maxMs` (default 5000); back to `baseMs` after
   * every stream that joined.
   */
  readonly reconnect?: { readonly baseMs?: number; readonly maxMs?: number };
}

/** A member's options checked, as the groups layer uses them. */
export interface MemberSettings {
  readonly join: JoinGroup;
  readonly perShardInFlight: number;
  readonly reconnect: BackoffOptions;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The server's bounds (and defaults) of a member's settings. */
export const MEMBER_LIMITS = {
  maxInFlight: { min: 1, max: 10_000, default: 256 },
  maxDeliveries: { min: 1, max: 100, default: 5 },
  sessionTimeoutMs: { min: 1000, max: 300_000, default: 10_000 },
} as const;

/**
 * The settings of a member of `model`'s group from its options.
 *
 * @throws InvalidArgumentError naming the first option that is missing or out of bounds.
 */
export function memberSettings(model: string, options: MemberOptions): MemberSettings {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('consume: options must be an object with at least `group`');
  }
  const group = requireName(options.group, 'group');
  const memberId =
    options.memberId === undefined ? defaultMemberId() : requireName(options.memberId, 'memberId');
  const from = options.from ?? 'earliest';
  if (from !== 'earliest' && from !== 'latest') {
    throw new InvalidArgumentError(
      `consume: from must be 'earliest' or 'latest', got ${JSON.stringify(from)}`,
    );
  }
  const cells = options.cells ?? [];
  if (!Array.isArray(cells)) throw new InvalidArgumentError('consume: cells must be an array');
  cells.forEach((cell, i) => {
    if (typeof cell !== 'string' || cell === '') {
      throw new InvalidArgumentError(`consume: cells[${i}] must be a cell name`);
    }
  });
  const maxInFlight = requireInteger(
    options.maxInFlight,
    'maxInFlight',
    MEMBER_LIMITS.maxInFlight.min,
    MEMBER_LIMITS.maxInFlight.max,
    MEMBER_LIMITS.maxInFlight.default,
  );
  const perShardInFlight = requireInteger(
    options.perShardInFlight,
    'perShardInFlight',
    1,
    maxInFlight,
    1,
  );
  const maxDeliveries = requireInteger(
    options.maxDeliveries,
    'maxDeliveries',
    MEMBER_LIMITS.maxDeliveries.min,
    MEMBER_LIMITS.maxDeliveries.max,
    MEMBER_LIMITS.maxDeliveries.default,
  );
  const sessionTimeoutMs = requireInteger(
    options.sessionTimeoutMs,
    'sessionTimeoutMs',
    MEMBER_LIMITS.sessionTimeoutMs.min,
    MEMBER_LIMITS.sessionTimeoutMs.max,
    MEMBER_LIMITS.sessionTimeoutMs.default,
  );
  const baseMs = requireInteger(options.reconnect?.baseMs, 'reconnect.baseMs', 1, 60_000, 100);
  const maxMs = requireInteger(options.reconnect?.maxMs, 'reconnect.maxMs', baseMs, 600_000, 5000);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('consume: signal must be an AbortSignal');
  }
  return {
    join: {
      model,
      group,
      memberId,
      from: from === 'latest' ? StartFrom.START_FROM_LATEST : StartFrom.START_FROM_EARLIEST,
      cells: [...cells],
      maxInFlight,
      perShardInFlight,
      maxDeliveries,
      sessionTimeoutMs,
    },
    perShardInFlight,
    reconnect: { baseMs, maxMs, multiplier: 2 },
  };
}

function requireName(value: unknown, option: string): string {
  if (typeof value === 'string' && NAME.test(value)) return value;
  throw new InvalidArgumentError(
    `consume: ${option} must be 1 to 64 characters of A-Z a-z 0-9 . _ -, got ` +
      (typeof value === 'string' ? JSON.stringify(value) : String(value)),
  );
}

function requireInteger(
  value: unknown,
  option: string,
  min: number,
  max: number,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) {
    return value;
  }
  throw new InvalidArgumentError(
    `consume: ${option} must be an integer from ${min} to ${max}, got ${String(value)}`,
  );
}

/** `<host>.<pid>.<random>`: unique per consumer, and telling in `describeConsumerGroup`. */
function defaultMemberId(): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 40) || 'host';
  return `${host}.${process.pid}.${randomBytes(4).toString('hex')}`;
}
