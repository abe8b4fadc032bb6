// How much one request may ask of the store: the largest cell, and caps on what a query or a
// batch may cost. Beyond any of them a request is refused with INVALID_ARGUMENT naming the
// field and the cap, before any SQL runs.
import { InvalidArgumentError } from './errors.js';

/** A content table's body column is a MEDIUMBLOB: at most 2^24 - 1 bytes. */
export const MEDIUMBLOB_BYTES = 16 * 1024 * 1024 - 1;
/**
 * What an INSERT of one version carries besides its body (statement text, uuid, cell name,
 * request id, created_at) and the read-back sent with it in the same packet, with room to spare.
 */
const STATEMENT_OVERHEAD_BYTES = 4096;

/**
 * The largest body a cell may have given the partitions' max_allowed_packet (the smallest of
 * them): mysql2 sends a body as X'<hex>', two bytes per byte, and a statement must fit one
 * packet. Never more than a MEDIUMBLOB holds.
 */
export function maxCellBytesFor(maxAllowedPackets: readonly number[]): number {
  const packet = Math.min(...maxAllowedPackets);
  return Math.max(
    0,
    Math.min(MEDIUMBLOB_BYTES, Math.floor((packet - STATEMENT_OVERHEAD_BYTES) / 2)),
  );
}

export interface QueryLimits {
  /** Conditions of one Where (or of each query of WhereMany). */
  readonly maxConditions: number;
  /** Values of one IN condition. */
  readonly maxInValues: number;
  /** Records of one Where page, cells of one FetchLatestCells page or of one Each batch. */
  readonly maxPageRecords: number;
  /** Keys of one GetCells, writes of one WriteCells. */
  readonly maxBatchKeys: number;
  /** Puts of one PutMany. */
  readonly maxPutBatch: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxConditions: 16,
  maxInValues: 1000,
  maxPageRecords: 10_000,
  maxBatchKeys: 10_000,
  maxPutBatch: 1000,
};

/** A body (or a put's values) no larger than a cell may be. */
export function requireCellSize(bytes: Buffer, field: string, maxCellBytes: number): void {
  if (bytes.length > maxCellBytes) {
    throw new InvalidArgumentError(
      field,
      `is ${bytes.length} bytes; a cell holds at most ${maxCellBytes} bytes (DescribeStore's max_cell_bytes)`,
    );
  }
}
