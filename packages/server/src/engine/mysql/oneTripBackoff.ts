// How often a partition tries a group in one round trip after such tries found a key taken (a
// remembered version stale, a create's values held). Where other writers (another server, the
// gem) keep writing the same cells, every try would cost a round trip for nothing; so after `f`
// failed tries in a row the
// next 2^f − 1 groups (at most 15) go the usual way, which reads their cells and remembers
// them afresh, and a try that commits brings the tries back to every group.

/** Failed tries in a row beyond which the pause stops growing: 2^4 − 1 groups. */
const MOST_FAILURES_COUNTED = 4;

export class OneTripBackoff {
  private failures = 0;
  private skipped = 0;

  /** Whether the next group may be tried in one round trip; a group not tried counts down the pause. */
  shouldTry(): boolean {
    if (this.skipped === 0) return true;
    this.skipped -= 1;
    return false;
  }

  /** A try committed. */
  succeeded(): void {
    this.failures = 0;
  }

  /** A try found a key taken. */
  failed(): void {
    this.failures = Math.min(this.failures + 1, MOST_FAILURES_COUNTED);
    this.skipped = 2 ** this.failures - 1;
  }
}
