// One token budget that caps retries and hedges together, after gRPC's retry throttling
// (gRFC A6, "Throttling Retry Attempts and Hedged RPCs").

/** Settings of a {@link TokenBudget}. */
export interface BudgetOptions {
  /**
   * The bucket size; the budget starts full. Default 100: when a server dies, every attempt in
   * flight on it fails at once and each costs a token, so the bucket must hold more than the
   * calls a client keeps in flight (retries stop at half of it).
   */
  maxTokens: number;
  /** Tokens earned back per successful attempt. Default 0.1. */
  tokenRatio: number;
}

/** Defaults, as in gRFC A6's examples: 10 tokens, 0.1 earned per success. */
export const DEFAULT_BUDGET: Readonly<BudgetOptions> = { maxTokens: 100, tokenRatio: 0.1 };

/**
 * The retry/hedge token budget of one client (shared by all its methods).
 *
 * - A failed attempt (one that failed with a transient status) costs 1 token.
 * - A successful attempt earns `tokenRatio` tokens (up to `maxTokens`).
 * - A retry, or a hedge, may only be sent while `tokens > maxTokens / 2`.
 * - Sending a hedge costs 1 token up front, so hedges are paid for like failures: in steady
 *   state at most about `tokenRatio` hedges per successful call, and none once the cluster
 *   starts failing.
 *
 * Non-transient answers (NOT_FOUND, ABORTED, INVALID_ARGUMENT, ...) neither cost nor earn: the
 * server answered, so they say nothing about overload (as in gRPC's implementation, which only
 * counts failures with a retryable status). Tokens are kept in thousandths, like gRPC does, so
 * the arithmetic is exact.
 */
export class TokenBudget {
  readonly maxTokens: number;
  readonly tokenRatio: number;
  readonly #maxMilli: number;
  readonly #ratioMilli: number;
  #milli: number;

  constructor(options: Partial<BudgetOptions> = {}) {
    const maxTokens = options.maxTokens ?? DEFAULT_BUDGET.maxTokens;
    const tokenRatio = options.tokenRatio ?? DEFAULT_BUDGET.tokenRatio;
    if (!(maxTokens > 0) || !Number.isFinite(maxTokens)) {
      throw new RangeError(`budget maxTokens must be a finite number > 0, got ${maxTokens}`);
    }
    if (!(tokenRatio > 0) || !Number.isFinite(tokenRatio)) {
      throw new RangeError(`budget tokenRatio must be a finite number > 0, got ${tokenRatio}`);
    }
    this.maxTokens = maxTokens;
    this.tokenRatio = tokenRatio;
    this.#maxMilli = Math.round(maxTokens * 1000);
    this.#ratioMilli = Math.max(1, Math.round(tokenRatio * 1000));
    this.#milli = this.#maxMilli;
  }

  /** The tokens left. */
  get tokens(): number {
    return this.#milli / 1000;
  }

  /** True while retries and hedges are allowed: `tokens > maxTokens / 2`. */
  canRetry(): boolean {
    return this.#milli * 2 > this.#maxMilli;
  }

  /** Records a successful attempt: earns `tokenRatio`. */
  recordSuccess(): void {
    this.#milli = Math.min(this.#maxMilli, this.#milli + this.#ratioMilli);
  }

  /** Records an attempt that failed with a transient status: costs 1 token. */
  recordFailure(): void {
    this.#milli = Math.max(0, this.#milli - 1000);
  }

  /**
   * Asks to send a hedge: when allowed (`canRetry()`), spends 1 token and returns true;
   * otherwise spends nothing and returns false.
   */
  trySpendHedge(): boolean {
    if (!this.canRetry()) return false;
    this.#milli = Math.max(0, this.#milli - 1000);
    return true;
  }
}
