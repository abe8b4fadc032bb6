import { expect } from 'chai';
import { UnauthenticatedError } from '../../../src/transport/call/errors.js';
import { tokenLayer } from '../../../src/transport/middleware/credentials.js';
import { failure, messages, run, scriptedNext, describeForms } from './support.js';

describeForms('token layer', () => {
  it('adds authorization: Bearer <token> to the metadata of the attempt', async () => {
    const next = scriptedNext(() => messages(1));
    await run(tokenLayer('s3cret'), next, {
      idempotent: true,
      hedgeable: true,
      metadata: { 'x-trace': 't1' },
    });
    expect(next.seen[0]?.metadata).to.deep.equal({
      'x-trace': 't1',
      authorization: 'Bearer s3cret',
    });
  });

  it('asks a token function on every attempt, so a rotated token is used next', async () => {
    let current = 'first';
    const layer = tokenLayer(async () => current);
    const next = scriptedNext(() => messages(1));
    await run(layer, next);
    current = 'second';
    await run(layer, next);
    expect(next.seen.map((options) => options.metadata?.authorization)).to.deep.equal([
      'Bearer first',
      'Bearer second',
    ]);
  });

  it('a token function that fails or gives no token is UNAUTHENTICATED, the token unshown', async () => {
    const thrown = await failure(
      run(
        tokenLayer(() => {
          throw new Error('vault unreachable');
        }),
        scriptedNext(() => messages(1)),
      ),
    );
    expect(thrown).to.be.instanceOf(UnauthenticatedError);
    expect((thrown as UnauthenticatedError).retryable).to.equal(false);
    const spaced = await failure(
      run(
        tokenLayer(() => 'has a space'),
        scriptedNext(() => messages(1)),
      ),
    );
    expect(spaced).to.be.instanceOf(UnauthenticatedError);
    expect(spaced.message).to.not.include('has a space');
    expect(() => tokenLayer('')).to.throw(TypeError);
  });
});
