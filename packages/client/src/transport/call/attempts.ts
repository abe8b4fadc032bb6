// The attempts of one logical call: what the retry, hedge and endpoint layers share about it
// (which endpoints it used, which it is waiting on, how many hedges it sent, how the latest one
// failed). The deadline layer makes one per call and passes it down in the call's options.

/** Why an attempt was sent. */
export type AttemptKind = 'initial' | 'retry' | 'hedge';

/** One attempt of a call, as the layers below the retry layer see it. */
export interface AttemptInfo {
  readonly kind: AttemptKind;
  /** 0 for the call's first attempt, then 1, 2, ... over retries and hedges. */
  readonly index: number;
  /** The endpoint the endpoint layer picked for it. */
  address: string | undefined;
  /**
   * Set by the endpoint layer when the attempt failed because its server, which had answered
   * before, has no connection now (restarting): such a failure spends no retry budget.
   */
  unreachable: boolean;
}

/** Every attempt of one call. */
export class AttemptLog {
  /** The endpoints the call has sent an attempt to. */
  readonly tried = new Set<string>();
  /** Hedges sent so far (`maxHedges` counts per call, across retries). */
  hedges = 0;
  /** The latest attempt's failure: the cause a deadline error gives. */
  lastError: unknown;
  readonly #waitingOn = new Map<string, number>();
  #started = 0;

  /** A new attempt of `kind`, numbered in the order attempts start. */
  start(kind: AttemptKind): AttemptInfo {
    return { kind, index: this.#started++, address: undefined, unreachable: false };
  }

  /** Attempts started so far. */
  get started(): number {
    return this.#started;
  }

  /** An attempt to `address` is out. */
  enter(address: string): void {
    this.tried.add(address);
    this.#waitingOn.set(address, (this.#waitingOn.get(address) ?? 0) + 1);
  }

  /** An attempt to `address` ended. */
  leave(address: string): void {
    const count = (this.#waitingOn.get(address) ?? 1) - 1;
    if (count > 0) this.#waitingOn.set(address, count);
    else this.#waitingOn.delete(address);
  }

  /** The endpoints the call is waiting on now. */
  waitingOn(): Set<string> {
    return new Set(this.#waitingOn.keys());
  }
}
