import { expect } from 'chai';
import { UnavailableError } from '../../../src/transport/call/errors.js';
import { CallCancellation } from '../../../src/transport/call/cancellation.js';
import { countingLayer } from '../../../src/transport/middleware/counting.js';
import { newCounters } from '../../../src/transport/call/stats.js';
import { failing, failure, messages, run, scriptedNext, describeForms } from './support.js';

describeForms('counting layer', () => {
  it('counts each call once and each failed call once', async () => {
    const counters = newCounters();
    const layer = countingLayer(counters);
    await run(
      layer,
      scriptedNext(() => messages(1)),
    );
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new UnavailableError('down'))),
      ),
    );
    expect(counters).to.include({ calls: 2, failures: 1 });
  });

  it('counts an aborted call as failed the moment it aborts', async () => {
    const counters = newCounters();
    const cancellation = new CallCancellation();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const outcome = run(
      countingLayer(counters),
      scriptedNext(async function* () {
        await held;
        yield* failing(new Error('aborted'));
      }),
      { idempotent: true, hedgeable: true, cancellation },
    );
    await new Promise((resolve) => setImmediate(resolve));
    cancellation.abort(new Error('aborted'));
    expect(counters.failures).to.equal(1);
    release();
    await failure(outcome);
    expect(counters.failures).to.equal(1);
  });
});
