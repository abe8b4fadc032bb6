// Validation of the request fields that many operations share.
import { InvalidArgumentError } from './errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export function requireUuid(uuid: string, field = 'uuid'): string {
  if (!UUID.test(uuid)) {
    throw new InvalidArgumentError(
      field,
      `must be a lowercase UUID like 3f2b8c1e-7a4d-4e1b-9c2a-5d6e7f8a9b0c, got ${JSON.stringify(uuid)}`,
    );
  }
  return uuid;
}

export function requireRequestId(requestId: string, field = 'request_id'): string {
  if (!REQUEST_ID.test(requestId)) {
    throw new InvalidArgumentError(
      field,
      requestId === ''
        ? 'is required: choose one per logical write (a UUID) and resend it unchanged on retries'
        : 'must be 1 to 64 characters of A-Z a-z 0-9 . _ : -',
    );
  }
  return requestId;
}

export function requireLimit(limit: number, field: string, fallback: number, max: number): number {
  if (!Number.isInteger(limit) || limit < 0) {
    throw new InvalidArgumentError(field, `must be a non-negative integer, got ${limit}`);
  }
  if (limit > max) throw new InvalidArgumentError(field, `must be at most ${max}, got ${limit}`);
  return limit === 0 ? fallback : limit;
}

/** A batch's item count: 1 to `max`. */
export function requireBatchSize(count: number, field: string, max: number): void {
  if (count === 0) throw new InvalidArgumentError(field, 'at least one is required');
  if (count > max) throw new InvalidArgumentError(field, `at most ${max} per call, got ${count}`);
}

export function requireShard(shard: number, shardsCount: number, field: string): number {
  if (!Number.isInteger(shard) || shard < 0 || shard >= shardsCount) {
    throw new InvalidArgumentError(
      field,
      `shard ${shard} does not exist; shards are 0 to ${shardsCount - 1}`,
    );
  }
  return shard;
}
