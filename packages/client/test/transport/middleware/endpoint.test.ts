import { expect } from 'chai';
import { ManualClock } from '../../../src/transport/call/clock.js';
import { EndpointSelector } from '../../../src/transport/policy/endpoints.js';
import { NotFoundError, UnavailableError } from '../../../src/transport/call/errors.js';
import { AttemptLog } from '../../../src/transport/call/attempts.js';
import { endpointLayer } from '../../../src/transport/middleware/endpoint.js';
import { newCounters } from '../../../src/transport/call/stats.js';
import { READ, failing, failure, messages, run, scriptedNext, describeForms } from './support.js';

/** Endpoints over a selector, with the servers that "answered before" named by the test. */
function endpointsOf(addresses: string[], restarting: Set<string>) {
  const selector = new EndpointSelector(addresses, { clock: new ManualClock(), downMs: 1000 });
  return Object.assign(selector, { reconnecting: (address: string) => restarting.has(address) });
}

describeForms('endpoint layer', () => {
  it('sends each attempt of a call to an endpoint it has not used yet', async () => {
    const counters = newCounters();
    const layer = endpointLayer({ endpoints: endpointsOf(['a:1', 'b:1'], new Set()), counters });
    const attempts = new AttemptLog();
    const next = scriptedNext(() => messages(1));
    for (const kind of ['initial', 'retry'] as const) {
      await run(layer, next, { ...READ, attempts, attempt: attempts.start(kind) });
    }
    const addresses = next.seen.map((options) => options.endpoint?.address);
    expect(new Set(addresses).size).to.equal(2);
    expect(counters.attempts).to.equal(2);
  });

  it('marks an endpoint that answered UNAVAILABLE down, and one that answered up', async () => {
    const endpoints = endpointsOf(['a:1'], new Set());
    const layer = endpointLayer({ endpoints, counters: newCounters() });
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new UnavailableError('down'))),
      ),
    );
    expect(endpoints.isDown('a:1')).to.equal(true);
    await run(
      layer,
      scriptedNext(() => messages(1)),
    );
    expect(endpoints.isDown('a:1')).to.equal(false);
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new NotFoundError('gone'))),
      ),
    );
    expect(endpoints.isDown('a:1'), 'a definite answer is an answer').to.equal(false);
  });

  it('waits for a connection when every endpoint is down and the server answered before', async () => {
    const restarting = new Set(['a:1']);
    const endpoints = endpointsOf(['a:1'], restarting);
    const layer = endpointLayer({ endpoints, counters: newCounters() });
    const attempt = new AttemptLog().start('initial');
    const lost = scriptedNext(() => failing(new UnavailableError('connection dropped')));
    await failure(run(layer, lost, { ...READ, attempt }));
    expect(lost.seen[0]?.waitForReady).to.equal(false);
    expect(attempt.unreachable, 'the failure spends no budget').to.equal(true);
    const again = scriptedNext(() => messages(1));
    await run(layer, again);
    expect(again.seen[0]?.waitForReady).to.equal(true);

    const failFast = endpointLayer({
      endpoints,
      counters: newCounters(),
      waitForConnection: false,
    });
    endpoints.markDown('a:1');
    const unwaited = scriptedNext(() => messages(1));
    await run(failFast, unwaited);
    expect(unwaited.seen[0]?.waitForReady).to.equal(false);
  });

  it('never waits for an endpoint that never answered (a wrong address)', async () => {
    const endpoints = endpointsOf(['a:1'], new Set());
    endpoints.markDown('a:1');
    const layer = endpointLayer({ endpoints, counters: newCounters() });
    const next = scriptedNext(() => messages(1));
    await run(layer, next);
    expect(next.seen[0]?.waitForReady).to.equal(false);
  });
});
