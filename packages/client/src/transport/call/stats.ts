// Counters of what the transport did, for tests, benchmarks and metrics.

/** A snapshot of a transport's counters (since it was created). */
export interface TransportStats {
  /** Logical calls started (unary and streaming); a batch sent by the coalescing layer is one. */
  calls: number;
  /** Attempts sent: first attempts, retries and hedges. */
  attempts: number;
  /** Retries sent (attempts after a transient failure). */
  retries: number;
  /** Hedges sent (extra attempts while another was still out). */
  hedges: number;
  /** Calls answered by a hedge rather than by the attempt it hedged. */
  hedgesWon: number;
  /** Retries or hedges wanted but refused because the token budget was too low. */
  budgetRefusals: number;
  /** Calls that ended in an error (after any retries). */
  failures: number;
  /**
   * Calls sent inside a batch by the coalescing layer (`connect`'s default; always 0 without
   * it): each `getCell`, `writeCell`, `put` or `where` page that shared a GetCells, WriteCells,
   * PutMany or WhereMany call with others made in the same tick, counted once per batch call
   * it was in.
   */
  coalescedCalls: number;
  /** Batch calls the coalescing layer sent for them (each counted once, however retried). */
  coalescedBatches: number;
  /**
   * Batches that failed as a whole (an item the server refused, an answer over the message
   * size limit) and whose calls were sent again on their own or in smaller batches.
   */
  batchFallbacks: number;
  /**
   * Calls the coalescing layer held back, unsent, while batch calls of their kind were out
   * (see `maxBatchesInFlight`), each counted once.
   */
  heldCalls: number;
  /**
   * Attempts sent over a Pipeline stream (`pipeline`, on by default) rather than as calls of
   * their own, whatever they were answered.
   */
  pipelinedAttempts: number;
  /** Tokens left in the retry/hedge budget. */
  budgetTokens: number;
}

/** The mutable counters behind {@link TransportStats} (all but the budget). */
export type TransportCounters = Omit<TransportStats, 'budgetTokens'>;

/** Fresh, zeroed counters. */
export function newCounters(): TransportCounters {
  return {
    calls: 0,
    attempts: 0,
    retries: 0,
    hedges: 0,
    hedgesWon: 0,
    budgetRefusals: 0,
    failures: 0,
    coalescedCalls: 0,
    coalescedBatches: 0,
    batchFallbacks: 0,
    heldCalls: 0,
    pipelinedAttempts: 0,
  };
}
