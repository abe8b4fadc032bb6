import { expect } from 'chai';
import { TokenBudget } from '../../../src/transport/policy/budget.js';
import {
  CancelledError,
  NotFoundError,
  UnavailableError,
} from '../../../src/transport/call/errors.js';
import { AttemptLog } from '../../../src/transport/call/attempts.js';
import { CallCancellation } from '../../../src/transport/call/cancellation.js';
import { budgetLayer } from '../../../src/transport/middleware/budget.js';
import { READ, failing, failure, messages, run, scriptedNext, describeForms } from './support.js';

describeForms('budget layer', () => {
  const fresh = () => new TokenBudget({ maxTokens: 10, tokenRatio: 0.1 });

  it('a success earns tokenRatio, a transient failure costs a token, a definite one nothing', async () => {
    const budget = fresh();
    const layer = budgetLayer(budget);
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new UnavailableError('down'))),
      ),
    );
    expect(budget.tokens).to.equal(9);
    await run(
      layer,
      scriptedNext(() => messages(1)),
    );
    expect(budget.tokens).to.equal(9.1);
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new NotFoundError('gone'))),
      ),
    );
    expect(budget.tokens).to.equal(9.1);
  });

  it('does not count an attempt this client cancelled, nor one to a restarting server', async () => {
    const budget = fresh();
    const layer = budgetLayer(budget);
    const cancellation = new CallCancellation();
    cancellation.abort(new CancelledError('getCell: the call was aborted'));
    const cancelled = { ...READ, cancellation };
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new UnavailableError('x'))),
        cancelled,
      ),
    );
    const attempt = new AttemptLog().start('initial');
    attempt.unreachable = true;
    const restarting = { ...READ, attempt };
    await failure(
      run(
        layer,
        scriptedNext(() => failing(new UnavailableError('x'))),
        restarting,
      ),
    );
    expect(budget.tokens).to.equal(10);
  });
});
