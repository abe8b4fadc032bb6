// What each method's calls answer, learnt from the calls themselves, for admission control to
// reserve before a call runs. A method that has not answered yet has no measure: its first
// unary call runs as the method's pilot and the others wait for its answer, so that a cold burst
// is admitted exactly as a warm one would be, without refusing small calls for want of a
// measure (an even share did, or was too small to bound large answers) and without knowing
// what each method's request implies about its answer.
import { status } from '@grpc/grpc-js';
import type { CallCancellation } from './cancellation.js';
import { StatusError } from './statusError.js';

/** Weight of the newest call in a method's running average of its largest message. */
const AVERAGE_WEIGHT = 0.2;
/** What a failed call answered: a status, its message and trailers. */
const FAILED_ANSWER_BYTES = 1024;

/** What a call learnt about its method's answers: its largest message, if it answered. */
export type Sample = number | undefined;

export class ResponseSizes {
  private readonly typical = new Map<string, number>();
  /** A method's first call in progress, and how its waiters learn that it ended. */
  private readonly pilots = new Map<string, { ended: Promise<void>; end: () => void }>();

  /** The method's typical largest message in bytes, if it has answered before. */
  typicalOf(method: string): number | undefined {
    return this.typical.get(method);
  }

  /**
   * The method's typical largest message, waiting while its first call is in progress; or
   * `'pilot'` when this call is to be the first (it must `record` when it ends).
   */
  async measureOrPilot(method: string, cancellation: CallCancellation): Promise<number | 'pilot'> {
    for (;;) {
      const typical = this.typical.get(method);
      if (typical !== undefined) return typical;
      const pilot = this.pilots.get(method);
      if (pilot === undefined) {
        let end = () => {};
        const ended = new Promise<void>((resolve) => (end = resolve));
        this.pilots.set(method, { ended, end });
        return 'pilot';
      }
      await endOrAbort(pilot.ended, cancellation, method);
    }
  }

  /** A call of the method ended; a pilot's end lets the calls waiting for it go on. */
  record(method: string, sample: Sample, wasPilot: boolean): void {
    // A pilot that failed answered a status: that is the method's measure until one answers,
    // else each waiter would pilot in turn and a cold burst of failing calls go one at a time.
    // (Only then: refusals under load must not make later calls reserve less.)
    if (sample === undefined && wasPilot && !this.typical.has(method)) {
      sample = FAILED_ANSWER_BYTES;
    }
    if (sample !== undefined) {
      const typical = this.typical.get(method);
      this.typical.set(
        method,
        typical === undefined ? sample : typical + AVERAGE_WEIGHT * (sample - typical),
      );
    }
    if (!wasPilot) return;
    this.pilots.get(method)?.end();
    this.pilots.delete(method);
  }
}

function endOrAbort(
  ended: Promise<void>,
  cancellation: CallCancellation,
  method: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () =>
      reject(
        new StatusError(
          status.CANCELLED,
          `the call ended while waiting for the first ${method} since start to answer`,
        ),
      );
    if (cancellation.aborted) return onAbort();
    const signal = cancellation.signal;
    signal.addEventListener('abort', onAbort, { once: true });
    void ended.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
