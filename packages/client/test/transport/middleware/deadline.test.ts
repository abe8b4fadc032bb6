import { expect } from 'chai';
import type { Cancellation } from '../../../src/transport/call/cancellation.js';
import { ManualClock } from '../../../src/transport/call/clock.js';
import { CancelledError, DeadlineExceededError } from '../../../src/transport/call/errors.js';
import { deadlineLayer } from '../../../src/transport/middleware/deadline.js';
import { failing, failure, messages, run, scriptedNext, describeForms } from './support.js';

/** An answer that never comes unless its attempt is cancelled (then it fails, as grpc-js would). */
function hanging(cancellation: Cancellation | undefined): AsyncGenerator<unknown> {
  return (async function* () {
    await new Promise<void>((resolve) => cancellation?.onAbort(resolve));
    yield* failing(new Error('cancelled'));
  })();
}

describeForms('deadline layer', () => {
  it("gives the layers below the deadline and the call's cancellation, not the caller's signal", async () => {
    const clock = new ManualClock(1000);
    const next = scriptedNext(() => messages('ok'));
    await run(deadlineLayer({ clock, defaultDeadlineMs: 300 }), next, {
      idempotent: true,
      hedgeable: true,
      signal: new AbortController().signal,
    });
    expect(next.seen[0]?.deadlineAt).to.equal(1300);
    expect(next.seen[0]?.cancellation?.aborted).to.equal(false);
    expect(next.seen[0]?.signal).to.equal(undefined);
    expect(clock.pendingTimers).to.equal(0);
  });

  it('fails with DeadlineExceededError when the deadline passes, aborting the call', async () => {
    const clock = new ManualClock();
    const next = scriptedNext((_, options) => hanging(options.cancellation));
    const outcome = failure(
      run(deadlineLayer({ clock, defaultDeadlineMs: 5000 }), next, {
        idempotent: true,
        hedgeable: true,
        deadlineMs: 200,
      }),
    );
    await clock.advance(200);
    const error = await outcome;
    expect(error).to.be.instanceOf(DeadlineExceededError);
    expect(error.message).to.equal('getCell: deadline of 200 ms exceeded after 0 attempt(s)');
    expect(next.seen[0]?.cancellation?.aborted).to.equal(true);
    expect(clock.pendingTimers).to.equal(0);
  });

  it("fails with CancelledError when the caller's signal aborts", async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const outcome = failure(
      run(
        deadlineLayer({ clock, defaultDeadlineMs: 5000 }),
        scriptedNext((_, options) => hanging(options.cancellation)),
        { idempotent: true, hedgeable: true, signal: controller.signal },
      ),
    );
    await clock.advance(10);
    controller.abort(new Error('caller left'));
    const error = await outcome;
    expect(error).to.be.instanceOf(CancelledError);
    expect((error.cause as Error).message).to.equal('caller left');
  });

  it('answers a DEADLINE_EXCEEDED from below (grpc-js timing the same deadline) with its own error', async () => {
    const clock = new ManualClock();
    const raw = new DeadlineExceededError('Deadline exceeded after 0.199s,remote_addr=127.0.0.1:1');
    const next = scriptedNext(() => failing(raw));
    let settled = false;
    const outcome = failure(
      run(deadlineLayer({ clock, defaultDeadlineMs: 5000 }), next, {
        idempotent: true,
        hedgeable: true,
        deadlineMs: 200,
      }),
    ).finally(() => (settled = true));
    // grpc-js's clock ran ahead of this one: the answer waits for this one's deadline.
    await clock.advance(199);
    expect(settled).to.equal(false);
    await clock.advance(1);
    const error = await outcome;
    expect(error).to.be.instanceOf(DeadlineExceededError);
    expect(error.message).to.equal('getCell: deadline of 200 ms exceeded after 0 attempt(s)');
    expect(clock.pendingTimers).to.equal(0);
  });

  it('refuses a deadline that is no deadline, and sets no timer for Infinity', async () => {
    const clock = new ManualClock();
    const layer = deadlineLayer({ clock, defaultDeadlineMs: 5000 });
    const next = scriptedNext(() => messages(1));
    const zero = { idempotent: true, hedgeable: false, deadlineMs: 0 };
    expect(await failure(run(layer, next, zero))).to.be.instanceOf(DeadlineExceededError);
    expect(next.seen).to.have.length(0);
    await run(layer, next, { idempotent: true, hedgeable: false, deadlineMs: Infinity });
    expect(next.seen[0]?.deadlineAt).to.equal(Infinity);
  });
});
