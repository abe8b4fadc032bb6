// Counters of what the transport did, for tests, benchmarks and metrics.

/** A snapshot of a transport's counters (since it was created). */
export interface TransportStats {
  /** Logical calls started (unary and streaming). */
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
  };
}
